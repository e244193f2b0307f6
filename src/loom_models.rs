//! What `tests/loom.rs` needs of the structures that are not public, and nothing more:
//! compiled only under `cfg(loom)`, never part of the crate's API.

use core::time::Duration;

use crate::adaptive::{AdaptiveConfig, Choice, Ending, LatencyTracker, Sample, Shown, TrackerSeed};
use crate::keyed::{key_of, Ask, Keys, Turn, WinRate as Rate, Withhold};
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

/// A copy won: a throttling budget earns its `token_ratio` back.
pub fn copy_won(budget: &Budget) {
    budget.copy_won();
}

/// A copy failed: a throttling budget spends a token.
pub fn copy_failed(budget: &Budget) {
    budget.copy_failed();
}

/// An adaptive delay's ring of slots (`adaptive_delay(0.5)` or `optimal_delay(0.99)`, 16
/// buckets a row under loom).
pub struct Ring(LatencyTracker);

impl Ring {
    /// The delay before an estimate: one second.
    pub const FALLBACK: Duration = Duration::from_secs(1);

    /// A ring of quarter-`window` slots, estimating the median from `min_samples`
    /// latencies.
    pub fn new(window: Duration, min_samples: u32) -> Self {
        Ring::with(window, min_samples, 0.5, Choice::Quantile)
    }

    /// A ring of quarter-`window` slots for `optimal_delay(0.99)` with two copies and no
    /// budget: it also counts censored latencies.
    pub fn optimal(window: Duration, min_samples: u32) -> Self {
        Ring::with(window, min_samples, 0.99, Choice::Optimal { copies: 2 })
    }

    fn with(window: Duration, min_samples: u32, quantile: f64, choice: Choice) -> Self {
        Ring(LatencyTracker::one_stripe(&TrackerSeed {
            config: AdaptiveConfig {
                quantile,
                min_samples,
                window,
                choice,
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

    /// Records, at `now`, the end of a call whose hedge won while its original was still
    /// running at `age`: a censored latency, and a call hedged and won by a hedge.
    pub fn record_hedge_won(&self, age: Duration, now: Duration) {
        self.0.record_ending(&Ending {
            sample: Sample::new(age, now),
            shown: Shown::CENSORED
                .with(Shown::HEDGED, true)
                .with(Shown::HEDGE_WON, true),
            hedge_nanos: 1_000,
        });
    }

    /// Every latency counted in the ring, ended or censored.
    pub fn counted(&self) -> u64 {
        self.0.counted()
    }

    /// The calls the ring counts as hedged and as won by a hedge, every slot's.
    pub fn hedged_and_won(&self) -> (u64, u64) {
        self.0.hedged_and_won()
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

/// A key's (or a policy's) win rate under `min_win_rate`, with its minimum.
pub struct WinRate {
    rate: Rate,
    withhold: Withhold,
}

/// What a recorded outcome changed, as [`WinRate::record`] tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateTurn {
    /// The rate stayed on its side of the minimum.
    Same,
    /// It fell below: hedges are withheld from now on.
    Withholding,
    /// It rose back: hedging resumes.
    Resumed,
}

impl WinRate {
    /// A new rate (1: every hedge won) against `min_win_rate` (above zero).
    pub fn new(min_win_rate: f64) -> Self {
        WinRate {
            rate: Rate::new(),
            withhold: Withhold::new(min_win_rate).expect("a minimum above zero"),
        }
    }

    /// A hedged call ended: `won` if a hedge won it; `probe` if it hedged as a probe.
    pub fn record(&self, won: bool, probe: bool) -> RateTurn {
        match self.rate.record(&self.withhold, won, probe) {
            Turn::Same => RateTurn::Same,
            Turn::Withholding => RateTurn::Withholding,
            Turn::Resumed => RateTurn::Resumed,
        }
    }

    /// A call that would hedge asks: `Some(true)` hedge, `Some(false)` a probe, `None`
    /// withheld.
    pub fn ask(&self) -> Option<bool> {
        match self.rate.ask(&self.withhold) {
            Ask::Hedge => Some(true),
            Ask::Probe => Some(false),
            Ask::Withhold => None,
        }
    }

    /// The rate, from 0 to 1.
    pub fn rate(&self) -> f64 {
        self.rate.rate()
    }
}

impl core::fmt::Debug for WinRate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WinRate")
            .field("rate", &self.rate())
            .finish_non_exhaustive()
    }
}
