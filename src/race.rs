//! The race's decisions: when each copy starts, what a finished copy means for the call,
//! which failure to keep, the budget's slots and tokens, and the deadlines.
//!
//! Nothing here knows about futures or streams. [`Hedge`](crate::Hedge) and
//! [`HedgeStream`](crate::HedgeStream) poll their copies and their one timer (through
//! `copies::Copies::drive`), report what they saw, and ask [`Race::next`] what to do.

#[cfg(feature = "std")]
use alloc::boxed::Box;
use core::time::Duration;

use crate::attempt::{Attempt, Classify, Verdict};
use crate::policy::Shared;
use crate::shard::Counter;
use crate::timeout::Deadlines;
use crate::timer::Timer;

/// The most copies a call starts: `PolicyBuilder::MAX_COPIES`.
const MAX_COPIES: u8 = 64;

/// A panic caught under `catch_unwind`, resumed if the race has nothing else to return.
#[cfg(feature = "std")]
pub(crate) type Panic = Box<dyn core::any::Any + Send>;

/// How a copy left the race.
pub(crate) enum Finished<T, E> {
    /// Its result: a future's output, or a stream's first item.
    Item(Result<T, E>),
    /// A stream that ended before its first item: a failure with no error to keep.
    Ended,
    /// A panic caught under `catch_unwind`: a failure.
    #[cfg(feature = "std")]
    Panicked(Panic),
}

/// How a race ends.
pub(crate) enum End<T, E> {
    /// Copy `index` won with `result`.
    Won { index: usize, result: Result<T, E> },
    /// A fatal result, or the kept failure (or withdrawn result) once no copy can win.
    Failed(Result<T, E>),
    /// Every copy ended with neither an item nor an error (streams only).
    Empty,
    /// The lowest-index caught panic, when nothing else is left to return.
    #[cfg(feature = "std")]
    Panicked(Panic),
}

/// What the race asks its poller to do next.
pub(crate) enum Next<T, E> {
    /// Start copy `attempt.index()` now: ask [`Race::admit`], make it, then report
    /// [`Race::started`] or [`Race::declined`].
    Start(Attempt),
    /// Drop every copy in flight whose attempt timeout passed by `now` (it started
    /// `attempt` or more before), in index order, and report each with
    /// [`Race::timed_out`].
    Expire { now: Duration, attempt: Duration },
    /// Poll the timer: re-armed first to fire `after` from now when `rearm` is set, and
    /// reported with [`Race::fired`] if it fired.
    Sleep { rearm: Option<Duration> },
    /// Nothing is due: wait for a copy to finish.
    Wait,
    /// The race is over: drop the copies, then [`Race::conclude`].
    End(End<T, E>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not polled yet.
    Idle,
    Running,
    /// Returned (or, for a stream, committed).
    Done,
}

/// When the next copy is due, once known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Due {
    Unknown,
    At(Duration),
    Never,
}

/// Why the copy being started starts now; a refusal by the budget ends that reason only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    /// Its due time came (the schedule, or a `RetryAfter`).
    Due,
    /// Nothing is in flight: every copy so far failed.
    NoneInFlight,
    /// `replace_failed`: a copy failed while others run.
    Replace,
}

/// A finished copy kept in case no copy wins.
struct Kept<T, E> {
    index: u8,
    lost: Lost<T, E>,
}

/// How a kept copy finished without winning.
enum Lost<T, E> {
    Withdrawn(Result<T, E>),
    #[cfg(feature = "std")]
    Panicked(Panic),
    Failed(Result<T, E>),
}

impl<T, E> Lost<T, E> {
    /// Which end the race returns first when none wins: a failure, then a caught panic,
    /// then a withdrawn result.
    fn rank(&self) -> u8 {
        match self {
            Lost::Withdrawn(_) => 0,
            #[cfg(feature = "std")]
            Lost::Panicked(_) => 1,
            Lost::Failed(_) => 2,
        }
    }
}

/// One time reading per poll, taken only if a decision needs it.
pub(crate) struct Clock<'t, Tm> {
    timer: &'t Tm,
    now: Option<Duration>,
}

impl<'t, Tm: Timer> Clock<'t, Tm> {
    pub(crate) fn new(timer: &'t Tm) -> Self {
        Clock { timer, now: None }
    }

    /// The time of this poll, read on first use.
    pub(crate) fn now(&mut self) -> Duration {
        *self.now.get_or_insert_with(|| self.timer.now())
    }

    /// The timer, armed for `deadline`, fired: time has moved on, to the deadline at least
    /// (a timer that fires is trusted, whatever its clock says).
    pub(crate) fn fired_at(&mut self, deadline: Option<Duration>) {
        let now = self.timer.now();
        self.now = Some(deadline.map_or(now, |deadline| now.max(deadline)));
    }
}

/// The state of one call's race. Counts of copies are bytes: a call starts at most 64,
/// and the copies in flight are the bits of one word.
pub(crate) struct Race<T, E> {
    pub(crate) phase: Phase,
    /// Copies this call may start: the policy's cap, 1 after a missed probability roll,
    /// or how many had started when a `Stop`, a refusal or a declining factory ended the
    /// starting.
    max_copies: u8,
    launched: u8,
    /// Failures not yet replaced, with `replace_failed`.
    owed: u8,
    /// One more than the index of the copy the budget last refused (0: none), so a copy
    /// refused twice is counted once.
    refused: u8,
    /// The budget's `max_outstanding` slots this call holds: one per copy in flight
    /// beyond the first.
    permits: u8,
    /// Why the copy of the last [`Next::Start`] starts.
    reason: Reason,
    /// Whether a `RetryAfter` holds the next copy until its due time.
    held: bool,
    /// Bit k: copy k is in flight.
    in_flight: u64,
    /// `None` until the call needs the time: a call answered at once never reads a clock.
    times: Option<Times>,
    /// The lowest-index failure, or failing that the lowest-index caught panic, or the
    /// lowest-index withdrawn result.
    kept: KeptSlot<T, E>,
}

/// The race's times, from when its clock starts: the original's first `Pending`.
struct Times {
    /// When the original first said `Pending`.
    first_start: Duration,
    /// The newest copy's start by the schedule: its due time, or when it started early.
    last_start: Duration,
    /// Where the copy of the last [`Next::Start`] sits in the schedule: its due time, or
    /// when it starts early.
    anchor: Duration,
    next_due: Due,
    /// The deadline the timer is armed for.
    armed_at: Option<Duration>,
}

impl Times {
    /// When copy `copy` is due by the clock, computed once per copy; `None` when the
    /// clock never starts it.
    fn next_due<Tm>(&mut self, shared: &Shared<Tm>, copy: u8) -> Option<Duration> {
        if self.next_due == Due::Unknown {
            let due = shared
                .schedule
                .due(copy.into(), self.last_start, self.first_start);
            self.next_due = match due {
                // A due time that saturated is past the end of time: it never comes.
                Some(due) if due < Duration::MAX => Due::At(due),
                _ => Due::Never,
            };
        }
        match self.next_due {
            Due::At(due) => Some(due),
            Due::Unknown | Due::Never => None,
        }
    }
}

/// The kept result's place: a race that kept nothing drops it with one check.
struct KeptSlot<T, E>(Option<Kept<T, E>>);

impl<T, E> Drop for KeptSlot<T, E> {
    #[inline]
    fn drop(&mut self) {
        if let Some(kept) = self.0.take() {
            drop_kept(kept);
        }
    }
}

#[cold]
#[inline(never)]
fn drop_kept<T, E>(kept: Kept<T, E>) {
    drop(kept);
}

impl<T, E> Race<T, E> {
    pub(crate) const fn new() -> Self {
        Race {
            phase: Phase::Idle,
            // Until the race begins, the call's own cap (see `cap`).
            max_copies: MAX_COPIES,
            launched: 0,
            owed: 0,
            refused: 0,
            permits: 0,
            reason: Reason::Due,
            held: false,
            in_flight: 0,
            times: None,
            kept: KeptSlot(None),
        }
    }

    /// Starts the race with its original copy; returns that copy's attempt.
    #[inline]
    pub(crate) fn begin<Tm>(&mut self, shared: &Shared<Tm>) -> Attempt {
        self.phase = Phase::Running;
        // At most `PolicyBuilder::MAX_COPIES` (64): a byte holds it.
        self.max_copies = (shared.copies_for_call() as u8).min(self.max_copies);
        self.launched = 1;
        self.in_flight = 1;
        Attempt::new(0, self.max_copies.into(), Duration::ZERO)
    }

    /// Caps the copies this call may start; too late once it began.
    pub(crate) fn cap(&mut self, max_copies: usize) {
        if self.phase == Phase::Idle {
            self.max_copies = max_copies.clamp(1, MAX_COPIES.into()) as u8;
        }
    }

    pub(crate) fn launched(&self) -> usize {
        self.launched.into()
    }

    pub(crate) fn max_copies(&self) -> usize {
        self.max_copies.into()
    }

    /// The lowest-index copy in flight, if any: with starts in index order, the oldest.
    pub(crate) fn oldest_in_flight(&self) -> Option<usize> {
        (self.in_flight != 0).then(|| self.in_flight.trailing_zeros() as usize)
    }

    /// When the original started, once the clock runs.
    pub(crate) fn first_start(&self) -> Option<Duration> {
        self.times.as_ref().map(|times| times.first_start)
    }

    /// Starts the call's clock unless it runs already.
    fn start_clock<Tm: Timer>(&mut self, clock: &mut Clock<'_, Tm>) -> &mut Times {
        self.times.get_or_insert_with(|| {
            let now = clock.now();
            Times {
                first_start: now,
                last_start: now,
                anchor: now,
                next_due: Due::Unknown,
                armed_at: None,
            }
        })
    }

    /// What to do next, given the copies in flight and when the oldest of them started.
    #[inline]
    pub(crate) fn next<Tm: Timer, D: Deadlines<E>>(
        &mut self,
        shared: &Shared<Tm>,
        deadlines: &D,
        oldest_start: Option<Duration>,
        clock: &mut Clock<'_, Tm>,
    ) -> Next<T, E> {
        let can_start = self.launched < self.max_copies;
        if !can_start {
            if self.in_flight == 0 {
                return Next::End(self.give_up());
            }
            if deadlines.attempt().is_none() && deadlines.total().is_none() {
                // Hedging off, or every copy started: only the copies can end the call.
                return Next::Wait;
            }
        }
        let (launched, in_flight, held, owed) =
            (self.launched, self.in_flight, self.held, self.owed);
        let times = self.start_clock(clock);
        let first_start = times.first_start;
        if can_start && !held && (in_flight == 0 || owed > 0) {
            // Every copy failed, or a failure is to be replaced: the next starts now.
            let now = clock.now();
            let reason = if in_flight == 0 {
                Reason::NoneInFlight
            } else {
                Reason::Replace
            };
            let anchor = now.max(times.last_start);
            return self.start(reason, anchor, now);
        }
        let due = if can_start {
            times.next_due(shared, launched)
        } else {
            None
        };
        let armed_at = times.armed_at;
        // A deadline that saturated is past the end of time: it never comes.
        let attempt_deadline = deadlines
            .attempt()
            .zip(oldest_start)
            .map(|(attempt, started)| started.saturating_add(attempt))
            .filter(|deadline| *deadline < Duration::MAX);
        let total_deadline = deadlines
            .total()
            .map(|total| first_start.saturating_add(total))
            .filter(|deadline| *deadline < Duration::MAX);
        let earliest = [due, attempt_deadline, total_deadline]
            .into_iter()
            .flatten()
            .min();
        let Some(earliest) = earliest else {
            return if self.in_flight == 0 {
                // Held by a pushback to the end of time: nothing will ever start.
                Next::End(self.give_up())
            } else {
                Next::Wait
            };
        };
        if armed_at == Some(earliest) {
            return Next::Sleep { rearm: None };
        }
        let now = clock.now();
        if total_deadline.is_some_and(|deadline| now >= deadline) {
            return Next::End(self.time_out_call(deadlines));
        }
        if let (Some(attempt), Some(deadline)) = (deadlines.attempt(), attempt_deadline) {
            if now >= deadline {
                return Next::Expire { now, attempt };
            }
        }
        if let Some(due) = due.filter(|due| *due <= now) {
            return self.start(Reason::Due, due, now);
        }
        if let Some(times) = &mut self.times {
            times.armed_at = Some(earliest);
        }
        Next::Sleep {
            rearm: Some(earliest - now),
        }
    }

    /// Asks for copy `launched` to start now, anchored to `anchor` in the schedule.
    fn start(&mut self, reason: Reason, anchor: Duration, now: Duration) -> Next<T, E> {
        self.reason = reason;
        let first_start = match &mut self.times {
            Some(times) => {
                times.anchor = anchor;
                times.first_start
            }
            None => now,
        };
        Next::Start(Attempt::new(
            self.launched.into(),
            self.max_copies.into(),
            now.saturating_sub(first_start),
        ))
    }

    /// Asks the budget for the copy of the last [`Next::Start`]; on a refusal, that reason
    /// to start a copy is spent and `false` is returned.
    pub(crate) fn admit<Tm: Timer>(
        &mut self,
        shared: &Shared<Tm>,
        clock: &mut Clock<'_, Tm>,
    ) -> bool {
        match shared.admit_hedge(clock) {
            Ok(holds_slot) => {
                self.permits += u8::from(holds_slot);
                true
            }
            Err(_) => {
                self.refuse(shared);
                false
            }
        }
    }

    #[cold]
    fn refuse<Tm>(&mut self, shared: &Shared<Tm>) {
        // Refused again after a failure, the same copy is not counted twice.
        if self.refused != self.launched + 1 {
            self.refused = self.launched + 1;
            shared.budget_refused();
        }
        crate::trace::budget_refused(shared.name, self.launched.into(), self.max_copies.into());
        match self.reason {
            // No more timed copies for this call; a failure may still ask.
            Reason::Due => {
                if let Some(times) = &mut self.times {
                    times.next_due = Due::Never;
                }
                self.held = false;
            }
            // Nothing in flight and nothing may start: the race ends.
            Reason::NoneInFlight => self.max_copies = self.launched,
            Reason::Replace => self.owed = 0,
        }
    }

    /// Runs the `on_hedge` hook for the copy about to start.
    pub(crate) fn hook<Tm>(&self, shared: &Shared<Tm>, attempt: &Attempt) {
        if let Some(on_hedge) = &shared.on_hedge {
            on_hedge(attempt);
        }
        crate::trace::hedge_launched(shared.name, attempt);
    }

    /// The copy of the last [`Next::Start`] was made: it is in flight.
    pub(crate) fn started<Tm>(&mut self, shared: &Shared<Tm>) {
        let index = self.launched;
        if let Some(times) = &mut self.times {
            times.last_start = times.anchor;
            times.next_due = Due::Unknown;
        }
        self.launched += 1;
        self.in_flight |= 1 << index;
        self.held = false;
        self.owed = self.owed.saturating_sub(1);
        shared.counters.add(&[Counter::Hedges]);
    }

    /// The factory declined the copy of the last [`Next::Start`]: no more copies start.
    pub(crate) fn declined(&mut self) {
        self.max_copies = self.launched;
        if let Some(times) = &mut self.times {
            times.next_due = Due::Never;
        }
        self.held = false;
        self.owed = 0;
    }

    /// The timer fired; returns the deadline it was armed for.
    pub(crate) fn fired(&mut self) -> Option<Duration> {
        self.times.as_mut()?.armed_at.take()
    }

    /// The verdict on a finished copy; `None` when it left without a result.
    #[inline]
    pub(crate) fn verdict<C: Classify<T, E>>(
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

    /// Books copy `index` as finished with `verdict` (from [`Race::verdict`]); `Some` when
    /// it ends the race. A hedge that lost is already dropped: its budget slot comes back.
    #[inline]
    pub(crate) fn settle<Tm: Timer>(
        &mut self,
        index: usize,
        finished: Finished<T, E>,
        verdict: Option<Verdict>,
        shared: &Shared<Tm>,
        clock: &mut Clock<'_, Tm>,
    ) -> Option<End<T, E>> {
        self.in_flight &= !(1 << index);
        if index > 0 && self.permits > 0 {
            self.release_slot(shared);
        }
        match (finished, verdict) {
            // The common end, kept inline: the rest of the bookkeeping is for losers.
            (Finished::Item(result), Some(Verdict::Win)) => {
                shared.copy_won();
                Some(End::Won { index, result })
            }
            (finished, verdict) => self.settle_loss(index, finished, verdict, shared, clock),
        }
    }

    /// [`Race::settle`] for every end but a win.
    #[inline(never)]
    fn settle_loss<Tm: Timer>(
        &mut self,
        index: usize,
        finished: Finished<T, E>,
        verdict: Option<Verdict>,
        shared: &Shared<Tm>,
        clock: &mut Clock<'_, Tm>,
    ) -> Option<End<T, E>> {
        let (result, verdict) = match (finished, verdict) {
            (Finished::Item(result), Some(verdict)) => (result, verdict),
            (Finished::Item(_), None) => unreachable!("a result always has a verdict"),
            (Finished::Ended, _) => {
                self.failed(index, None, true, shared);
                return None;
            }
            #[cfg(feature = "std")]
            (Finished::Panicked(panic), _) => {
                self.failed(index, Some(Lost::Panicked(panic)), true, shared);
                return None;
            }
        };
        match verdict {
            Verdict::Win => {
                shared.copy_won();
                Some(End::Won { index, result })
            }
            Verdict::Fatal => Some(End::Failed(result)),
            Verdict::Withdraw => {
                self.keep(index, Lost::Withdrawn(result));
                None
            }
            Verdict::Retry => {
                self.failed(index, Some(Lost::Failed(result)), true, shared);
                None
            }
            Verdict::RetryAfter(after) => {
                if self.launched < self.max_copies {
                    // The server's word beats the schedule and every early start.
                    let due = clock.now().saturating_add(after);
                    self.start_clock(clock).next_due = if due < Duration::MAX {
                        Due::At(due)
                    } else {
                        Due::Never
                    };
                    self.held = true;
                }
                self.failed(index, Some(Lost::Failed(result)), false, shared);
                None
            }
            Verdict::Stop => {
                self.max_copies = self.launched;
                self.held = false;
                self.failed(index, Some(Lost::Failed(result)), false, shared);
                None
            }
        }
    }

    /// Copy `index` ran out of its attempt timeout and was dropped: a failure, with the
    /// call's `Elapsed` error, not shown to the classifier.
    pub(crate) fn timed_out<Tm, D: Deadlines<E>>(
        &mut self,
        index: usize,
        deadlines: &D,
        shared: &Shared<Tm>,
    ) {
        self.in_flight &= !(1 << index);
        if index > 0 && self.permits > 0 {
            self.release_slot(shared);
        }
        let elapsed = Lost::Failed(Err(deadlines.elapsed()));
        self.failed(index, Some(elapsed), true, shared);
    }

    /// Books a failed copy: kept if it beats the one kept, charged to a throttling
    /// budget, and owed a replacement under `replace_failed` unless a pushback decides.
    fn failed<Tm>(
        &mut self,
        index: usize,
        lost: Option<Lost<T, E>>,
        replace: bool,
        shared: &Shared<Tm>,
    ) {
        #[cfg(feature = "std")]
        let panicked = matches!(lost, Some(Lost::Panicked(_)));
        #[cfg(not(feature = "std"))]
        let panicked = false;
        crate::trace::copy_failed(shared.name, index, self.max_copies.into(), panicked);
        shared.copy_failed();
        if replace && shared.replace_failed {
            self.owed = self.owed.saturating_add(1);
        }
        if let Some(lost) = lost {
            self.keep(index, lost);
        }
    }

    #[cold]
    fn release_slot<Tm>(&mut self, shared: &Shared<Tm>) {
        self.permits -= 1;
        shared.release_slots(1);
    }

    #[cold]
    fn release_all_slots<Tm>(&mut self, shared: &Shared<Tm>) {
        shared.release_slots(self.permits.into());
        self.permits = 0;
    }

    /// Whether the call runs its original alone, with nothing to schedule: hedging is off
    /// for it (`max_copies` 1, or a missed probability roll) and its clock never started.
    #[inline]
    pub(crate) fn alone(&self) -> bool {
        self.max_copies == 1 && self.times.is_none()
    }

    /// Keeps a finished copy if it beats the one kept: by [`Lost::rank`], and then the
    /// lower index wins.
    fn keep(&mut self, index: usize, lost: Lost<T, E>) {
        let better = match &self.kept.0 {
            None => true,
            Some(kept) => {
                (lost.rank(), core::cmp::Reverse(index))
                    > (kept.lost.rank(), core::cmp::Reverse(kept.index.into()))
            }
        };
        if better {
            self.kept.0 = Some(Kept {
                index: index as u8,
                lost,
            });
        }
    }

    /// How the race ends when every copy finished and none won.
    fn give_up(&mut self) -> End<T, E> {
        match self.kept.0.take().map(|kept| kept.lost) {
            Some(Lost::Failed(result) | Lost::Withdrawn(result)) => End::Failed(result),
            #[cfg(feature = "std")]
            Some(Lost::Panicked(panic)) => End::Panicked(panic),
            None => End::Empty,
        }
    }

    /// How the race ends when its total timeout passed: the kept failure, if a real one,
    /// else the call's `Elapsed` error.
    fn time_out_call<D: Deadlines<E>>(&mut self, deadlines: &D) -> End<T, E> {
        match self.kept.0.take().map(|kept| kept.lost) {
            Some(Lost::Failed(result)) => End::Failed(result),
            _ => End::Failed(Err(deadlines.elapsed())),
        }
    }

    /// Records the end of the race once the poller dropped its copies (all of them, or
    /// all but a stream's winner): the original's latency, the budget slots, the stats.
    /// `original_alive`: whether the original was still running when the race ended.
    #[inline]
    pub(crate) fn conclude<Tm: Timer>(
        &mut self,
        shared: &Shared<Tm>,
        end: &End<T, E>,
        original_alive: bool,
    ) {
        // The clock runs only once a call waited: an instant answer skips all of this.
        if let (Some(first_start), Some(_)) = (self.first_start(), shared.schedule.tracker()) {
            // The original's latency: exact if it won, a lower bound if it loses now.
            let original_won = matches!(end, End::Won { index: 0, .. });
            if original_won || original_alive {
                record_latency(shared, first_start);
            }
        }
        // Losers first, then their budget slots: a slot is held exactly while its copy lives.
        if self.permits > 0 {
            self.release_all_slots(shared);
        }
        // A failure kept in case no copy won goes with the other losers.
        self.kept.0 = None;
        self.phase = Phase::Done;
        let (outcome, hedge_win) = match end {
            End::Won { index, .. } => {
                crate::trace::won(shared.name, *index, self.launched.into());
                (Counter::Wins, *index > 0)
            }
            _ => (Counter::Failures, false),
        };
        let counters = [outcome, Counter::HedgeWins];
        shared.counters.add(&counters[..1 + usize::from(hedge_win)]);
    }

    /// The end of a call whose original won while it was the only copy started and the
    /// call's clock never ran: nothing to give back, nothing to record but the win.
    #[inline]
    pub(crate) fn won_alone<Tm>(&mut self, shared: &Shared<Tm>) {
        self.phase = Phase::Done;
        shared.counters.add(&[Counter::Wins]);
        shared.copy_won();
    }

    /// Gives back the slots of a call dropped mid-race, after its copies were dropped.
    #[cold]
    pub(crate) fn cancel<Tm>(&mut self, shared: &Shared<Tm>) {
        if self.permits > 0 {
            shared.release_slots(self.permits.into());
            self.permits = 0;
        }
        shared.counters.add(&[Counter::Cancelled]);
    }
}

/// Records the original's latency with the adaptive delay's tracker.
#[cold]
#[inline(never)]
fn record_latency<Tm: Timer>(shared: &Shared<Tm>, first_start: Duration) {
    if let Some(tracker) = shared.schedule.tracker() {
        let now = shared.timer.now();
        tracker.record(now.saturating_sub(first_start), now);
    }
}
