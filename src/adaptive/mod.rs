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

use self::histogram::{bucket_of, is_queue, median_micros, window_delay, BUCKETS, EDGES_NANOS};

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
    fn has(self, count: usize) -> bool {
        self.0 & (1 << count) != 0
    }

    fn is_censored(self) -> bool {
        self.0 & Shown::CENSORED.0 != 0
    }
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
    /// The share of its ratio the budget is planned to grant, in thousandths: lowered by
    /// the refusals of each slot that completes (the slow calls came together and emptied
    /// the bucket before its ratio said), raised again by slots without any.
    headroom: AtomicU32,
    /// The first slot whose every call was hedged at an estimate (`u64::MAX` before the
    /// first estimate): the headroom learns from no slot before it.
    estimated_from: AtomicU64,
    /// The budget whose ratio bounds the extra copies [`Choice::Optimal`] plans for.
    budget: Option<Budget>,
}

/// The counts of what hedges showed, per slot.
const SHOWN: usize = 3;
/// Calls in which the clock started a copy.
const HEDGED: usize = 0;
/// Calls in which the budget refused a copy.
const REFUSED: usize = 1;
/// Calls a copy other than the original won.
const HEDGE_WON: usize = 2;

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
            headroom: AtomicU32::new(FULL_HEADROOM),
            estimated_from: AtomicU64::new(u64::MAX),
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
        self.headroom.store(FULL_HEADROOM, Relaxed);
        self.estimated_from.store(u64::MAX, Relaxed);
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
            shown: Shown::default(),
        });
    }

    /// Records what a call showed at its end: the original's latency (or, censored, its
    /// age when dropped), and what its hedges showed. A policy's and a key's tracker
    /// record the same ending.
    #[inline(always)]
    pub(crate) fn record_ending(&self, ending: &Ending) {
        let Sample { bucket, now_nanos } = ending.sample;
        let slot = if now_nanos >= self.slot_end_nanos.load(Relaxed) {
            self.rotate(now_nanos / self.slot_nanos)
        } else {
            self.current_slot.load(Relaxed)
        };
        let row = (slot % SLOTS) as usize * BUCKETS;
        // The common ending, an original that answered in a call that asked for no
        // copy, tests one byte; a censored latency or hedges to show take the cold path.
        if ending.shown != Shown::default() {
            self.record_unusual(slot, row + bucket, ending);
        } else {
            self.count_ended(row + bucket);
        }
        if self.estimate_nanos.load(Relaxed) == NO_ESTIMATE {
            self.recorded_without_estimate(slot);
        }
    }

    /// Counts a latency that ended, at `at` (its row of the ring and its bucket).
    #[inline(always)]
    fn count_ended(&self, at: usize) {
        // A key's tracker has one stripe: no need to ask which thread this is.
        let stripe = match self.stripe_mask {
            0 => 0,
            mask => stripe() & mask,
        };
        self.counts[stripe * STRIPE_LEN + at].fetch_add(1, Relaxed);
    }

    /// Records an ending that is censored or shows what hedges did, in `slot`, at `at`.
    #[cold]
    fn record_unusual(&self, slot: u64, at: usize, ending: &Ending) {
        if ending.shown.is_censored() && !self.censored.is_empty() {
            self.censored[at].fetch_add(1, Relaxed);
        } else {
            self.count_ended(at);
        }
        self.show(slot, ending.shown);
    }

    /// The counts of what hedges showed in the slot at `row` of the ring.
    fn shown_in(&self, row: u64) -> &[AtomicU32] {
        let at = row as usize * SHOWN;
        &self.shown[at..at + SHOWN]
    }

    /// Counts what a call's hedges showed, in `slot`.
    fn show(&self, slot: u64, shown: Shown) {
        for (count, counter) in self.shown_in(slot % SLOTS).iter().enumerate() {
            if shown.has(count) {
                counter.fetch_add(1, Relaxed);
            }
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
            if estimate != NO_ESTIMATE {
                self.estimated_from
                    .fetch_min(slot.saturating_add(1), Relaxed);
            }
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
                let estimate = self.estimate(slot, false);
                if estimate != NO_ESTIMATE {
                    self.estimated_from.fetch_min(slot, Relaxed);
                }
                self.estimate_nanos.store(estimate, Relaxed);
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
        // What hedges showed in the window, and in the slot that just completed.
        let (mut shown, mut newest_shown) = ([0u64; SHOWN], [0u64; SHOWN]);
        // Per slot with enough calls: the share of them hedged, and their median.
        let mut paced: [Option<(f64, u64)>; SLOTS as usize] = [None; SLOTS as usize];
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
            let slot_shown = self.shown_in(at as u64);
            let (hedged, refused) = (
                u64::from(slot_shown[HEDGED].load(Relaxed)),
                u64::from(slot_shown[REFUSED].load(Relaxed)),
            );
            let won = u64::from(slot_shown[HEDGE_WON].load(Relaxed));
            let estimated = self.estimated_from.load(Relaxed) < current;
            if back == 0 && !with_current && estimated {
                newest_shown = [hedged, refused, won];
            }
            shown[HEDGED] += hedged;
            shown[REFUSED] += refused;
            shown[HEDGE_WON] += won;
            let calls: u64 = slot.iter().sum();
            if calls >= MIN_ASKED {
                paced[back] = Some((hedged as f64 / calls as f64, median_micros(&slot)));
            }
            if back < 2 && slot.iter().any(|&count| count > 0) {
                newest += 1;
                queueing += usize::from(is_queue(&slot));
            }
        }
        let total = window.iter().chain(&censored).sum::<u64>();
        // Slow calls in a crowd are a queue. With `optimal_delay`, unless the hedges
        // showed otherwise: most of them won (the slowness was not shared) and the median
        // did not rise with the share of calls hedged (the copies did not load a queue).
        // `adaptive_delay` keeps to the crowd alone: hedging at its p95 whenever hedges
        // win costs a loaded queue's median more than 5% (the lab's workload (e) at 90%).
        let unshared = matches!(self.config.choice, Choice::Optimal { .. })
            && shown[HEDGED] >= MIN_ASKED
            && shown[HEDGE_WON] * 2 >= shown[HEDGED]
            && !median_rises_with_hedging(&paced);
        let crowd = newest > 0 && queueing == newest;
        let queue = crowd && !unshared;
        let estimate = match self.config.choice {
            // A queue is hedged only past its slowest recent latency; one slot in
            // `PROBE_EVERY` past its p98, so a few hedges keep showing what they do.
            Choice::Optimal { .. } | Choice::Quantile if queue => {
                let mut all = window;
                all.iter_mut()
                    .zip(&censored)
                    .for_each(|(sum, count)| *sum += count);
                let past = if current.is_multiple_of(PROBE_EVERY) {
                    PROBE_QUANTILE
                } else {
                    1.0
                };
                window_delay(&all, past, self.config.min_samples).map(Duration::from_micros)
            }
            Choice::Quantile => {
                window_delay(&window, self.config.quantile, self.config.min_samples)
                    .map(Duration::from_micros)
            }
            Choice::Optimal { copies } => (total >= u64::from(self.config.min_samples.max(1)))
                .then(|| self.optimal(&window, &censored, copies, newest_shown))
                .flatten(),
        };
        let estimate = estimate.map(|delay| delay.clamp(self.min_delay, self.max_delay));
        // The bounds are at most `MAX_ESTIMATE`, so the estimate fits below `NO_ESTIMATE`.
        estimate.map_or(NO_ESTIMATE, nanos)
    }

    /// The delay the model predicts minimises the quantile of call latency for calls of
    /// up to `copies` copies, from the window's ended and censored latencies, within what
    /// the budget will really grant: the headroom is first moved by what the slot that
    /// just completed `shown` (see [`LatencyTracker::plan_headroom`]).
    fn optimal(
        &self,
        ended: &[u64; BUCKETS],
        censored: &[u64; BUCKETS],
        copies: u8,
        shown: [u64; SHOWN],
    ) -> Option<Duration> {
        let mut above = [0.0; BUCKETS];
        kaplan_meier(ended, censored, &mut above);
        let survival = Survival::new(&EDGES_NANOS, &above);
        let goal = Goal::new(self.config.quantile)
            .copies(copies.into())
            .bounds(self.min_delay, self.max_delay);
        let Some(ratio) = self.budget.as_ref().and_then(Budget::extra_ratio) else {
            return survival.choose(&goal).map(|choice| choice.delay);
        };
        self.plan_headroom(&survival, goal.budget(ratio), shown);
        let headroom = f64::from(self.headroom.load(Relaxed)) / f64::from(FULL_HEADROOM);
        survival
            .choose(&goal.budget(ratio * headroom))
            .map(|choice| choice.delay)
    }

    /// Plans for the budget as it really grants: where the slot that just completed saw
    /// more of its asks refused than the model predicted at the delay it hedged at (the
    /// slow calls came together and emptied the bucket before its ratio said), the ratio
    /// planned for is cut by that much; a slot refused no more than predicted wins a
    /// tenth of it back.
    fn plan_headroom(
        &self,
        survival: &Survival<'_>,
        goal: Goal,
        [hedged, refused, _]: [u64; SHOWN],
    ) {
        let asked = hedged + refused;
        let used = self.estimate_nanos.load(Relaxed);
        if asked < MIN_ASKED || used == NO_ESTIMATE {
            return;
        }
        let headroom = self.headroom.load(Relaxed);
        let planned = goal.budget.map_or(0.0, |ratio| {
            ratio * f64::from(headroom) / f64::from(FULL_HEADROOM)
        });
        let predicted = survival
            .predict_for(
                &Goal {
                    budget: Some(planned),
                    ..goal
                },
                Duration::from_nanos(used),
            )
            .granted;
        let granted = hedged as f64 / asked as f64;
        let headroom = if granted < predicted - 0.02 {
            (f64::from(headroom) * granted / predicted) as u32
        } else {
            headroom + (FULL_HEADROOM - headroom.min(FULL_HEADROOM)) / 2
        };
        self.headroom
            .store(headroom.clamp(FULL_HEADROOM / 2, FULL_HEADROOM), Relaxed);
    }
}

/// Whether the slots hedged most had a median well above the slots hedged least: the
/// copies loaded a queue. `paced`: per slot, the share of calls hedged and the median.
fn median_rises_with_hedging(paced: &[Option<(f64, u64)>]) -> bool {
    let slots = paced.iter().flatten();
    let count = slots.clone().count() as f64;
    if count < 2.0 {
        return false;
    }
    let mean_share = slots.clone().map(|(share, _)| share).sum::<f64>() / count;
    let (mut more, mut fewer) = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0));
    for &(share, median) in slots {
        let group = if share > mean_share {
            &mut more
        } else {
            &mut fewer
        };
        *group = (group.0 + share, group.1 + median as f64, group.2 + 1.0);
    }
    if more.2 == 0.0 || fewer.2 == 0.0 {
        return false;
    }
    let (share_more, share_fewer) = (more.0 / more.2, fewer.0 / fewer.2);
    let (median_more, median_fewer) = (more.1 / more.2, fewer.1 / fewer.2);
    share_more - share_fewer >= 0.03
        && median_more > median_fewer * RISE
        && median_more - median_fewer >= RISE_MICROS
}

/// How far the median of the slots hedged most must be above the others' to say the
/// copies loaded a queue: a quarter, and at least 100 µs, which a loopback backend's
/// scheduling jitter at a 70 µs median does not fake.
const RISE: f64 = 1.25;
const RISE_MICROS: f64 = 100.0;
/// A queue is probed with hedges one slot in this many...
const PROBE_EVERY: u64 = 4;
/// ...past this quantile of its latencies: few enough copies not to load it.
const PROBE_QUANTILE: f64 = 0.98;

/// A whole headroom, in thousandths.
const FULL_HEADROOM: u32 = 1000;
/// The fewest calls asking for a copy in a slot that move the headroom.
const MIN_ASKED: u64 = 20;

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
