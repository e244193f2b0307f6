//! The latency tracker behind [`PolicyBuilder::adaptive_delay`](crate::PolicyBuilder::adaptive_delay):
//! a lock-free, decaying histogram of copy latencies and the delay it suggests.
//!
//! Latencies go into a log-linear histogram (16 buckets per power of two from 16 µs, exact
//! below: at most 6.25% relative error) of atomic counters. Time is cut into slots of a
//! quarter window; a ring of five slots keeps the last four complete ones plus the one
//! being filled. When a recording lands in a new slot, the recorder that notices
//! clears the slot it reuses and recomputes the estimate from the four complete slots, so
//! a delay read is one atomic load and a recording is one `fetch_add` (two on a slot
//! change per quarter window). Until there is an estimate, every `min_samples`-th
//! recording publishes one from the slot being filled as well, so the first estimate
//! comes as soon as enough latencies are known, not when the first quarter window ends.
//!
//! The estimate hedges stragglers, not a queue. When, in each of the two newest slots
//! that hold latencies,
//! more than a tenth of the latencies exceed four times the slot's median, the slow calls
//! are a crowd: the backend is queueing, and extra copies would only lengthen the queue.
//! The estimate is then the window's slowest latency, so only calls slower than any recent
//! one are hedged. (One slot alone may straddle a shift of the median, which looks the
//! same; two in a row do not.)
//!
//! We wrote the histogram instead of depending on `hdrhistogram` (not shareable without a
//! lock or per-thread recorders) or `histogram` (std only, no in-place clearing, and
//! every snapshot allocates): decay needs slots cleared in place, and the crate must build
//! without `std`.

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use core::time::Duration;

use alloc::boxed::Box;

use self::histogram::{bucket_of, is_queue, window_delay, BUCKETS};

mod histogram;

/// Slots in the ring: four complete ones make the window, one is being filled.
const SLOTS: u64 = 5;
/// Copies of the ring, so threads recording at once rarely share a cache line.
#[cfg(feature = "std")]
const STRIPES: usize = 4;
#[cfg(not(feature = "std"))]
const STRIPES: usize = 1;
/// Counters per stripe.
const STRIPE_LEN: usize = SLOTS as usize * BUCKETS;
/// Complete slots per window.
const SLOTS_PER_WINDOW: u32 = (SLOTS - 1) as u32;
/// The cached delay before enough samples exist.
const NO_ESTIMATE: u64 = u64::MAX;
/// The longest delay the estimate holds (`u64::MAX - 1` nanoseconds, about 584 years):
/// `min_delay` and `max_delay` are clamped to it, so they bound the estimate exactly.
pub(crate) const MAX_ESTIMATE: Duration = Duration::from_nanos(NO_ESTIMATE - 1);

/// What the tracker was configured with (already clamped by the builder).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AdaptiveConfig {
    pub(crate) quantile: f64,
    pub(crate) min_samples: u32,
    pub(crate) window: Duration,
}

/// Tracks recent latencies of original copies and turns them into a hedge delay.
pub(crate) struct LatencyTracker {
    config: AdaptiveConfig,
    /// The delay before enough samples exist.
    fallback: Duration,
    min_delay: Duration,
    max_delay: Duration,
    /// Nanoseconds per slot (a quarter window), at least 1.
    slot_nanos: u64,
    /// The slot being filled, as a count of slots since the clock's origin.
    current_slot: AtomicU64,
    /// When the slot being filled ends, in nanoseconds: a recording compares against it
    /// instead of dividing.
    slot_end_nanos: AtomicU64,
    /// `STRIPES` stripes of `SLOTS` rows of `BUCKETS` counters.
    counts: Box<[AtomicU32]>,
    /// The delay to use, in nanoseconds, or [`NO_ESTIMATE`].
    estimate_nanos: AtomicU64,
    /// Latencies recorded while there was no estimate: at every `min_samples` of them, an
    /// estimate is published from what is known, the slot being filled included.
    unestimated: AtomicU32,
}

impl LatencyTracker {
    pub(crate) fn new(
        config: AdaptiveConfig,
        fallback: Duration,
        min_delay: Duration,
        max_delay: Duration,
    ) -> Self {
        let window_nanos = u64::try_from(config.window.as_nanos()).unwrap_or(u64::MAX);
        let slot_nanos = (window_nanos / u64::from(SLOTS_PER_WINDOW)).max(1);
        let min_delay = min_delay.min(MAX_ESTIMATE);
        let max_delay = max_delay.clamp(min_delay, MAX_ESTIMATE);
        LatencyTracker {
            config,
            fallback: fallback.clamp(min_delay, max_delay),
            min_delay,
            max_delay,
            slot_nanos,
            current_slot: AtomicU64::new(0),
            slot_end_nanos: AtomicU64::new(slot_nanos),
            counts: (0..STRIPES * STRIPE_LEN)
                .map(|_| AtomicU32::new(0))
                .collect(),
            estimate_nanos: AtomicU64::new(NO_ESTIMATE),
            unestimated: AtomicU32::new(0),
        }
    }

    /// The hedge delay at `now` (the policy's clock): the tracked quantile of the window
    /// before `now`, bounded by `min_delay..=max_delay`, or the fallback while that window
    /// holds too few samples.
    ///
    /// A read past the slot being filled moves the ring first, as a recording would, so
    /// an estimate never outlives its window: after an idle gap the fallback returns.
    #[inline]
    pub(crate) fn delay(&self, now: Duration) -> Duration {
        let now_nanos = nanos(now);
        if now_nanos >= self.slot_end_nanos.load(Relaxed) {
            self.rotate(now_nanos / self.slot_nanos);
        }
        match self.estimate_nanos.load(Relaxed) {
            NO_ESTIMATE => self.fallback,
            nanos => Duration::from_nanos(nanos),
        }
    }

    /// Records one latency observed at `now` (the policy's clock).
    #[inline]
    pub(crate) fn record(&self, latency: Duration, now: Duration) {
        let now_nanos = nanos(now);
        let slot = if now_nanos >= self.slot_end_nanos.load(Relaxed) {
            self.rotate(now_nanos / self.slot_nanos)
        } else {
            self.current_slot.load(Relaxed)
        };
        let row = (slot % SLOTS) as usize * BUCKETS;
        self.counts[stripe() * STRIPE_LEN + row + bucket_of(latency)].fetch_add(1, Relaxed);
        if self.estimate_nanos.load(Relaxed) == NO_ESTIMATE {
            self.recorded_without_estimate(slot);
        }
    }

    /// A latency was recorded into `slot` while there was no estimate: once
    /// `min_samples` of them are known, the first estimate need not wait for its slot to
    /// complete.
    #[cold]
    fn recorded_without_estimate(&self, slot: u64) {
        let recorded = self.unestimated.fetch_add(1, Relaxed).wrapping_add(1);
        if recorded.is_multiple_of(self.config.min_samples.max(1)) {
            let estimate = self.estimate(slot, true);
            // A rotation that published meanwhile has the last word.
            let _ = self
                .estimate_nanos
                .compare_exchange(NO_ESTIMATE, estimate, Relaxed, Relaxed);
        }
    }

    /// Moves the ring to `slot`: the thread that wins the move clears the slots it reuses
    /// and publishes the estimate of the window that just completed. Returns the slot to
    /// record into.
    #[cold]
    fn rotate(&self, slot: u64) -> u64 {
        let seen = self.current_slot.load(Relaxed);
        if slot <= seen {
            return seen;
        }
        match self
            .current_slot
            .compare_exchange(seen, slot, Relaxed, Relaxed)
        {
            Ok(_) => {
                let end = slot.saturating_add(1).saturating_mul(self.slot_nanos);
                self.slot_end_nanos.store(end, Relaxed);
                // A recording racing this clear may be lost; one sample in a window is noise.
                for stale in (seen + 1..=slot).rev().take(SLOTS as usize) {
                    let row = (stale % SLOTS) as usize * BUCKETS;
                    for stripe in self.counts.chunks(STRIPE_LEN) {
                        stripe[row..row + BUCKETS]
                            .iter()
                            .for_each(|count| count.store(0, Relaxed));
                    }
                }
                self.estimate_nanos
                    .store(self.estimate(slot, false), Relaxed);
                slot
            }
            Err(newer) => newer.max(slot),
        }
    }

    /// The estimate, in nanoseconds or [`NO_ESTIMATE`], of the complete slots before
    /// `current`, and with `with_current` of `current` too, as the newest.
    fn estimate(&self, current: u64, with_current: bool) -> u64 {
        let above = current.checked_add(u64::from(with_current));
        let rows: [Option<usize>; SLOTS as usize] = core::array::from_fn(|back| {
            let slot = above?.checked_sub(back as u64 + 1)?;
            (back < SLOTS_PER_WINDOW as usize + usize::from(with_current))
                .then(|| (slot % SLOTS) as usize * BUCKETS)
        });
        let mut window = [0u64; BUCKETS];
        let mut slot = [0u64; BUCKETS];
        // Whether the two newest slots with samples are both a queue: one slot alone may
        // straddle a shift of the median, which looks the same.
        let (mut newest, mut queueing) = (0, 0);
        for (back, row) in rows.into_iter().enumerate() {
            let Some(row) = row else { continue };
            slot.fill(0);
            for stripe in self.counts.chunks(STRIPE_LEN) {
                for (sum, count) in slot.iter_mut().zip(&stripe[row..row + BUCKETS]) {
                    *sum += u64::from(count.load(Relaxed));
                }
            }
            for (sum, count) in window.iter_mut().zip(&slot) {
                *sum += count;
            }
            if back < 2 && slot.iter().any(|&count| count > 0) {
                newest += 1;
                queueing += usize::from(is_queue(&slot));
            }
        }
        // A queue is hedged only past its slowest recent latency.
        let quantile = if newest > 0 && queueing == newest {
            1.0
        } else {
            self.config.quantile
        };
        let estimate = window_delay(&window, quantile, self.config.min_samples)
            .map(|micros| Duration::from_micros(micros).clamp(self.min_delay, self.max_delay));
        // The bounds are at most `MAX_ESTIMATE`, so the estimate fits below `NO_ESTIMATE`.
        estimate.map_or(NO_ESTIMATE, nanos)
    }
}

/// `time` in nanoseconds, saturating (at 584 years) without 128-bit arithmetic.
#[inline]
fn nanos(time: Duration) -> u64 {
    time.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(time.subsec_nanos()))
}

/// The stripe this thread records into.
#[inline]
fn stripe() -> usize {
    #[cfg(feature = "std")]
    return crate::stats::thread_slot::current().map_or(0, |slot| slot % STRIPES);
    #[cfg(not(feature = "std"))]
    return 0;
}

impl fmt::Debug for LatencyTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LatencyTracker")
            .field("quantile", &self.config.quantile)
            .field("min_samples", &self.config.min_samples)
            .field("window", &self.config.window)
            .field("min_delay", &self.min_delay)
            .field("max_delay", &self.max_delay)
            .field("estimate", &self.estimate_nanos.load(Relaxed))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn tracker(quantile: f64, min_samples: u32) -> LatencyTracker {
        let config = AdaptiveConfig {
            quantile,
            min_samples,
            window: 4 * MS * 1000,
        };
        LatencyTracker::new(config, 10 * MS, Duration::ZERO, Duration::MAX)
    }

    #[test]
    fn the_first_estimate_comes_once_min_samples_are_known() {
        let tracker = tracker(0.5, 10);
        for _ in 0..9 {
            tracker.record(2 * MS, Duration::ZERO);
        }
        assert_eq!(tracker.delay(MS), 10 * MS, "nine latencies: the fallback");
        // The tenth, still in the first quarter window, publishes the first estimate.
        tracker.record(2 * MS, MS);
        let delay = tracker.delay(MS);
        assert!((2 * MS..=2 * MS + MS / 16).contains(&delay), "{delay:?}");
        // The window's rules take over when the slot completes: the same latencies.
        tracker.record(3 * MS, 1000 * MS);
        let delay = tracker.delay(1000 * MS);
        assert!((2 * MS..=2 * MS + MS / 16).contains(&delay), "{delay:?}");
    }

    #[test]
    fn too_few_samples_keep_the_fallback() {
        let tracker = tracker(0.5, 10);
        for _ in 0..8 {
            tracker.record(2 * MS, Duration::ZERO);
        }
        tracker.record(2 * MS, 1000 * MS);
        assert_eq!(tracker.delay(1000 * MS), 10 * MS);
    }

    #[test]
    fn an_early_estimate_counts_only_what_the_window_still_holds() {
        // Ten latencies, but the first five left the window with an idle gap: no
        // estimate until ten are known again.
        let tracker = tracker(0.5, 10);
        for _ in 0..5 {
            tracker.record(2 * MS, Duration::ZERO);
        }
        for _ in 0..5 {
            tracker.record(2 * MS, 10_000 * MS);
        }
        assert_eq!(tracker.delay(10_000 * MS), 10 * MS);
        for _ in 0..10 {
            tracker.record(2 * MS, 10_001 * MS);
        }
        let delay = tracker.delay(10_001 * MS);
        assert!((2 * MS..=2 * MS + MS / 16).contains(&delay), "{delay:?}");
    }

    #[test]
    fn the_quantile_is_nearest_rank() {
        let tracker = tracker(0.95, 1);
        for latency in 1..=100u64 {
            tracker.record(Duration::from_micros(latency * 100), Duration::ZERO);
        }
        // The 95th of 100 values, 9.5 ms, rounded up to its bucket's edge: read once the
        // slot completed, with no recording since.
        let delay = tracker.delay(1000 * MS);
        assert!(
            (Duration::from_micros(9_500)..=Duration::from_micros(9_500 + 9_500 / 16))
                .contains(&delay),
            "{delay:?}"
        );
    }

    #[test]
    fn old_samples_leave_after_a_window() {
        let tracker = tracker(0.5, 1);
        for _ in 0..1000 {
            tracker.record(MS, Duration::ZERO);
        }
        // One slow sample per slot for a whole window replaces the fast ones.
        for slot in 1..=5u32 {
            tracker.record(8 * MS, slot * 1000 * MS);
        }
        let delay = tracker.delay(5000 * MS);
        assert!(delay >= 8 * MS, "{delay:?}");
    }

    #[test]
    fn a_long_idle_gap_clears_every_slot() {
        // Two samples make an estimate, so the one recorded after the gap is not enough.
        let tracker = tracker(0.5, 2);
        tracker.record(MS, Duration::ZERO);
        tracker.record(MS, 1000 * MS);
        assert!(tracker.delay(1000 * MS) < 2 * MS);
        tracker.record(MS, 100_000 * MS);
        assert_eq!(
            tracker.delay(100_000 * MS),
            10 * MS,
            "an empty window falls back"
        );
    }

    #[test]
    fn a_read_after_an_idle_window_falls_back_without_a_recording() {
        let tracker = tracker(0.5, 1);
        tracker.record(MS, Duration::ZERO);
        assert!(tracker.delay(1000 * MS) < 2 * MS);
        // Still within the window of the last sample: kept.
        assert!(tracker.delay(4999 * MS) < 2 * MS);
        // A whole window later, with nothing recorded since: forgotten.
        assert_eq!(tracker.delay(5000 * MS), 10 * MS);
    }

    /// Records `fast` latencies of 1 ms and `slow` of 10 ms in slot `slot` of the test
    /// tracker's ring (slots of one second).
    fn record_slot(tracker: &LatencyTracker, slot: u32, fast: u32, slow: u32) {
        let at = slot * 1000 * MS;
        (0..fast).for_each(|_| tracker.record(MS, at));
        (0..slow).for_each(|_| tracker.record(10 * MS, at));
    }

    #[test]
    fn stragglers_keep_the_quantile() {
        let tracker = tracker(0.9, 1);
        // 5% of calls ten times the median: stragglers, hedged at the p90.
        record_slot(&tracker, 0, 95, 5);
        record_slot(&tracker, 1, 95, 5);
        let delay = tracker.delay(2000 * MS);
        assert!(delay < MS + MS / 16, "{delay:?}");
    }

    #[test]
    fn a_queue_of_slow_calls_is_not_hedged_below_the_slowest_latency() {
        let tracker = tracker(0.5, 1);
        // 20% of calls ten times the median in both newest slots: a queue.
        record_slot(&tracker, 0, 80, 20);
        record_slot(&tracker, 1, 80, 20);
        let delay = tracker.delay(2000 * MS);
        assert!(
            (10 * MS..=10 * MS + 10 * MS / 16).contains(&delay),
            "{delay:?}"
        );
    }

    #[test]
    fn one_slot_straddling_a_shift_keeps_the_quantile() {
        let tracker = tracker(0.5, 1);
        // The older slot is all fast; the newest has a crowd of slow calls, as a slot does
        // when the median moves within it.
        record_slot(&tracker, 0, 100, 0);
        record_slot(&tracker, 1, 70, 30);
        let delay = tracker.delay(2000 * MS);
        assert!(delay < MS + MS / 16, "{delay:?}");
    }

    #[test]
    fn a_queue_in_the_only_slot_so_far_counts() {
        let tracker = tracker(0.5, 1);
        record_slot(&tracker, 0, 70, 30);
        let delay = tracker.delay(1000 * MS);
        assert!(delay >= 10 * MS, "{delay:?}");
    }

    #[test]
    fn bounds_beyond_the_estimate_range_are_clamped_to_it() {
        let config = AdaptiveConfig {
            quantile: 0.5,
            min_samples: 1,
            window: 4 * MS * 1000,
        };
        let huge = Duration::from_secs(u64::MAX);
        let tracker = LatencyTracker::new(config, 10 * MS, huge, Duration::MAX);
        assert_eq!(tracker.delay(Duration::ZERO), MAX_ESTIMATE);
        tracker.record(MS, Duration::ZERO);
        assert_eq!(
            tracker.delay(1000 * MS),
            MAX_ESTIMATE,
            "the bound holds exactly"
        );
    }
}
