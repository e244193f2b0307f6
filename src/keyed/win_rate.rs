//! [`WinRate`]: whether a key's (or a policy's) hedges still win, and [`Withhold`], the
//! rule of [`PolicyBuilder::min_win_rate`](crate::PolicyBuilder::min_win_rate) that
//! withholds them when they do not.
//!
//! The rate is a moving average over the calls that started a copy by the clock: each
//! moves it a thirty-second of the way to 1 (a hedge won the call) or 0 (it did not). It
//! starts at 1, so a new key hedges until its hedges are shown to lose. Below the
//! minimum, the calls that would hedge do not, except one in [`PROBE_EVERY`]: a probe,
//! which hedges and counts as the calls it stands for; one winning probe brings the
//! average back to the minimum at least (and hedging back) at once, and losing probes
//! keep it down. A slowness that every copy of a call shares (a heavy request, a hot key) then
//! costs one probe copy in twenty calls that would hedge, and stalls that hedges do beat
//! are hedged again from the first probe that wins.

use crate::sync::{AtomicU32, Ordering::Relaxed};

/// One in this many calls that would have hedged while hedges are withheld hedges: a
/// probe.
pub(crate) const PROBE_EVERY: u32 = 20;

/// The average's scale: 1 is `ONE`.
const ONE: u32 = 1 << 16;
/// What is kept of the average at each hedged call: 31/32.
const KEEP: u32 = ONE - ONE / 32;
/// What is kept at a probe, which stands for [`PROBE_EVERY`] calls: (31/32)^20.
const KEEP_PROBE: u32 = 34_729;

/// The share of recent hedged calls a hedge won, and the count that picks probes.
pub(crate) struct WinRate {
    /// In `1/ONE`ths.
    won: AtomicU32,
    /// Calls that would have hedged while hedges were withheld.
    withheld: AtomicU32,
}

/// What a call that would hedge does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ask {
    Hedge,
    Probe,
    Withhold,
}

/// What a recorded outcome changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    Same,
    /// The average fell below the minimum: hedges are withheld from now on.
    Withholding,
    /// It rose back: hedging resumes.
    Resumed,
}

impl WinRate {
    // Not `const`: loom's atomics (`cfg(loom)`) are made at run time.
    pub(crate) fn new() -> Self {
        WinRate {
            won: AtomicU32::new(ONE),
            withheld: AtomicU32::new(0),
        }
    }

    /// Forgets what it saw, for a new key in its place.
    pub(crate) fn reset(&self) {
        self.won.store(ONE, Relaxed);
        self.withheld.store(0, Relaxed);
    }

    /// The recent win rate, from 0 to 1.
    pub(crate) fn rate(&self) -> f64 {
        f64::from(self.won.load(Relaxed)) / f64::from(ONE)
    }

    /// Whether a call that would hedge now may, given the minimum.
    #[inline]
    pub(crate) fn ask(&self, withhold: &Withhold) -> Ask {
        if self.won.load(Relaxed) >= withhold.min {
            return Ask::Hedge;
        }
        let withheld = self.withheld.fetch_add(1, Relaxed).wrapping_add(1);
        match withheld % PROBE_EVERY {
            0 => Ask::Probe,
            _ => Ask::Withhold,
        }
    }

    /// A call that started a copy by the clock ended: `won` if a copy other than its
    /// original won it; `probe` if it hedged as a probe.
    pub(crate) fn record(&self, withhold: &Withhold, won: bool, probe: bool) -> Turn {
        let keep = if probe { KEEP_PROBE } else { KEEP };
        // A probe that wins lifts the average to the minimum at least, whatever the
        // minimum: hedging resumes at once, and the next losing hedge withholds again.
        let floor = if won && probe { withhold.min } else { 0 };
        let step = |before: u32| {
            let kept = u64::from(before) * u64::from(keep) / u64::from(ONE);
            let gained = if won { u64::from(ONE - keep) } else { 0 };
            Some((kept + gained).clamp(u64::from(floor), u64::from(ONE)) as u32)
        };
        let Ok(before) = self.won.fetch_update(Relaxed, Relaxed, step) else {
            unreachable!("the step always gives a value");
        };
        let after = step(before).unwrap_or(before);
        match (before >= withhold.min, after >= withhold.min) {
            (true, false) => Turn::Withholding,
            (false, true) => Turn::Resumed,
            _ => Turn::Same,
        }
    }
}

/// [`PolicyBuilder::min_win_rate`](crate::PolicyBuilder::min_win_rate): the minimum, and
/// the win rate of the calls that have no kept key.
pub(crate) struct Withhold {
    /// The minimum, in the average's scale.
    min: u32,
    /// The policy-wide rate.
    pub(crate) policy: WinRate,
}

impl Withhold {
    /// `None` for a minimum of zero (or NaN): nothing is ever withheld.
    pub(crate) fn new(min_win_rate: f64) -> Option<Self> {
        let min = (min_win_rate.clamp(0.0, 1.0) * f64::from(ONE)) as u32;
        (min > 0).then(|| Withhold {
            min,
            policy: WinRate::new(),
        })
    }

    /// The minimum, from 0 to 1.
    pub(crate) fn min(&self) -> f64 {
        f64::from(self.min) / f64::from(ONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_probe_is_keep_to_the_probe_count() {
        let keep = f64::from(KEEP) / f64::from(ONE);
        let expected = keep.powi(PROBE_EVERY as i32) * f64::from(ONE);
        assert!((f64::from(KEEP_PROBE) - expected).abs() < 2.0, "{expected}");
    }

    #[test]
    fn losing_hedges_withhold_and_one_probe_in_twenty_still_hedges() {
        let withhold = Withhold::new(0.1).unwrap();
        let rate = WinRate::new();
        let mut turns = 0;
        for _ in 0..200 {
            assert_eq!(rate.ask(&withhold), Ask::Hedge);
            if rate.record(&withhold, false, false) == Turn::Withholding {
                turns += 1;
                break;
            }
        }
        assert_eq!(turns, 1);
        assert!(rate.rate() < 0.1);
        let asks: alloc::vec::Vec<Ask> = (0..40).map(|_| rate.ask(&withhold)).collect();
        let probes = asks.iter().filter(|ask| **ask == Ask::Probe).count();
        assert_eq!(probes, 2, "{asks:?}");
        assert_eq!(asks[19], Ask::Probe);
    }

    #[test]
    fn one_winning_probe_resumes_hedging() {
        let withhold = Withhold::new(0.1).unwrap();
        let rate = WinRate::new();
        while rate.record(&withhold, false, false) != Turn::Withholding {}
        assert_eq!(rate.record(&withhold, false, true), Turn::Same);
        assert_eq!(rate.record(&withhold, true, true), Turn::Resumed);
        assert_eq!(rate.ask(&withhold), Ask::Hedge);
    }

    #[test]
    fn one_winning_probe_resumes_hedging_at_any_minimum() {
        for min in [0.5, 0.6, 0.9, 1.0] {
            let withhold = Withhold::new(min).unwrap();
            let rate = WinRate::new();
            while rate.record(&withhold, false, false) != Turn::Withholding {}
            for _ in 0..10 {
                assert_eq!(rate.record(&withhold, false, true), Turn::Same, "{min}");
            }
            assert_eq!(rate.record(&withhold, true, true), Turn::Resumed, "{min}");
            assert_eq!(rate.ask(&withhold), Ask::Hedge, "{min}");
            assert_eq!(
                rate.record(&withhold, false, false),
                Turn::Withholding,
                "{min}"
            );
        }
    }

    #[test]
    fn a_zero_or_nan_minimum_withholds_nothing() {
        assert!(Withhold::new(0.0).is_none());
        assert!(Withhold::new(f64::NAN).is_none());
        assert!(Withhold::new(-1.0).is_none());
        assert_eq!(Withhold::new(7.0).unwrap().min(), 1.0);
    }
}
