//! How a [`Budget`] decides: crediting calls, withdrawing for a copy, the floor, slots.

use core::time::Duration;

use super::{nanos, Budget, Kind, Refused, SAVINGS_WINDOW, UNCAPPED, UNIT};
use crate::sync::Ordering::Relaxed;

impl Budget {
    /// Whether calls earn tokens: a token bucket.
    pub(crate) fn counts_calls(&self) -> bool {
        self.inner.config.kind == Kind::Bucket
    }

    /// Whether winning and failing copies change the tokens: a throttling budget.
    pub(crate) fn counts_outcomes(&self) -> bool {
        self.inner.config.kind == Kind::Throttling
    }

    /// Credits a token bucket with `ended` calls that ended at `now` since the policy's
    /// last credit `gap` before, `earning` of which asked for no extra copy: they count
    /// toward the last second's traffic (in proportion, after a gap of over a second), and
    /// the earners deposit, up to what the bucket may save.
    pub(crate) fn credit(&self, ended: u64, earning: u64, now: Duration, gap: Duration) {
        let inner = &*self.inner;
        if inner.config.kind != Kind::Bucket {
            return;
        }
        let now = nanos(now);
        if inner.config.follows_traffic && ended > 0 {
            let gap = nanos(gap);
            let recent = if gap > SAVINGS_WINDOW {
                (u128::from(ended) * u128::from(SAVINGS_WINDOW) / u128::from(gap)) as u64
            } else {
                ended
            };
            inner.recent.add(recent, now);
        }
        self.deposit(earning.saturating_mul(self.ratio_units()), now);
    }

    /// The most units the balance may reach at `now` (nanoseconds).
    fn cap(&self, now: u64) -> u64 {
        let config = &self.inner.config;
        if !config.follows_traffic {
            return config.max_units;
        }
        let earned = self
            .inner
            .recent
            .sum(now)
            .saturating_mul(self.ratio_units());
        earned.max(config.max_units)
    }

    fn deposit(&self, units: u64, now: u64) {
        if units == 0 {
            return;
        }
        let max = self.cap(now);
        let _ = self
            .inner
            .balance
            .fetch_update(Relaxed, Relaxed, |balance| {
                (balance < max).then(|| balance.saturating_add(units).min(max))
            });
    }

    /// A copy won: a throttling budget earns `token_ratio` back.
    pub(crate) fn copy_won(&self) {
        // A throttling budget's cap is fixed: it reads no clock.
        self.deposit(self.ratio_units(), 0);
    }

    /// A copy failed: a throttling budget spends a token (never below zero).
    pub(crate) fn copy_failed(&self) {
        let _ = self
            .inner
            .balance
            .fetch_update(Relaxed, Relaxed, |balance| {
                (balance > 0).then(|| balance.saturating_sub(UNIT))
            });
    }

    /// Takes a slot of `max_outstanding` (if capped) and what the kind asks for a copy
    /// beyond the first (a bucket's token; throttling's tokens above half), or else a
    /// place under the floor at `now()`; takes nothing on refusal. `Ok(true)` when the
    /// copy holds a slot it must [`release`](Budget::release).
    pub(crate) fn withdraw(&self, mut now: impl FnMut() -> Duration) -> Result<bool, Refused> {
        let inner = &*self.inner;
        let config = &inner.config;
        let capped = config.max_outstanding != UNCAPPED;
        if capped {
            inner
                .outstanding
                .fetch_update(Relaxed, Relaxed, |held| {
                    (held < config.max_outstanding).then_some(held + 1)
                })
                .map_err(|_| Refused)?;
        }
        let admitted = match config.kind {
            Kind::Bucket => {
                // Savings above what the last second's traffic may save have expired.
                let cap = self.cap(nanos(now()));
                inner
                    .balance
                    .fetch_update(Relaxed, Relaxed, |balance| {
                        balance.min(cap).checked_sub(UNIT)
                    })
                    .is_ok()
            }
            Kind::Throttling => inner.balance.load(Relaxed) > config.max_units / 2,
        };
        if admitted || self.floor_admits(now) {
            return Ok(capped);
        }
        if capped {
            self.release(1);
        }
        Err(Refused)
    }

    /// Whether [`min_per_second`](Budget::min_per_second) lets one more copy through at
    /// `now()`: each copy moves the floor's schedule on by `1 s / copies`, and a copy is
    /// let through while that schedule is at most one second ahead of now.
    #[cold]
    fn floor_admits(&self, mut now: impl FnMut() -> Duration) -> bool {
        let per_second = u64::from(self.inner.config.min_per_second);
        if per_second == 0 {
            return false;
        }
        const SECOND: u64 = 1_000_000_000;
        let interval = SECOND / per_second;
        let now = nanos(now());
        self.inner
            .floor_at
            .fetch_update(Relaxed, Relaxed, |floor_at| {
                let next = floor_at.max(now).saturating_add(interval);
                (next - now <= SECOND).then_some(next)
            })
            .is_ok()
    }

    /// Gives back `copies` slots of `max_outstanding`.
    pub(crate) fn release(&self, copies: usize) {
        self.inner.outstanding.fetch_sub(copies as u64, Relaxed);
    }
}
