//! The latency tracker behind [`PolicyBuilder::adaptive_delay`](crate::PolicyBuilder::adaptive_delay)
//! and [`PolicyBuilder::optimal_delay`](crate::PolicyBuilder::optimal_delay): a lock-free,
//! decaying histogram of copy latencies and the delay it suggests.
//!
//! - `mod.rs`: the ring of slots and its recording.
//! - `choice.rs`: how a window becomes a delay (a quantile, or the model's choice within
//!   the budget's headroom), the queueing guard and its probes.
//! - `ending.rs`: what a call's end tells the tracker (its sample, what hedges showed,
//!   the winning hedge's own latency) and how a slot counts it: with `optimal_delay`, a
//!   censored latency (an original dropped still running) in counters of its own; what
//!   hedges showed (started, won, refused, won at the healthy pace) per slot.
//! - `answers.rs`: the calls answered at their first poll, for `optimal_delay`.
//! - `histogram.rs`: the buckets' arithmetic.
//!
//! Latencies go into a log-linear histogram (16 buckets per power of two from 16 µs, exact
//! below: at most 6.25% relative error) of atomic counters. Time is cut into slots of a
//! quarter window; a ring of five slots keeps the last four complete ones plus the one
//! being filled. When a recording lands in a new slot, the recorder that claims the turn
//! clears the slot it reuses, makes it current and recomputes the estimate from the four
//! complete slots (turns never overlap, and a row is current only once cleared), so
//! a delay read is one atomic load and a recording is one `fetch_add` (two on a slot
//! change per quarter window). Until there is an estimate, every `min_samples`-th
//! recording publishes one from the slot being filled as well, so the first estimate
//! comes as soon as enough latencies are known, not when the first quarter window ends.
//!
//! The estimate hedges stragglers, not a queue. When, in each of the two newest slots
//! that hold latencies, more than a tenth of the latencies exceed four times the slot's
//! median, the slow calls are a crowd: the backend is queueing, and extra copies would only
//! lengthen the queue. The estimate is then the window's slowest latency (one slot in four
//! its p98, a probe), so only calls slower than any recent one are hedged. (One slot alone
//! may straddle a shift of the median, which looks the same; two in a row do not.) A crowd
//! is not a queue when most of the window's hedged calls were won by a hedge, most of
//! those at the healthy pace (the hedge's own latency within twice the window's median:
//! `ending.rs` counts them), and the median did not rise with the share of calls hedged.
//!
//! We wrote the histogram instead of depending on `hdrhistogram` (not shareable without a
//! lock or per-thread recorders) or `histogram` (std only, no in-place clearing, and
//! every snapshot allocates): decay needs slots cleared in place, and the crate must build
//! without `std`.

use core::fmt;
use core::time::Duration;

use alloc::boxed::Box;

use crate::budget::Budget;
use crate::stats::Cells;
use crate::sync::{
    Arc, AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use self::answers::Answers;
use self::choice::FULL_HEADROOM;
use self::histogram::BUCKETS;

mod answers;
mod choice;
mod ending;
mod histogram;

pub(crate) use self::ending::{Ending, Sample, Shown, UNKNOWN_PACE};
use self::ending::{HEDGED, HEDGE_WON, PACED, PACE_FACTOR, REFUSED, SHOWN};

/// Slots in the ring: four complete ones make the window, one is being filled.
const SLOTS: u64 = 5;
/// Copies of the ring, so threads recording at once rarely share a cache line: a thread
/// records in the stripe of its stats slot, so with more threads than stripes, threads
/// whose slots collide share a stripe's bucket lines (a quarter of them each, with four).
/// The slot and the estimate every call reads are written once per quarter window.
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
/// The slot's end while a turn is under way: no time reaches it, so no other turn starts.
const TURNING: u64 = u64::MAX;
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

/// Tracks recent latencies of original copies and turns them into a hedge delay.
pub(crate) struct LatencyTracker {
    config: AdaptiveConfig,
    /// The delay before enough samples exist.
    fallback: Duration,
    /// `min_delay..=max_delay`, in nanoseconds (at most [`MAX_ESTIMATE`]'s): a key's
    /// tracker is kept small.
    bounds_nanos: (u64, u64),
    /// Nanoseconds per slot (a quarter window), at least 1.
    slot_nanos: u64,
    /// The slot being filled, as a count of slots since the clock's origin.
    current_slot: AtomicU64,
    /// When the slot being filled ends, in nanoseconds: a recording compares against it
    /// instead of dividing.
    slot_end_nanos: AtomicU64,
    /// Where the slot being filled starts in a stripe ([`row_of`] it): a recording reads
    /// it instead of taking the slot modulo the ring.
    current_row: AtomicU32,
    /// `STRIPES` stripes (or one) of `SLOTS` rows of `BUCKETS` counters.
    counts: Box<[AtomicU32]>,
    /// The stripes less one: a thread's stripe is its slot masked by it.
    stripe_mask: u32,
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
    /// The healthy pace, in microseconds: [`PACE_FACTOR`] times the window's median at
    /// the last estimate, 0 before it. A winning hedge this fast was not queued.
    pace_micros: AtomicU32,
    /// The share of its ratio the budget is planned to grant, in thousandths: lowered by
    /// the refusals of each slot that completes (the slow calls came together and emptied
    /// the bucket before its ratio said), raised again by slots without any.
    headroom: AtomicU32,
    /// The first slot whose every call was hedged at an estimate (`u64::MAX` before the
    /// first estimate): the headroom learns from no slot before it.
    estimated_from: AtomicU64,
    /// The budget whose ratio bounds the extra copies [`Choice::Optimal`] plans for.
    budget: Option<Budget>,
    /// The policy's wins per slot, whose calls answered at their first poll the window
    /// counts as answering at once: the policy's tracker's, not a key's.
    answers: Option<Box<Answers>>,
}

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
            bounds_nanos: (nanos(min_delay), nanos(max_delay)),
            slot_nanos,
            current_slot: AtomicU64::new(0),
            slot_end_nanos: AtomicU64::new(slot_nanos),
            current_row: AtomicU32::new(0),
            counts: (0..stripes * STRIPE_LEN)
                .map(|_| AtomicU32::new(0))
                .collect(),
            // A `u32`: with `current_row` one word, so a key's entry keeps its size.
            stripe_mask: (stripes - 1) as u32,
            estimate_nanos: AtomicU64::new(NO_ESTIMATE),
            unestimated: AtomicU32::new(0),
            censored: match config.choice {
                Choice::Optimal { .. } => (0..STRIPE_LEN).map(|_| AtomicU32::new(0)).collect(),
                Choice::Quantile => Box::new([]),
            },
            shown: (0..SLOTS as usize * SHOWN)
                .map(|_| AtomicU32::new(0))
                .collect(),
            pace_micros: AtomicU32::new(0),
            headroom: AtomicU32::new(FULL_HEADROOM),
            estimated_from: AtomicU64::new(u64::MAX),
            budget: budget.clone(),
            answers: None,
        }
    }

    /// The tracker, counting the calls that answered at their first poll from the wins
    /// `cells` count (see [`answers`]).
    pub(crate) fn counting_answers(mut self, cells: &Arc<Cells>) -> Self {
        self.answers = Some(Box::new(Answers::new(cells.clone())));
        self
    }

    /// The hedge delay at `now` (the policy's clock): the tracked quantile of the window
    /// before `now`, bounded by `min_delay..=max_delay`, or the fallback while that window
    /// holds too few samples.
    ///
    /// A read past the slot being filled moves the ring first, as a recording would, so
    /// an estimate never outlives its window: after an idle gap the fallback returns.
    #[inline]
    pub(crate) fn delay(&self, now: Duration) -> Duration {
        self.delay_at(nanos(now))
    }

    /// [`LatencyTracker::delay`] at `now_nanos`, the policy's clock in nanoseconds.
    #[inline]
    pub(crate) fn delay_at(&self, now_nanos: u64) -> Duration {
        if now_nanos >= self.slot_end_nanos.load(Relaxed) {
            self.rotate(now_nanos);
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
        self.headroom.store(FULL_HEADROOM, Relaxed);
        self.estimated_from.store(u64::MAX, Relaxed);
        self.unestimated.store(0, Relaxed);
        self.estimate_nanos.store(NO_ESTIMATE, Relaxed);
    }

    /// `min_delay` and `max_delay`.
    fn bounds(&self) -> (Duration, Duration) {
        let (min, max) = self.bounds_nanos;
        (Duration::from_nanos(min), Duration::from_nanos(max))
    }

    /// Every latency the ring counts, in any slot.
    #[cfg(loom)]
    pub(crate) fn counted(&self) -> u64 {
        self.counts
            .iter()
            .chain(self.censored.iter())
            .map(|count| u64::from(count.load(Relaxed)))
            .sum()
    }

    /// The delay before enough samples exist.
    pub(crate) fn fallback(&self) -> Duration {
        self.fallback
    }

    /// Records one latency observed at `now` (the policy's clock).
    #[inline]
    #[cfg(any(test, loom))]
    pub(crate) fn record(&self, latency: Duration, now: Duration) {
        self.record_ending(&Ending {
            sample: Sample::new(latency, now),
            shown: Shown::default(),
            hedge_nanos: UNKNOWN_PACE,
        });
    }

    /// Records what a call showed at its end: the original's latency (or, censored, its
    /// age when dropped), and what its hedges showed. A policy's and a key's tracker
    /// record the same ending.
    #[inline(always)]
    pub(crate) fn record_ending(&self, ending: &Ending) {
        self.record_in_stripe(ending, true);
    }

    /// [`LatencyTracker::record_ending`] for a key's tracker, made with one stripe
    /// ([`LatencyTracker::one_stripe`]): its latency is counted in the first stripe
    /// without asking which thread records (any stripe counts the same).
    #[inline(always)]
    pub(crate) fn record_key_ending(&self, ending: &Ending) {
        self.record_in_stripe(ending, false);
    }

    /// Records `ending`; `striped`: in this thread's stripe, else in the first.
    #[inline(always)]
    fn record_in_stripe(&self, ending: &Ending, striped: bool) {
        let Sample { bucket, now_nanos } = ending.sample;
        let row = if now_nanos >= self.slot_end_nanos.load(Relaxed) {
            row_of(self.rotate(now_nanos))
        } else {
            // Acquire: a row made current was cleared first.
            self.current_row.load(Acquire) as usize
        };
        // The common ending, an original that answered in a call that asked for no
        // copy, tests one byte; a censored latency or hedges to show take the cold path.
        if ending.shown != Shown::default() {
            self.record_unusual(row + bucket, ending);
        } else if striped {
            self.count_ended(row + bucket);
        } else {
            self.counts[row + bucket].fetch_add(1, Relaxed);
        }
        if self.estimate_nanos.load(Relaxed) == NO_ESTIMATE {
            self.recorded_without_estimate(now_nanos);
        }
    }

    /// Counts a latency that ended, at `at` (its row of the ring and its bucket).
    #[inline(always)]
    fn count_ended(&self, at: usize) {
        // A key's tracker has one stripe: no need to ask which thread this is.
        let stripe = match self.stripe_mask {
            0 => 0,
            mask => stripe() & mask as usize,
        };
        self.counts[stripe * STRIPE_LEN + at].fetch_add(1, Relaxed);
    }

    /// A latency was recorded at `now_nanos` while there was no estimate: once
    /// `min_samples` of them are known, the first estimate need not wait for its slot to
    /// complete; made from the calls that ended soonest, it is revisited until then.
    #[cold]
    fn recorded_without_estimate(&self, now_nanos: u64) {
        let slot = self.current_slot.load(Relaxed);
        let recorded = self.unestimated.fetch_add(1, Relaxed).wrapping_add(1);
        if recorded.is_multiple_of(self.config.min_samples.max(1)) {
            let estimate = self.estimate(slot, true, self.config.min_samples);
            // A rotation that published meanwhile has the last word.
            let published =
                self.estimate_nanos
                    .compare_exchange(NO_ESTIMATE, estimate, Relaxed, Relaxed);
            if estimate != NO_ESTIMATE {
                self.estimated_from
                    .fetch_min(slot.saturating_add(1), Relaxed);
                if published.is_ok() {
                    self.plan_revisit(slot, now_nanos);
                }
            }
        }
    }

    /// Moves the ring to `slot`: the thread that claims the turn clears the rows it reuses,
    /// then makes `slot` current, publishes the estimate of the window that just completed,
    /// and last sets the new slot's end, which lets the next turn be claimed. Returns the
    /// slot to record into.
    ///
    /// A recording counts in the slot current when it reads the ring: while a turn is under
    /// way that is still the old one, and a row is current only once it is cleared, so no
    /// recording is cleared away. Turns never overlap, so an estimate never reads a row a
    /// turn is clearing. (A recorder preempted between reading the slot and counting for
    /// longer than a whole window would count in the slot that reuses its row.)
    /// A slot's end may come early, a revisit ([`LatencyTracker::revisit`]).
    #[cold]
    fn rotate(&self, now_nanos: u64) -> u64 {
        let slot = now_nanos / self.slot_nanos;
        let seen = self.current_slot.load(Acquire);
        let end = self.slot_end_nanos.load(Relaxed);
        if slot == seen && end != TURNING {
            self.revisit(seen, end, now_nanos);
        }
        if slot <= seen || end == TURNING {
            return seen;
        }
        // The claim: a turn completed since `seen` was read changed `end`, and fails it.
        if self
            .slot_end_nanos
            .compare_exchange(end, TURNING, Acquire, Relaxed)
            .is_err()
        {
            return self.current_slot.load(Acquire);
        }
        let seen = self.current_slot.load(Relaxed);
        let slot = slot.max(seen);
        for stale in (seen + 1..=slot).rev().take(SLOTS as usize) {
            let row = row_of(stale);
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
            if let Some(answers) = &self.answers {
                answers.begin(stale);
            }
        }
        // The cleared rows before the slot that counts in them.
        self.current_row.store(row_of(slot) as u32, Release);
        self.current_slot.store(slot, Release);
        if slot > seen {
            let estimate = self.estimate(slot, false, self.config.min_samples);
            if estimate != NO_ESTIMATE {
                self.estimated_from.fetch_min(slot, Relaxed);
            }
            self.estimate_nanos.store(estimate, Relaxed);
        }
        self.slot_end_nanos.store(self.end_of(slot), Release);
        slot
    }

    /// When `slot` ends, in nanoseconds (short of [`TURNING`]).
    fn end_of(&self, slot: u64) -> u64 {
        let end = slot.saturating_add(1).saturating_mul(self.slot_nanos);
        end.min(TURNING - 1)
    }
}

/// Where `slot` starts in a stripe of the ring.
#[inline(always)]
fn row_of(slot: u64) -> usize {
    (slot % SLOTS) as usize * BUCKETS
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
            .field("min_delay", &self.bounds().0)
            .field("max_delay", &self.bounds().1)
            .field("estimate", &self.estimate_nanos.load(Relaxed))
            .finish()
    }
}

#[cfg(test)]
mod tests;
