//! What a call tells the tracker at its end: the original's latency or its age when
//! dropped (a [`Sample`]), and what its hedges showed ([`Shown`]), which each slot counts,
//! a winning hedge's pace among it.

use core::time::Duration;

use super::histogram::{bucket_of, BUCKETS};
use super::{nanos, LatencyTracker};
use crate::sync::{AtomicU32, Ordering::Relaxed};

/// What a call that ran long enough to read the clock tells the tracker at its end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ending {
    /// The original's latency, or its age when it was dropped.
    pub(crate) sample: Sample,
    /// What the call showed: [`Shown`] bits, none for an original that answered in a
    /// call that asked for no copy.
    pub(crate) shown: Shown,
    /// With [`Shown::HEDGE_WON`], the winning copy's own latency in nanoseconds, counted
    /// from the latest copy's start (the winner's own start where it was started last, as
    /// with two copies); [`UNKNOWN_PACE`] without a hedge's win.
    pub(crate) hedge_nanos: u64,
}

/// [`Ending::hedge_nanos`] where no hedge's own latency is known.
pub(crate) const UNKNOWN_PACE: u64 = u64::MAX;

/// What a call's end showed (its original censored, its hedges started, won, refused),
/// as bits: a tracker tests them once, as a whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shown(u8);

impl Shown {
    /// The clock started a copy of the call.
    pub(crate) const HEDGED: Shown = Shown(1 << HEDGED);
    /// The budget refused a copy of the call.
    pub(crate) const REFUSED: Shown = Shown(1 << REFUSED);
    /// A copy other than the original won the call.
    pub(crate) const HEDGE_WON: Shown = Shown(1 << HEDGE_WON);
    /// A copy other than the original won the call at the healthy pace: its own latency
    /// within [`PACE_FACTOR`] times the window's median. Set by the tracker, which knows
    /// the median.
    pub(super) const PACED: Shown = Shown(1 << PACED);
    /// The original was dropped still running: its latency is only known to exceed the
    /// sample (censored).
    pub(crate) const CENSORED: Shown = Shown(1 << 7);

    /// These bits, and `bits` if `set`.
    pub(crate) const fn with(self, bits: Shown, set: bool) -> Shown {
        if set {
            Shown(self.0 | bits.0)
        } else {
            self
        }
    }

    /// Whether the bit of the count of what hedges showed at `count` ([`SHOWN`]) is set.
    pub(super) fn has(self, count: usize) -> bool {
        self.0 & (1 << count) != 0
    }

    /// Whether a copy other than the original won the call.
    pub(crate) fn hedge_won(self) -> bool {
        self.has(HEDGE_WON)
    }

    pub(super) fn is_censored(self) -> bool {
        self.0 & Shown::CENSORED.0 != 0
    }
}

/// One latency to record: its bucket and when it was observed, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub(super) bucket: usize,
    pub(super) now_nanos: u64,
}

impl Sample {
    /// `latency`, observed at `now` (the policy's clock).
    #[inline]
    pub(crate) fn new(latency: Duration, now: Duration) -> Self {
        Sample {
            bucket: bucket_of(latency),
            now_nanos: nanos(now),
        }
    }
}

impl LatencyTracker {
    /// Records an ending that is censored or shows what hedges did, at `at` (its row of
    /// the ring and its bucket).
    #[cold]
    pub(super) fn record_unusual(&self, at: usize, ending: &Ending) {
        if ending.shown.is_censored() && !self.censored.is_empty() {
            self.censored[at].fetch_add(1, Relaxed);
        } else {
            self.count_ended(at);
        }
        let pace = u64::from(self.pace_micros.load(Relaxed));
        let paced = ending.shown.hedge_won() && ending.hedge_nanos / 1000 < pace;
        self.show(
            (at / BUCKETS) as u64,
            ending.shown.with(Shown::PACED, paced),
        );
    }

    /// The calls counted as hedged and as won by a hedge, every slot's: for the loom
    /// models.
    #[cfg(loom)]
    pub(crate) fn hedged_and_won(&self) -> (u64, u64) {
        let total = |count: usize| -> u64 {
            (0..super::SLOTS)
                .map(|row| u64::from(self.shown_in(row)[count].load(Relaxed)))
                .sum()
        };
        (total(HEDGED), total(HEDGE_WON))
    }

    /// The counts of what hedges showed in the slot at `row` of the ring.
    pub(super) fn shown_in(&self, row: u64) -> &[AtomicU32] {
        let at = row as usize * SHOWN;
        &self.shown[at..at + SHOWN]
    }

    /// Counts what a call's hedges showed, in the slot at `row` of the ring.
    fn show(&self, row: u64, shown: Shown) {
        for (count, counter) in self.shown_in(row).iter().enumerate() {
            if shown.has(count) {
                counter.fetch_add(1, Relaxed);
            }
        }
    }
}

/// The counts of what hedges showed, per slot.
pub(super) const SHOWN: usize = 4;
/// Calls in which the clock started a copy.
pub(super) const HEDGED: usize = 0;
/// Calls in which the budget refused a copy.
pub(super) const REFUSED: usize = 1;
/// Calls a copy other than the original won.
pub(super) const HEDGE_WON: usize = 2;
/// Calls a copy other than the original won at the healthy pace.
pub(super) const PACED: usize = 3;
/// A winning copy answered at the healthy pace when its own latency was under this many
/// times the median of the window's latencies: a copy that queued, as the originals did,
/// takes longer.
pub(super) const PACE_FACTOR: u64 = 2;
