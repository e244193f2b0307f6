//! What `tests/loom.rs` needs of the structures that are not public, and nothing more:
//! compiled only under `cfg(loom)`, never part of the crate's API.

use core::time::Duration;

use crate::adaptive::{AdaptiveConfig, Choice, LatencyTracker, TrackerSeed};
use crate::keyed::{key_of, Keys};
use crate::stats::{Cells, Counter, Counters};
use crate::sync::Arc;
use crate::Budget;

/// A policy's keyed table without trackers: its places and their keys.
#[derive(Debug)]
pub struct KeyTable(Keys);

impl KeyTable {
    /// A table of `places` places, whose keys go idle after `idle`.
    pub fn new(places: usize, idle: Duration) -> Self {
        KeyTable(Keys::new(places, None, idle))
    }

    /// A call's lookup of the key `word` at `now`, taking a place if need be: the place
    /// it found or took, `None` when both its places are held by keys in use.
    pub fn find_or_take(&self, word: u64, now: Duration) -> Option<usize> {
        let entry = self.0.find_or_take(key_of(word), now)?;
        Some(self.0.place_of(entry))
    }

    /// The key word held at `place` (0 while it is free).
    pub fn held_at(&self, place: usize) -> u64 {
        self.0.held_at(place)
    }
}

impl core::fmt::Debug for Keys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Keys")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

/// A call's ask for a copy beyond its first at `now`: `Some(true)` when the copy holds an
/// outstanding slot it must give back with [`give_back`], `None` when refused.
pub fn ask(budget: &Budget, now: Duration) -> Option<bool> {
    budget.withdraw(|| now).ok()
}

/// Gives back `copies` outstanding slots, as a copy's end does.
pub fn give_back(budget: &Budget, copies: usize) {
    budget.release(copies);
}

/// Credits `ended` calls at `now`, `earning` of which asked for no copy, as a policy's ask
/// does before it withdraws.
pub fn credit(budget: &Budget, ended: u64, earning: u64, now: Duration) {
    budget.credit(ended, earning, now, Duration::ZERO);
}

/// An adaptive delay's ring of slots (`adaptive_delay(0.5)`, 16 buckets a row under loom).
pub struct Ring(LatencyTracker);

impl Ring {
    /// The delay before an estimate: one second.
    pub const FALLBACK: Duration = Duration::from_secs(1);

    /// A ring of quarter-`window` slots, estimating from `min_samples` latencies.
    pub fn new(window: Duration, min_samples: u32) -> Self {
        Ring(LatencyTracker::one_stripe(&TrackerSeed {
            config: AdaptiveConfig {
                quantile: 0.5,
                min_samples,
                window,
                choice: Choice::Quantile,
            },
            fallback: Self::FALLBACK,
            min_delay: Duration::ZERO,
            max_delay: Duration::from_secs(3600),
            budget: None,
        }))
    }

    /// Records `latency`, ended at `now`, as a call's end does.
    pub fn record(&self, latency: Duration, now: Duration) {
        self.0.record(latency, now);
    }

    /// Every latency counted in the ring.
    pub fn counted(&self) -> u64 {
        self.0.counted()
    }

    /// The delay a call gets at `now`.
    pub fn delay(&self, now: Duration) -> Duration {
        self.0.delay(now)
    }
}

impl core::fmt::Debug for Ring {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Ring").field(&self.0).finish()
    }
}

/// One policy's place among the members of a shared budget, and the counters its calls
/// end in.
pub struct Member {
    budget: Budget,
    place: Arc<crate::budget::Member>,
    counters: Counters,
}

impl Member {
    /// A new policy's place in `budget`.
    pub fn join(budget: &Budget) -> Self {
        let place = budget.join(Cells::new());
        let counters = Counters::sharing(place.cells().clone());
        Member {
            budget: budget.clone(),
            place,
            counters,
        }
    }

    /// A call of this policy that asked for no copy ends, won.
    pub fn end_call(&self) {
        self.counters.add(&[Counter::Wins]);
    }

    /// A call of this policy asks for its first copy at `now`, as a hedge does: its
    /// policy's calls are credited first, every member's if the bucket is short. `None`
    /// when refused.
    pub fn ask(&self, now: Duration) -> Option<bool> {
        self.budget.admit(&self.place, true, || now).ok()
    }
}

impl core::fmt::Debug for Member {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Member").finish_non_exhaustive()
    }
}
