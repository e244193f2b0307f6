//! The budget's arithmetic as documented: a token bucket or gRPC A6 throttling, slots of
//! `max_outstanding`, and the `min_per_second` floor.

use std::time::Duration;

use super::super::script::{BudgetKind, BudgetScript};
use super::nanos;

/// Token units per token: the budget keeps its balance in millionths.
const UNIT: u64 = 1_000_000;
const SECOND_NANOS: u64 = 1_000_000_000;

fn units(tokens: f64) -> u64 {
    (tokens * UNIT as f64 + 0.5) as u64
}

/// The budget as documented: a token bucket or gRPC A6 throttling, slots, and a floor.
#[derive(Debug)]
pub(crate) struct BudgetModel {
    throttling: bool,
    /// Units a call deposits (bucket) or a winning copy earns (throttling).
    ratio: u64,
    max: u64,
    pub(crate) balance: u64,
    cap: Option<u64>,
    pub(crate) outstanding: u64,
    /// `min_per_second`: copies let through per second, and when its schedule is next
    /// fully rested (nanoseconds).
    per_second: u64,
    floor_at: u64,
    /// Calls credited to the bucket so far.
    credited: u64,
}

impl BudgetModel {
    pub(crate) fn new(script: &BudgetScript) -> Self {
        let (throttling, ratio, max) = match script.kind {
            BudgetKind::Bucket { ratio, burst } => {
                let ratio = if ratio.is_nan() { 0.0 } else { ratio.max(0.0) };
                let burst = match burst {
                    Some(burst) if !burst.is_nan() => burst.max(1.0),
                    _ => 10.0,
                };
                (false, units(ratio), units(burst))
            }
            BudgetKind::Throttling { max_tokens, ratio } => {
                let (lowest, highest) = (UNIT / 1000, 1000 * UNIT);
                let max = if max_tokens.is_nan() {
                    lowest
                } else {
                    units(max_tokens).clamp(lowest, highest)
                };
                let ratio = if ratio.is_nan() {
                    lowest
                } else {
                    units(ratio).max(lowest)
                };
                (true, ratio, max)
            }
        };
        BudgetModel {
            throttling,
            ratio,
            max,
            balance: max,
            cap: script.max_outstanding.map(|copies| (copies as u64).max(1)),
            outstanding: 0,
            per_second: script.min_per_second.map_or(0, u64::from),
            floor_at: 0,
            credited: 0,
        }
    }

    pub(crate) fn capped(&self) -> bool {
        self.cap.is_some()
    }

    fn deposit(&mut self, amount: u64) {
        if amount > 0 && self.balance < self.max {
            self.balance = self.balance.saturating_add(amount).min(self.max);
        }
    }

    /// A bucket is credited with the calls that ended since its last credit.
    fn credit(&mut self, calls_ended: u64) {
        let previous = self.credited;
        self.credited = previous.max(calls_ended);
        if !self.throttling {
            self.deposit(
                calls_ended
                    .saturating_sub(previous)
                    .saturating_mul(self.ratio),
            );
        }
    }

    /// Asks for one extra copy at `now`: `Some(holds_slot)` if let through.
    pub(super) fn admit(&mut self, calls_ended: u64, now: Duration) -> Option<bool> {
        self.credit(calls_ended);
        if let Some(cap) = self.cap {
            if self.outstanding >= cap {
                return None;
            }
            self.outstanding += 1;
        }
        let admitted = if self.throttling {
            self.balance > self.max / 2
        } else if self.balance >= UNIT {
            self.balance -= UNIT;
            true
        } else {
            false
        };
        if admitted || self.floor_admits(now) {
            return Some(self.capped());
        }
        if self.capped() {
            self.outstanding -= 1;
        }
        None
    }

    /// `min_per_second`: a generic cell rate algorithm with a burst of one second.
    fn floor_admits(&mut self, now: Duration) -> bool {
        if self.per_second == 0 {
            return false;
        }
        let interval = SECOND_NANOS / self.per_second;
        let now = nanos(now);
        let next = self.floor_at.max(now).saturating_add(interval);
        if next - now <= SECOND_NANOS {
            self.floor_at = next;
            true
        } else {
            false
        }
    }

    pub(super) fn release(&mut self) {
        assert!(self.outstanding > 0, "model: a slot released twice");
        self.outstanding -= 1;
    }

    pub(super) fn copy_won(&mut self) {
        if self.throttling {
            self.deposit(self.ratio);
        }
    }

    pub(super) fn copy_failed(&mut self) {
        if self.throttling {
            self.balance = self.balance.saturating_sub(UNIT);
        }
    }

    pub(crate) fn tokens(&self) -> f64 {
        self.balance as f64 / UNIT as f64
    }
}
