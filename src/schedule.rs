//! The delay schedule: when each copy of a call is due, as a pure function of the
//! times earlier copies started.

use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

use crate::adaptive::{nanos, LatencyTracker};

/// The floor of the spread between copies once the `max_delay` cap is reached.
pub(crate) const MIN_SPREAD: Duration = Duration::from_millis(1);

/// A user function giving the delay before copy `k`, counted from the start of copy k-1.
pub(crate) type DelayFn = Arc<dyn Fn(usize) -> Option<Duration> + Send + Sync>;

/// How the delay before each copy is chosen.
#[derive(Clone)]
pub(crate) enum Delays {
    /// The same delay before every copy; zero starts every copy at once.
    Fixed(Duration),
    /// No timed copies: the next copy starts only when every copy in flight failed.
    Fallback,
    /// A delay per copy; `None` stops the timed copies.
    PerCopy(DelayFn),
    /// The same delay before every copy, read from the latency tracker when each is due.
    Adaptive(Arc<LatencyTracker>),
}

impl fmt::Debug for Delays {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delays::Fixed(delay) if delay.is_zero() => f.write_str("Parallel"),
            Delays::Fixed(delay) => f.debug_tuple("Fixed").field(delay).finish(),
            Delays::Fallback => f.write_str("Fallback"),
            Delays::PerCopy(_) => f.write_str("PerCopy(..)"),
            Delays::Adaptive(tracker) => f.debug_tuple("Adaptive").field(tracker).finish(),
        }
    }
}

/// When copies are due: the per-copy delay plus the `max_delay` cap.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    pub(crate) delays: Delays,
    /// The latest a copy may be due, counted from the first copy's start, before the
    /// remaining copies are spread a quarter-delay apart.
    pub(crate) max_delay: Option<Duration>,
}

impl Schedule {
    /// The delay before copy `copy` (≥ 1), counted from the start of the copy before it,
    /// as it stands at `now`, an adaptive one read from `tracker` (a key's, with `now` in
    /// nanoseconds as its lookup took it) or else the policy's; `None` when copy `copy`
    /// is not started by the clock.
    #[inline]
    pub(crate) fn delay(
        &self,
        copy: usize,
        now: Duration,
        tracker: Option<(&LatencyTracker, u64)>,
    ) -> Option<Duration> {
        match &self.delays {
            Delays::Fixed(delay) => Some(*delay),
            Delays::Fallback => None,
            Delays::PerCopy(delay_for) => delay_for(copy),
            Delays::Adaptive(policy) => {
                let (tracker, now_nanos) = tracker.unwrap_or_else(|| (policy, nanos(now)));
                Some(tracker.delay_at(now_nanos))
            }
        }
    }

    /// The time copy `copy` (≥ 1) is due, given when the copy before it and the first
    /// copy started, an adaptive delay read from `tracker`; `None` when the clock never
    /// starts it.
    ///
    /// Never earlier than `previous_start`: the schedule is monotonic by construction.
    #[inline]
    pub(crate) fn due(
        &self,
        copy: usize,
        previous_start: Duration,
        first_start: Duration,
        tracker: Option<(&LatencyTracker, u64)>,
    ) -> Option<Duration> {
        // The previous copy's start is the latest time the call has read: near enough to
        // now to tell whether the adaptive estimate is stale.
        let delay = self.delay(copy, previous_start, tracker)?;
        Some(due_after(
            delay,
            self.max_delay,
            previous_start,
            first_start,
        ))
    }

    /// The fixed delay an adaptive one starts from (the `delay` setting); zero in the
    /// other modes.
    pub(crate) fn fallback(&self) -> Duration {
        match &self.delays {
            Delays::Adaptive(tracker) => tracker.fallback(),
            Delays::Fixed(delay) => *delay,
            _ => Duration::ZERO,
        }
    }

    /// The latency tracker of an adaptive delay.
    #[inline]
    pub(crate) fn tracker(&self) -> Option<&LatencyTracker> {
        match &self.delays {
            Delays::Adaptive(tracker) => Some(tracker),
            _ => None,
        }
    }
}

/// The due time of a copy whose delay is `delay`, capped by `max_delay` after the first
/// copy; past the cap, copies are spread `max(delay / 4, 1 ms)` apart.
#[inline]
pub(crate) fn due_after(
    delay: Duration,
    max_delay: Option<Duration>,
    previous_start: Duration,
    first_start: Duration,
) -> Duration {
    // A call's first due time counts from zero while its clock is unread: no addition.
    let natural = match previous_start.is_zero() {
        true => delay,
        false => previous_start.saturating_add(delay),
    };
    let Some(max_delay) = max_delay else {
        return natural;
    };
    let cap = first_start.saturating_add(max_delay);
    if natural <= cap {
        return natural;
    }
    let spread = (delay / 4).max(MIN_SPREAD);
    cap.max(previous_start.saturating_add(spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn fixed(delay: Duration, max_delay: Option<Duration>) -> Schedule {
        Schedule {
            delays: Delays::Fixed(delay),
            max_delay,
        }
    }

    #[test]
    fn fixed_delay_is_counted_from_the_previous_start() {
        let schedule = fixed(20 * MS, None);
        assert_eq!(
            schedule.due(1, Duration::ZERO, Duration::ZERO, None),
            Some(20 * MS)
        );
        assert_eq!(
            schedule.due(2, 20 * MS, Duration::ZERO, None),
            Some(40 * MS)
        );
        // A copy started early by a failure moves the next one with it.
        assert_eq!(schedule.due(2, 5 * MS, Duration::ZERO, None), Some(25 * MS));
    }

    #[test]
    fn copies_past_max_delay_are_spread_a_quarter_delay_apart() {
        let schedule = fixed(40 * MS, Some(50 * MS));
        assert_eq!(
            schedule.due(1, Duration::ZERO, Duration::ZERO, None),
            Some(40 * MS)
        );
        // 80 ms would pass the 50 ms cap: the copy goes out at the cap.
        assert_eq!(
            schedule.due(2, 40 * MS, Duration::ZERO, None),
            Some(50 * MS)
        );
        // Past the cap, 10 ms (a quarter of 40) apart.
        assert_eq!(
            schedule.due(3, 50 * MS, Duration::ZERO, None),
            Some(60 * MS)
        );
        assert_eq!(
            schedule.due(4, 60 * MS, Duration::ZERO, None),
            Some(70 * MS)
        );
    }

    #[test]
    fn spread_is_at_least_one_millisecond() {
        let schedule = fixed(2 * MS, Some(2 * MS));
        assert_eq!(schedule.due(2, 2 * MS, Duration::ZERO, None), Some(3 * MS));
    }

    #[test]
    fn fallback_never_schedules() {
        let schedule = Schedule {
            delays: Delays::Fallback,
            max_delay: None,
        };
        assert_eq!(schedule.due(1, Duration::ZERO, Duration::ZERO, None), None);
    }

    #[test]
    fn per_copy_delays_follow_the_function_and_stop_at_none() {
        let schedule = Schedule {
            delays: Delays::PerCopy(Arc::new(|copy| (copy < 3).then_some(copy as u32 * MS))),
            max_delay: None,
        };
        assert_eq!(
            schedule.due(1, Duration::ZERO, Duration::ZERO, None),
            Some(MS)
        );
        assert_eq!(schedule.due(2, MS, Duration::ZERO, None), Some(3 * MS));
        assert_eq!(schedule.due(3, 3 * MS, Duration::ZERO, None), None);
    }

    #[test]
    fn due_never_precedes_the_previous_start() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..10_000 {
            let delay = Duration::from_micros(rng.u64(0..100_000));
            let max_delay = rng
                .bool()
                .then(|| Duration::from_micros(rng.u64(0..100_000)));
            let first = Duration::from_micros(rng.u64(0..1_000));
            let previous = first + Duration::from_micros(rng.u64(0..200_000));
            let due = due_after(delay, max_delay, previous, first);
            assert!(due >= previous, "{due:?} < {previous:?}");
        }
    }
}
