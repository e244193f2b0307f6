//! The budget's arithmetic as documented: a token bucket whose savings follow the traffic
//! (or are capped by an explicit burst) or gRPC A6 throttling, slots of `max_outstanding`,
//! and the `min_per_second` floor.

use std::time::Duration;

use super::super::script::{BudgetKind, BudgetScript};
use super::nanos;

/// Token units per token: the budget keeps its balance in millionths.
const UNIT: u64 = 1_000_000;
const SECOND_NANOS: u64 = 1_000_000_000;
/// The tokens a bucket starts with, and the least its savings cap falls to.
const LEAST_SAVINGS: u64 = 10 * UNIT;
/// The savings window is counted in eighths of a second, by the clock at the ask.
const WINDOW_SLOT_NANOS: u64 = SECOND_NANOS / 8;

fn units(tokens: f64) -> u64 {
    (tokens * UNIT as f64 + 0.5) as u64
}

/// The eighth of a second `at` falls in.
fn window_slot(at: Duration) -> u64 {
    nanos(at) / WINDOW_SLOT_NANOS
}

/// The budget as documented, with what its one policy has credited it.
///
/// A bucket: a call that ended without asking for a copy beyond its first earns `ratio`;
/// the policy credits at each ask the calls ended since its last ask, the earners among
/// them being the calls ended less the calls that had asked before this ask (counted at a
/// call's first ask), never going back. Without an explicit burst the balance may reach
/// `ratio` × the calls credited in the last second (the eight eighths up to the ask's,
/// calls credited more than a second after the last ask counting in proportion), and
/// never less than 10 tokens; each withdrawal first trims the balance to that cap.
#[derive(Debug)]
pub(crate) struct BudgetModel {
    throttling: bool,
    /// Units an earning call deposits (bucket) or a winning copy earns (throttling).
    ratio: u64,
    /// A fixed cap (throttling, an explicit burst), or the least savings (a bucket without
    /// one); the balance starts at it.
    max: u64,
    /// A bucket without an explicit burst: its cap follows the traffic.
    follows_traffic: bool,
    pub(crate) balance: u64,
    max_outstanding: Option<u64>,
    pub(crate) outstanding: u64,
    /// `min_per_second`: copies let through per second, and when its schedule is next
    /// fully rested (nanoseconds).
    per_second: u64,
    floor_at: u64,
    /// Ended calls credited so far.
    credited_calls: u64,
    /// Earners credited so far.
    credited_earners: u64,
    /// When the policy last credited (its last ask).
    credited_at: Duration,
    /// Calls credited toward the savings cap: (eighth of a second credited in, calls).
    traffic: Vec<(u64, u64)>,
}

impl BudgetModel {
    pub(crate) fn new(script: &BudgetScript) -> Self {
        let (throttling, ratio, max, follows_traffic) = match script.kind {
            BudgetKind::Bucket { ratio, burst } => {
                let ratio = if ratio.is_nan() { 0.0 } else { ratio.max(0.0) };
                match burst {
                    None => (false, units(ratio), LEAST_SAVINGS, true),
                    Some(burst) => {
                        let burst = if burst.is_nan() { 10.0 } else { burst.max(1.0) };
                        (false, units(ratio), units(burst), false)
                    }
                }
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
                (true, ratio, max, false)
            }
        };
        BudgetModel {
            throttling,
            ratio,
            max,
            follows_traffic,
            balance: max,
            max_outstanding: script.max_outstanding.map(|copies| (copies as u64).max(1)),
            outstanding: 0,
            per_second: script.min_per_second.map_or(0, u64::from),
            floor_at: 0,
            credited_calls: 0,
            credited_earners: 0,
            credited_at: Duration::ZERO,
            traffic: Vec::new(),
        }
    }

    pub(crate) fn capped(&self) -> bool {
        self.max_outstanding.is_some()
    }

    /// The most the balance may hold at `now`.
    fn savings_cap(&self, now: Duration) -> u64 {
        if !self.follows_traffic {
            return self.max;
        }
        let slot = window_slot(now);
        let last_second: u64 = self
            .traffic
            .iter()
            .filter(|(credited_in, _)| slot - credited_in < 8)
            .map(|(_, calls)| calls)
            .sum();
        last_second.saturating_mul(self.ratio).max(self.max)
    }

    /// Adds `amount` up to `cap`; a balance at or above the cap is left as it is.
    fn deposit(&mut self, amount: u64, cap: u64) {
        if amount > 0 && self.balance < cap {
            self.balance = self.balance.saturating_add(amount).min(cap);
        }
    }

    /// A bucket is credited at `now` with the calls that ended since the policy's last
    /// credit, `earners` being the calls ended less those that had asked before.
    fn credit(&mut self, calls_ended: u64, earners: u64, now: Duration) {
        let ended = calls_ended.saturating_sub(self.credited_calls);
        self.credited_calls = self.credited_calls.max(calls_ended);
        let earning = earners.saturating_sub(self.credited_earners);
        self.credited_earners = self.credited_earners.max(earners);
        let gap = now.saturating_sub(self.credited_at);
        self.credited_at = now;
        if self.follows_traffic && ended > 0 {
            // After a quiet spell of more than a second, only in proportion.
            let counted = match nanos(gap) {
                gap if gap > SECOND_NANOS => {
                    (u128::from(ended) * u128::from(SECOND_NANOS) / u128::from(gap)) as u64
                }
                _ => ended,
            };
            let slot = window_slot(now);
            self.traffic
                .retain(|(credited_in, _)| slot - credited_in < 8);
            self.traffic.push((slot, counted));
        }
        let cap = self.savings_cap(now);
        self.deposit(earning.saturating_mul(self.ratio), cap);
    }

    /// Asks for one extra copy at `now`, `calls_ended` and `earners` being what the
    /// policy credits first: `Some(holds_slot)` if let through.
    pub(super) fn admit(&mut self, calls_ended: u64, earners: u64, now: Duration) -> Option<bool> {
        if !self.throttling {
            self.credit(calls_ended, earners, now);
        }
        if let Some(most) = self.max_outstanding {
            if self.outstanding >= most {
                return None;
            }
            self.outstanding += 1;
        }
        let admitted = if self.throttling {
            self.balance > self.max / 2
        } else {
            // Savings above the cap at this instant have expired.
            let trimmed = self.balance.min(self.savings_cap(now));
            match trimmed.checked_sub(UNIT) {
                Some(left) => {
                    self.balance = left;
                    true
                }
                None => false,
            }
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
            self.deposit(self.ratio, self.max);
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
