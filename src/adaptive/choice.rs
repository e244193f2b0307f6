//! How a tracker turns its window into a delay: the quantile of `adaptive_delay` or the
//! model's choice of `optimal_delay`, the queueing guard and its probes, and the budget's
//! headroom learnt from refusals.

use core::time::Duration;

use super::histogram::{is_queue, median_micros, window_delay, BUCKETS, EDGES_NANOS};
use super::{
    nanos, Choice, LatencyTracker, HEDGED, HEDGE_WON, NO_ESTIMATE, PACED, PACE_FACTOR, REFUSED,
    SHOWN, SLOTS, SLOTS_PER_WINDOW, STRIPE_LEN, TURNING,
};
use crate::budget::Budget;
use crate::model::{kaplan_meier, Goal, Survival};
use crate::sync::Ordering::{Acquire, Relaxed, Release};

/// How many times `min_samples` a revisit of the first estimate needs to make it again.
const REVISIT_SAMPLES: u32 = 4;

impl LatencyTracker {
    /// The estimate, in nanoseconds or [`NO_ESTIMATE`], of a window's worth of slots: the
    /// complete ones before `current`, or with `with_current`, `current` and the three
    /// before it.
    pub(super) fn estimate(&self, current: u64, with_current: bool, samples: u32) -> u64 {
        let above = current.checked_add(u64::from(with_current));
        // Newest first: each slot of the window, and its row of the ring. With `current`,
        // a window's worth of slots ending with it: never the row a turn may be clearing.
        let slots: [Option<(u64, usize)>; SLOTS as usize] = core::array::from_fn(|back| {
            let slot = above?.checked_sub(back as u64 + 1)?;
            (back < SLOTS_PER_WINDOW as usize).then_some((slot, (slot % SLOTS) as usize))
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
        let mut hedging: [Option<(f64, u64)>; SLOTS as usize] = [None; SLOTS as usize];
        // The calls that answered at their first poll, counted as answering at once.
        let mut at_once = 0;
        for (back, at) in slots.into_iter().enumerate() {
            let Some((number, at)) = at else { continue };
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
            // The calls that answered at their first poll recorded nothing: the model
            // counts them as answering at once. (The queueing guard below reads the calls
            // that waited: where most answer at once, their median says nothing of a pace.)
            if let Some(answers) = &self.answers {
                let recorded = slot.iter().sum::<u64>();
                let answered = answers.won_in(number, current).saturating_sub(recorded);
                window[0] += answered;
                at_once += answered;
            }
            let slot_shown = self.shown_in(at as u64);
            let (hedged, refused) = (
                u64::from(slot_shown[HEDGED].load(Relaxed)),
                u64::from(slot_shown[REFUSED].load(Relaxed)),
            );
            let won = u64::from(slot_shown[HEDGE_WON].load(Relaxed));
            let won_paced = u64::from(slot_shown[PACED].load(Relaxed));
            let estimated = self.estimated_from.load(Relaxed) < current;
            if back == 0 && !with_current && estimated {
                newest_shown = [hedged, refused, won, won_paced];
            }
            shown[HEDGED] += hedged;
            shown[REFUSED] += refused;
            shown[HEDGE_WON] += won;
            shown[PACED] += won_paced;
            let calls: u64 = slot.iter().sum();
            if calls >= MIN_ASKED {
                hedging[back] = Some((hedged as f64 / calls as f64, median_micros(&slot)));
            }
            if back < 2 && slot.iter().any(|&count| count > 0) {
                newest += 1;
                queueing += usize::from(is_queue(&slot));
            }
        }
        let total = window.iter().chain(&censored).sum::<u64>();
        // The healthy pace the next slot's winning hedges are held to: a multiple of the
        // median of the calls that waited.
        let mut waited = window;
        waited[0] -= at_once;
        let pace = median_micros(&waited).saturating_mul(PACE_FACTOR);
        if pace > 0 {
            self.pace_micros
                .store(u32::try_from(pace).unwrap_or(u32::MAX), Relaxed);
        }
        // Slow calls in a crowd are a queue, unless the hedges showed otherwise: most of
        // them won, most of their wins came at the healthy pace (the copies were not
        // queued as the originals were: the slowness was not shared), and the median did
        // not rise with the share of calls hedged (the copies did not load a queue).
        let unshared = shown[HEDGED] >= MIN_ASKED
            && shown[HEDGE_WON] * 2 >= shown[HEDGED]
            && shown[PACED] * 2 >= shown[HEDGE_WON]
            && !median_rises_with_hedging(&hedging);
        // An estimate before the first turn has one slot, the one being filled, and its
        // first latencies: too few to tell a queue from a pause that has not ended.
        let crowd = queueing == newest && (newest == 2 || (newest == 1 && !with_current));
        let queue = crowd && !unshared;
        let estimate = match self.config.choice {
            // In every delay mode, a queue is hedged only past its slowest recent latency;
            // one slot in `PROBE_EVERY` past its p98, so a few hedges keep showing what
            // they do.
            _ if queue => {
                let mut all = window;
                all.iter_mut()
                    .zip(&censored)
                    .for_each(|(sum, count)| *sum += count);
                let past = if current.is_multiple_of(PROBE_EVERY) {
                    PROBE_QUANTILE
                } else {
                    1.0
                };
                window_delay(&all, past, samples).map(Duration::from_micros)
            }
            Choice::Quantile => {
                window_delay(&window, self.config.quantile, samples).map(Duration::from_micros)
            }
            Choice::Optimal { copies } => (total >= u64::from(samples.max(1)))
                .then(|| self.optimal(&window, &censored, copies, newest_shown))
                .flatten(),
        };
        let (min_delay, max_delay) = self.bounds();
        let estimate = estimate.map(|delay| delay.clamp(min_delay, max_delay));
        // The bounds are at most `MAX_ESTIMATE`, so the estimate fits below `NO_ESTIMATE`.
        estimate.map_or(NO_ESTIMATE, nanos)
    }

    /// After a first estimate made at `now_nanos`, before `slot` completes: sets the slot's
    /// end to the revisit, the next of the slot's start plus a half, a quarter, an eighth
    /// (and so on) of a slot, so the estimate is made again each time the time observed
    /// about doubles, and a slow call has had the time to end. A turn under way, or made
    /// meanwhile, has the last word.
    pub(super) fn plan_revisit(&self, slot: u64, now_nanos: u64) {
        let end = self.end_of(slot);
        let revisit = self.next_revisit(slot, now_nanos);
        let _ = self
            .slot_end_nanos
            .compare_exchange(end, revisit, Relaxed, Relaxed);
    }

    /// At a revisit `end` of the first estimate in `slot`, at `now_nanos`: the thread that
    /// claims it (as a turn is claimed: no turn overlaps it) makes the estimate again from
    /// what is known, the slot being filled included, and sets the next revisit, or the
    /// slot's own end.
    pub(super) fn revisit(&self, slot: u64, end: u64, now_nanos: u64) {
        if end >= self.end_of(slot)
            || self
                .slot_end_nanos
                .compare_exchange(end, TURNING, Acquire, Relaxed)
                .is_err()
        {
            return;
        }
        // Made again from too few latencies, the estimate would move with their noise.
        let samples = self.config.min_samples.saturating_mul(REVISIT_SAMPLES);
        let estimate = self.estimate(slot, true, samples);
        if estimate != NO_ESTIMATE {
            self.estimate_nanos.store(estimate, Relaxed);
        }
        let revisit = self.next_revisit(slot, now_nanos);
        self.slot_end_nanos.store(revisit, Release);
    }

    /// The first of `slot`'s start plus a half, a quarter, an eighth (and so on) of a slot
    /// that is past `now_nanos`: the slot's end where none is.
    fn next_revisit(&self, slot: u64, now_nanos: u64) -> u64 {
        let end = self.end_of(slot);
        let start = end.saturating_sub(self.slot_nanos);
        let observed = now_nanos.saturating_sub(start);
        let mut after = self.slot_nanos;
        while after / 2 > observed {
            after /= 2;
        }
        start.saturating_add(after).min(end)
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
        let (min_delay, max_delay) = self.bounds();
        let goal = Goal::new(self.config.quantile)
            .copies(copies.into())
            .bounds(min_delay, max_delay);
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
    /// planned for is cut by that much; a slot refused no more than predicted wins back
    /// half of what was cut.
    fn plan_headroom(
        &self,
        survival: &Survival<'_>,
        goal: Goal,
        [hedged, refused, ..]: [u64; SHOWN],
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
pub(super) fn median_rises_with_hedging(paced: &[Option<(f64, u64)>]) -> bool {
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
pub(super) const PROBE_EVERY: u64 = 4;
/// ...past this quantile of its latencies: few enough copies not to load it.
const PROBE_QUANTILE: f64 = 0.98;

/// A whole headroom, in thousandths.
pub(super) const FULL_HEADROOM: u32 = 1000;
/// The fewest calls asking for a copy in a slot that move the headroom.
const MIN_ASKED: u64 = 20;
