//! How copies leave the race and how the race ends: verdicts, the kept result, the
//! budget's slots and tokens, the stats.

use core::sync::atomic::{fence, Ordering::Release};
use core::time::Duration;

use super::clock::{Due, Pass, Times};
use super::kept::Lost;
use super::outcome::{End, Finished};
use super::{Race, Timed};
use crate::adaptive::{Ending, Sample, Shown, UNKNOWN_PACE};
use crate::attempt::{Classify, Verdict};
use crate::keyed::{Key, Turn};
use crate::policy::Settings;
use crate::stats::Counter;
use crate::timeout::Deadlines;
use crate::timer::Timer;

impl<T, E> Race<T, E> {
    /// Books copy `index` as finished with `verdict` (from [`verdict`]); `Some` when
    /// it ends the race. A hedge that lost is already dropped: its budget slot comes back.
    #[inline]
    pub(crate) fn settle<Tm: Timer, D>(
        &mut self,
        index: usize,
        finished: Finished<T, E>,
        verdict: Option<Verdict>,
        pass: &mut Pass<'_, Tm, D>,
    ) -> Option<End<T, E>> {
        self.in_flight &= !(1 << index);
        if self.slots != 0 {
            self.release_slot(index, pass.settings);
        }
        match (finished, verdict) {
            // The common end, kept inline: the rest of the bookkeeping is for losers.
            (Finished::Item(result), Some(Verdict::Win)) => {
                pass.settings.copy_won();
                Some(End::Won { index, result })
            }
            lost => self.settle_loss(index, lost, pass),
        }
    }

    /// [`Race::settle`] for every end but a win: copy `index`, finished as `lost` says.
    #[inline(never)]
    fn settle_loss<Tm: Timer, D>(
        &mut self,
        index: usize,
        lost: (Finished<T, E>, Option<Verdict>),
        pass: &mut Pass<'_, Tm, D>,
    ) -> Option<End<T, E>> {
        let Pass {
            settings, clock, ..
        } = pass;
        let (result, verdict) = match lost {
            (Finished::Item(result), Some(verdict)) => (result, verdict),
            (Finished::Item(_), None) => unreachable!("a result always has a verdict"),
            (Finished::Ended, _) => {
                self.failed(index, None, true, settings);
                return None;
            }
            #[cfg(feature = "std")]
            (Finished::Panicked(panic), _) => {
                self.failed(index, Some(Lost::Panicked(panic)), true, settings);
                return None;
            }
        };
        match verdict {
            Verdict::Win => unreachable!("`Race::settle` ends a race that was won"),
            Verdict::Fatal => Some(End::Failed(result)),
            Verdict::Withdraw => {
                self.kept.keep(index, Lost::Withdrawn(result));
                None
            }
            Verdict::Retry => {
                self.failed(index, Some(Lost::Failed(result)), true, settings);
                None
            }
            Verdict::RetryAfter(after) => {
                if self.launched < self.max_copies {
                    // The server's word beats the schedule and every early start.
                    let due = clock.now(&settings.timer).saturating_add(after);
                    self.start_clock(clock, &settings.timer).next_due = if due < Duration::MAX {
                        Due::At(due)
                    } else {
                        Due::Never
                    };
                    self.held = true;
                }
                self.failed(index, Some(Lost::Failed(result)), false, settings);
                None
            }
            Verdict::Stop => {
                self.max_copies = self.launched;
                self.held = false;
                self.failed(index, Some(Lost::Failed(result)), false, settings);
                None
            }
        }
    }

    /// Copy `index` ran out of its attempt timeout and was dropped: a failure, with the
    /// call's `Elapsed` error, not shown to the classifier.
    pub(crate) fn timed_out<Tm, D: Deadlines<E>>(&mut self, index: usize, pass: &Pass<'_, Tm, D>) {
        self.in_flight &= !(1 << index);
        if self.slots != 0 {
            self.release_slot(index, pass.settings);
        }
        let elapsed = Lost::Failed(Err(pass.deadlines.elapsed()));
        self.failed(index, Some(elapsed), true, pass.settings);
    }

    /// Books a failed copy: kept if it beats the one kept, charged to a throttling
    /// budget, and owed a replacement under `replace_failed` unless a pushback decides.
    fn failed<Tm>(
        &mut self,
        index: usize,
        lost: Option<Lost<T, E>>,
        replace: bool,
        settings: &Settings<Tm>,
    ) {
        #[cfg(feature = "std")]
        let panicked = matches!(lost, Some(Lost::Panicked(_)));
        #[cfg(not(feature = "std"))]
        let panicked = false;
        crate::trace::copy_failed(&settings.name, index, self.max_copies.into(), panicked);
        settings.copy_failed();
        if replace && settings.replace_failed {
            self.owed = self.owed.saturating_add(1);
        }
        if let Some(lost) = lost {
            self.kept.keep(index, lost);
        }
    }

    /// Gives back copy `index`'s slot, if it holds one: it was just dropped.
    #[cold]
    fn release_slot<Tm>(&mut self, index: usize, settings: &Settings<Tm>) {
        if self.slots & (1 << index) != 0 {
            self.slots &= !(1 << index);
            settings.release_slots(1);
        }
    }

    /// Gives back every slot the call's copies hold, once they were dropped.
    #[cold]
    fn release_all_slots<Tm>(&mut self, settings: &Settings<Tm>) {
        settings.release_slots(self.slots.count_ones());
        self.slots = 0;
    }

    /// Records the end of the race once the poller dropped its copies (all of them, or
    /// all but a stream's winner): the original's latency, the budget slots, the stats.
    /// `original_alive`: whether the original was still running when the race ended.
    #[inline(always)]
    pub(crate) fn conclude<Tm: Timer>(
        &mut self,
        settings: &Settings<Tm>,
        end: &End<T, E>,
        original_alive: bool,
    ) {
        // The clock runs only once a call waited: an instant answer skips all of this.
        if let (Some(_), Some(times)) = (settings.schedule.tracker(), &self.times) {
            // The original's latency: exact if it won, a lower bound if it loses now.
            let original_won = matches!(end, End::Won { index: 0, .. });
            if original_won || original_alive {
                let shown = Shown::default()
                    .with(
                        Shown::HEDGED,
                        matches!(self.timed, Timed::Hedged | Timed::Probed),
                    )
                    .with(Shown::HEDGE_WON, matches!(end, End::Won { index: 1.., .. }))
                    .with(Shown::REFUSED, self.refused != 0)
                    .with(Shown::CENSORED, !original_won);
                record_latency(settings, times, shown, self.key);
            } else if self.key.is_some() {
                // No latency to record, but the key's call ended: its lookup marks it used.
                key_ended(settings, self.key);
            }
        }
        if settings.withhold.is_some() && matches!(self.timed, Timed::Hedged | Timed::Probed) {
            let hedge_won = matches!(end, End::Won { index: 1.., .. });
            record_win(settings, self.key, hedge_won, self.timed == Timed::Probed);
        }
        // Losers first, then their budget slots: a slot is held exactly while its copy lives.
        if self.slots != 0 {
            self.release_all_slots(settings);
        }
        // A failure kept in case no copy won goes with the other losers.
        self.kept.clear();
        let (outcome, hedge_win) = match end {
            End::Won { index, .. } => {
                crate::trace::won(&settings.name, *index, self.launched.into());
                (Counter::Wins, *index > 0)
            }
            _ => (Counter::Failures, false),
        };
        if self.asked {
            // Counted after its ask, for whoever reads the counts (`Budget::admit`).
            fence(Release);
        }
        if hedge_win {
            settings.counters.add(&[outcome, Counter::HedgeWins]);
        } else {
            settings.counters.add(&[outcome]);
        }
    }

    /// Gives back the slots of a call dropped mid-race, after its copies were dropped.
    #[cold]
    pub(crate) fn cancel<Tm>(&mut self, settings: &Settings<Tm>) {
        if self.slots != 0 {
            self.release_all_slots(settings);
        }
        if self.asked {
            fence(Release); // as in `Race::conclude`
        }
        settings.counters.add(&[Counter::Cancelled]);
    }
}

/// The verdict on a finished copy; `None` when it left without a result.
#[inline]
pub(crate) fn verdict<T, E, C: Classify<T, E>>(
    finished: &Finished<T, E>,
    classify: &mut C,
) -> Option<Verdict> {
    match finished {
        Finished::Item(result) => Some(classify.verdict(result)),
        Finished::Ended => None,
        #[cfg(feature = "std")]
        Finished::Panicked(_) => None,
    }
}

/// The end of a call whose original won while it was the only copy started and the
/// call's clock never ran: no race made, nothing to give back, nothing to record but the
/// win.
#[inline]
pub(crate) fn won_without_race<Tm>(settings: &Settings<Tm>) {
    settings.counters.add(&[Counter::Wins]);
    settings.copy_won();
}

/// Counts a call dropped while its original ran alone, with no race made.
#[cold]
pub(crate) fn cancelled_without_race<Tm>(settings: &Settings<Tm>) {
    settings.counters.add(&[Counter::Cancelled]);
}

/// Records the original's latency (or its age, censored) and what the hedges `shown`
/// with the adaptive delay's tracker, and with its key's if it has one. Where a hedge won,
/// its own latency is counted from the latest copy's start: exact where the winner is the
/// copy started last (always, with two copies); where an earlier hedge won after a later
/// one started, the time since the later start, shorter than its own.
#[cold]
#[inline(never)]
fn record_latency<Tm: Timer>(
    settings: &Settings<Tm>,
    times: &Times,
    shown: Shown,
    key: Option<Key>,
) {
    if let Some(tracker) = settings.schedule.tracker() {
        let now = settings.timer.now();
        let ending = Ending {
            sample: Sample::new(now.saturating_sub(times.first_start), now),
            shown,
            hedge_nanos: if shown.hedge_won() {
                crate::adaptive::nanos(now.saturating_sub(times.latest_start))
            } else {
                UNKNOWN_PACE
            },
        };
        tracker.record_ending(&ending);
        if let Some(entry) = settings.kept(key) {
            if let Some(tracker) = &entry.tracker {
                tracker.record_key_ending(&ending);
            }
        }
    }
}

/// A call of `key` ended with no latency to record: its place, if kept, is in use now.
#[cold]
#[inline(never)]
fn key_ended<Tm: Timer>(settings: &Settings<Tm>, key: Option<Key>) {
    settings.entry(key, settings.timer.now());
}

/// Records whether a hedge won a call in which the clock started one: the win rate of
/// `min_win_rate`, the key's if it is kept.
#[cold]
#[inline(never)]
fn record_win<Tm: Timer>(settings: &Settings<Tm>, key: Option<Key>, won: bool, probe: bool) {
    let now = settings.timer.now();
    let Some((withhold, rate)) = settings.win_rate_for(key, now) else {
        return;
    };
    let turn = rate.record(withhold, won, probe);
    if turn != Turn::Same {
        let key = key.map_or(0, Key::get);
        crate::trace::withholding(&settings.name, key, turn == Turn::Withholding, rate.rate());
    }
}
