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

/// One latency to record: its bucket and when it was observed, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    bucket: usize,
    now_nanos: u64,
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
    /// `STRIPES` stripes (or one) of `SLOTS` rows of `BUCKETS` counters.
    counts: Box<[AtomicU32]>,
    /// The stripes less one: a thread's stripe is its slot masked by it.
    stripe_mask: usize,
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
        Self::with_stripes(config, fallback, min_delay, max_delay, STRIPES)
    }

    /// A tracker with one stripe: a quarter of the memory, for a key's latencies, which
    /// fewer threads record at once than a whole policy's.
    pub(crate) fn one_stripe(
        config: AdaptiveConfig,
        fallback: Duration,
        min_delay: Duration,
        max_delay: Duration,
    ) -> Self {
        Self::with_stripes(config, fallback, min_delay, max_delay, 1)
    }

    fn with_stripes(
        config: AdaptiveConfig,
        fallback: Duration,
        min_delay: Duration,
        max_delay: Duration,
        stripes: usize,
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
            counts: (0..stripes * STRIPE_LEN)
                .map(|_| AtomicU32::new(0))
                .collect(),
            stripe_mask: stripes - 1,
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

    /// Forgets every latency, for a new key in a key's place: the fallback returns.
    #[cold]
    pub(crate) fn clear(&self) {
        self.counts.iter().for_each(|count| count.store(0, Relaxed));
        self.unestimated.store(0, Relaxed);
        self.estimate_nanos.store(NO_ESTIMATE, Relaxed);
    }

    /// The delay before enough samples exist.
    pub(crate) fn fallback(&self) -> Duration {
        self.fallback
    }

    /// Records one latency observed at `now` (the policy's clock).
    #[inline]
    #[cfg(test)]
    pub(crate) fn record(&self, latency: Duration, now: Duration) {
        self.record_sample(Sample::new(latency, now));
    }

    /// Records one latency, as [`LatencyTracker::record`] does, with its bucket and time
    /// already worked out: a policy's and a key's tracker record the same sample.
    #[inline]
    pub(crate) fn record_sample(&self, Sample { bucket, now_nanos }: Sample) {
        let slot = if now_nanos >= self.slot_end_nanos.load(Relaxed) {
            self.rotate(now_nanos / self.slot_nanos)
        } else {
            self.current_slot.load(Relaxed)
        };
        let row = (slot % SLOTS) as usize * BUCKETS;
        // A key's tracker has one stripe: no need to ask which thread this is.
        let stripe = match self.stripe_mask {
            0 => 0,
            mask => stripe() & mask,
        };
        self.counts[stripe * STRIPE_LEN + row + bucket].fetch_add(1, Relaxed);
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
pub(crate) fn nanos(time: Duration) -> u64 {
    time.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(time.subsec_nanos()))
}

/// The stripe this thread records into, before a tracker masks it to its own stripes.
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
mod tests;
