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

use crate::budget::Budget;
use crate::model::{kaplan_meier, Goal, Survival};

use self::histogram::{bucket_of, is_queue, window_delay, BUCKETS, EDGES_NANOS};

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
    pub(crate) choice: Choice,
}

/// How the delay is chosen from the window's latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The `quantile` of latencies ([`adaptive_delay`](crate::PolicyBuilder::adaptive_delay)).
    Quantile,
    /// The delay the model predicts minimises the `quantile` of call latency for calls of
    /// up to `copies` copies ([`optimal_delay`](crate::PolicyBuilder::optimal_delay)).
    Optimal { copies: u8 },
}

/// What a tracker starts from: the policy-wide one and each key's alike.
#[derive(Clone, Debug)]
pub(crate) struct TrackerSeed {
    pub(crate) config: AdaptiveConfig,
    /// The delay before enough samples exist.
    pub(crate) fallback: Duration,
    pub(crate) min_delay: Duration,
    pub(crate) max_delay: Duration,
    /// The budget whose ratio bounds the extra copies [`Choice::Optimal`] plans for.
    pub(crate) budget: Option<Budget>,
}

/// What a call that ran long enough to read the clock tells the tracker at its end.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ending {
    /// The original's latency, or its age when it was dropped.
    pub(crate) sample: Sample,
    /// Whether the original was dropped still running: its latency is only known to
    /// exceed the sample (censored).
    pub(crate) censored: bool,
    /// Whether the clock started a copy of the call.
    pub(crate) hedged: bool,
    /// Whether the budget refused a copy of the call.
    pub(crate) refused: bool,
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
    /// With [`Choice::Optimal`], one stripe of `SLOTS` rows of `BUCKETS` counters of
    /// censored latencies (originals dropped still running, at their age); empty
    /// otherwise, where they count as latencies.
    censored: Box<[AtomicU32]>,
    /// Per slot, what hedges showed: [`SHOWN`] counts.
    shown: Box<[AtomicU32]>,
    /// The budget whose ratio bounds the extra copies [`Choice::Optimal`] plans for.
    budget: Option<Budget>,
}

/// The counts of what hedges showed, per slot.
const SHOWN: usize = 2;
/// Calls in which the clock started a copy.
const HEDGED: usize = 0;
/// Calls in which the budget refused a copy.
const REFUSED: usize = 1;

impl LatencyTracker {
    pub(crate) fn new(seed: &TrackerSeed) -> Self {
        Self::with_stripes(seed, STRIPES)
    }

    /// A tracker with one stripe: a quarter of the memory, for a key's latencies, which
    /// fewer threads record at once than a whole policy's.
    pub(crate) fn one_stripe(seed: &TrackerSeed) -> Self {
        Self::with_stripes(seed, 1)
    }

    fn with_stripes(seed: &TrackerSeed, stripes: usize) -> Self {
        let TrackerSeed {
            config,
            fallback,
            min_delay,
            max_delay,
            ref budget,
        } = *seed;
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
            censored: match config.choice {
                Choice::Optimal { .. } => (0..STRIPE_LEN).map(|_| AtomicU32::new(0)).collect(),
                Choice::Quantile => Box::new([]),
            },
            shown: (0..SLOTS as usize * SHOWN)
                .map(|_| AtomicU32::new(0))
                .collect(),
            budget: budget.clone(),
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
        self.censored
            .iter()
            .for_each(|count| count.store(0, Relaxed));
        self.shown.iter().for_each(|count| count.store(0, Relaxed));
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
        self.record_ending(&Ending {
            sample: Sample::new(latency, now),
            censored: false,
            hedged: false,
            refused: false,
        });
    }

    /// Records what a call showed at its end: the original's latency (or, censored, its
    /// age when dropped), and what its hedges showed. A policy's and a key's tracker
    /// record the same ending.
    #[inline]
    pub(crate) fn record_ending(&self, ending: &Ending) {
        let Sample { bucket, now_nanos } = ending.sample;
        let slot = if now_nanos >= self.slot_end_nanos.load(Relaxed) {
            self.rotate(now_nanos / self.slot_nanos)
        } else {
            self.current_slot.load(Relaxed)
        };
        let row = (slot % SLOTS) as usize * BUCKETS;
        if ending.censored && !self.censored.is_empty() {
            self.censored[row + bucket].fetch_add(1, Relaxed);
        } else {
            // A key's tracker has one stripe: no need to ask which thread this is.
            let stripe = match self.stripe_mask {
                0 => 0,
                mask => stripe() & mask,
            };
            self.counts[stripe * STRIPE_LEN + row + bucket].fetch_add(1, Relaxed);
        }
        if ending.hedged || ending.refused {
            self.show(slot, ending);
        }
        if self.estimate_nanos.load(Relaxed) == NO_ESTIMATE {
            self.recorded_without_estimate(slot);
        }
    }

    /// The counts of what hedges showed in the slot at `row` of the ring.
    fn shown_in(&self, row: u64) -> &[AtomicU32] {
        let at = row as usize * SHOWN;
        &self.shown[at..at + SHOWN]
    }

    /// Counts what a call's hedges showed, in `slot`.
    #[cold]
    fn show(&self, slot: u64, ending: &Ending) {
        let shown = self.shown_in(slot % SLOTS);
        if ending.hedged {
            shown[HEDGED].fetch_add(1, Relaxed);
        }
        if ending.refused {
            shown[REFUSED].fetch_add(1, Relaxed);
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
                    for stripe in self
                        .counts
                        .chunks(STRIPE_LEN)
                        .chain(self.censored.chunks(STRIPE_LEN))
                    {
                        stripe[row..row + BUCKETS]
                            .iter()
                            .for_each(|count| count.store(0, Relaxed));
                    }
                    self.shown_in(stale % SLOTS)
                        .iter()
                        .for_each(|count| count.store(0, Relaxed));
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
        let slots: [Option<usize>; SLOTS as usize] = core::array::from_fn(|back| {
            let slot = above?.checked_sub(back as u64 + 1)?;
            (back < SLOTS_PER_WINDOW as usize + usize::from(with_current))
                .then_some((slot % SLOTS) as usize)
        });
        // Latencies that ended, and censored ones (with `Choice::Optimal`), per bucket.
        let mut window = [0u64; BUCKETS];
        let mut censored = [0u64; BUCKETS];
        let mut slot = [0u64; BUCKETS];
        // Whether the two newest slots with samples are both a queue: one slot alone may
        // straddle a shift of the median, which looks the same.
        let (mut newest, mut queueing) = (0, 0);
        // What hedges showed in the window.
        let mut shown = [0u64; SHOWN];
        for (back, at) in slots.into_iter().enumerate() {
            let Some(at) = at else { continue };
            let row = at * BUCKETS;
            slot.fill(0);
            for stripe in self.counts.chunks(STRIPE_LEN) {
                for (sum, count) in slot.iter_mut().zip(&stripe[row..row + BUCKETS]) {
                    *sum += u64::from(count.load(Relaxed));
                }
            }
            for (sum, count) in window.iter_mut().zip(&slot) {
                *sum += count;
            }
            for stripe in self.censored.chunks(STRIPE_LEN) {
                for ((sum, all), count) in censored
                    .iter_mut()
                    .zip(&mut slot)
                    .zip(&stripe[row..row + BUCKETS])
                {
                    let count = u64::from(count.load(Relaxed));
                    *sum += count;
                    *all += count;
                }
            }
            for (sum, count) in shown.iter_mut().zip(self.shown_in(at as u64)) {
                *sum += u64::from(count.load(Relaxed));
            }
            if back < 2 && slot.iter().any(|&count| count > 0) {
                newest += 1;
                queueing += usize::from(is_queue(&slot));
            }
        }
        let total = window.iter().chain(&censored).sum::<u64>();
        // Slow calls in a crowd are a queue.
        let queue = newest > 0 && queueing == newest;
        let estimate = match self.config.choice {
            // A queue is hedged only past its slowest recent latency.
            Choice::Optimal { .. } | Choice::Quantile if queue => {
                let mut all = window;
                all.iter_mut()
                    .zip(&censored)
                    .for_each(|(sum, count)| *sum += count);
                window_delay(&all, 1.0, self.config.min_samples).map(Duration::from_micros)
            }
            Choice::Quantile => {
                window_delay(&window, self.config.quantile, self.config.min_samples)
                    .map(Duration::from_micros)
            }
            Choice::Optimal { copies } => (total >= u64::from(self.config.min_samples.max(1)))
                .then(|| {
                    self.optimal(
                        &window,
                        &censored,
                        copies,
                        self.supply(shown[HEDGED], shown[REFUSED], total),
                    )
                })
                .flatten(),
        };
        let estimate = estimate.map(|delay| delay.clamp(self.min_delay, self.max_delay));
        // The bounds are at most `MAX_ESTIMATE`, so the estimate fits below `NO_ESTIMATE`.
        estimate.map_or(NO_ESTIMATE, nanos)
    }

    /// The delay the model predicts minimises the quantile of call latency for calls of
    /// up to `copies` copies, with `supply` extra copies per call granted (or, `None`, no
    /// budget), from the window's ended and censored latencies.
    fn optimal(
        &self,
        ended: &[u64; BUCKETS],
        censored: &[u64; BUCKETS],
        copies: u8,
        supply: Option<f64>,
    ) -> Option<Duration> {
        let mut above = [0.0; BUCKETS];
        kaplan_meier(ended, censored, &mut above);
        let goal = Goal::new(self.config.quantile)
            .copies(copies.into())
            .bounds(self.min_delay, self.max_delay);
        let goal = match supply {
            Some(supply) => goal.budget(supply),
            None => goal,
        };
        Survival::new(&EDGES_NANOS, &above)
            .choose(&goal)
            .map(|choice| choice.delay)
    }

    /// The extra copies per call the budget will really grant: its ratio, less where it
    /// refused copies in the window (the slow calls came together and emptied it), down
    /// to the copies it did grant per call as the refusals grow. `None` without a budget
    /// of a ratio (none, or a throttling one).
    fn supply(&self, hedged: u64, refused: u64, total: u64) -> Option<f64> {
        let ratio = self.budget.as_ref()?.extra_ratio()?;
        if refused == 0 || total == 0 {
            return Some(ratio);
        }
        let granted = (hedged as f64 / total as f64).min(ratio);
        let refused_share = refused as f64 / (hedged + refused) as f64;
        Some(ratio * (1.0 - refused_share) + granted * refused_share)
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
