//! What a call tells the tracker at its end: the original's latency or its age when
//! dropped (a [`Sample`]), and what its hedges showed ([`Shown`]), which each slot counts.

use core::time::Duration;

use super::histogram::bucket_of;
use super::nanos;

/// What a call that ran long enough to read the clock tells the tracker at its end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ending {
    /// The original's latency, or its age when it was dropped.
    pub(crate) sample: Sample,
    /// What the call showed: [`Shown`] bits, none for an original that answered in a
    /// call that asked for no copy.
    pub(crate) shown: Shown,
}

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

/// The counts of what hedges showed, per slot.
pub(super) const SHOWN: usize = 3;
/// Calls in which the clock started a copy.
pub(super) const HEDGED: usize = 0;
/// Calls in which the budget refused a copy.
pub(super) const REFUSED: usize = 1;
/// Calls a copy other than the original won.
pub(super) const HEDGE_WON: usize = 2;
