//! The race's decisions: when each copy starts, what a finished copy means for the call,
//! which failure to keep, the budget's slots and tokens, and the deadlines.
//!
//! Nothing here knows about futures or streams. [`Hedge`](crate::Hedge) and
//! [`HedgeStream`](crate::HedgeStream) poll their copies and their one timer (through
//! `copies::InFlight::drive`), report what they saw, and ask [`Race::next`] what to do.
//!
//! `mod.rs` holds [`Race`] and its decisions; `ending.rs` adds how a copy leaves the race
//! and how it ends. The parts they share are leaves that import neither: `outcome.rs`
//! ([`Finished`], [`End`]), `kept.rs` (the failure kept in case no copy wins) and
//! `clock.rs` (the call's clock and its times).

use core::time::Duration;

use crate::attempt::Attempt;
use crate::keyed::{Ask, Key};
use crate::policy::Settings;
use crate::stats::Counter;
use crate::timeout::Deadlines;
use crate::timer::Timer;

mod clock;
mod ending;
mod kept;
mod outcome;

use self::clock::{deadline, sooner, Due};
pub(crate) use self::clock::{Arm, Clock, Pass, Times};
pub(crate) use self::ending::{cancelled_without_race, verdict, won_without_race};
use self::kept::Kept;
pub(crate) use self::outcome::{End, Finished};

/// What the race asks its poller to do next.
pub(crate) enum Next<T, E> {
    /// Start copy `attempt.index()` now: ask [`Race::admit`], make it, then report
    /// [`Race::record_launch`] or [`Race::declined`].
    Start(Attempt),
    /// Drop every copy in flight whose attempt timeout passed by `now` (it started
    /// `attempt` or more before), in index order, and report each with
    /// [`Race::timed_out`].
    Expire { now: Duration, attempt: Duration },
    /// Poll the timer: re-armed first to fire at `rearm.deadline` when `rearm` is set,
    /// and reported with [`Race::fired`] if it fired.
    Sleep { rearm: Option<Arm> },
    /// Nothing is due: wait for a copy to finish.
    Wait,
    /// The race is over: drop the copies, then [`Race::conclude`].
    End(End<T, E>),
}

/// Where a call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not polled yet.
    Idle,
    Running,
    /// Returned (or, for a stream, committed).
    Done,
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

/// Whether, and how, the clock started a copy of the call: what its end tells
/// [`min_win_rate`](crate::PolicyBuilder::min_win_rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timed {
    None,
    /// Asked to start, as a probe of withheld hedges; not started yet.
    Probing,
    Hedged,
    Probed,
    /// A copy it was due to start was withheld: counted once, and its later timed copies
    /// are withheld without asking again.
    Withheld,
}

/// The state of one call's race. Counts of copies are bytes: a call starts at most 64,
/// and the copies in flight are the bits of one word.
pub(crate) struct Race<T, E> {
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
    /// Why the copy of the last [`Next::Start`] starts.
    reason: Reason,
    /// Whether a `RetryAfter` holds the next copy until its due time.
    held: bool,
    /// Whether the call has asked the budget for a copy beyond its first, other than one
    /// due with the call: from then on it earns the budget nothing.
    asked: bool,
    /// Whether a copy the clock started is in the race (its end tells whether hedges
    /// win), and whether it started as a probe of withheld hedges.
    timed: Timed,
    /// The call's key, if it has one on a policy with keys.
    key: Option<Key>,
    /// Bit k: copy k is in flight.
    in_flight: u64,
    /// Bit k: copy k holds one of the budget's `max_outstanding` slots, from its start
    /// until it is dropped.
    slots: u64,
    /// `None` until the call needs the time: a call answered at once never reads a clock.
    times: Option<Times>,
    /// The lowest-index failure, or failing that the lowest-index caught panic, or the
    /// lowest-index withdrawn result.
    kept: Kept<T, E>,
}

impl<T, E> Race<T, E> {
    /// The race of a call that may start `max_copies` copies, made once its original
    /// was started and polled, and did not win: the original is in flight (or about to
    /// be settled as finished). An original that wins at once makes no race.
    pub(crate) const fn new(max_copies: u8, key: Option<Key>) -> Self {
        Race {
            max_copies,
            launched: 1,
            owed: 0,
            refused: 0,
            asked: false,
            timed: Timed::None,
            key,
            reason: Reason::Due,
            held: false,
            in_flight: 1,
            slots: 0,
            times: None,
            kept: Kept::new(),
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

    /// The call's times, once its clock runs: for the loop that arms the timer and tells
    /// the clock when it fired.
    #[inline(always)]
    pub(crate) fn times_mut(&mut self) -> Option<&mut Times> {
        self.times.as_mut()
    }

    /// Starts the call's clock, read on `timer`, unless it runs already.
    #[inline(always)]
    fn start_clock<Tm: Timer>(&mut self, clock: &mut Clock, timer: &Tm) -> &mut Times {
        self.times.get_or_insert_with(|| Times::start(clock, timer))
    }

    /// What to do next, given the copies in flight and when the oldest of them started.
    ///
    /// On a clock that reads the call's start as zero, only the first arming of the timer
    /// goes on without the time (see [`Clock::new`]): any other decision reads the
    /// clock and moves the call's times onto it before it is acted on.
    #[inline(always)]
    pub(crate) fn next<Tm: Timer, D: Deadlines<E>>(
        &mut self,
        pass: &mut Pass<'_, Tm, D>,
        oldest_start: Option<Duration>,
    ) -> Next<T, E> {
        let next = self.decide(pass, oldest_start);
        let arming = matches!(next, Next::Sleep { rearm: Some(_) });
        pass.clock
            .read_unless_arming(arming, self.times.as_mut(), &pass.settings.timer);
        next
    }

    /// [`Race::next`] on the clock as it reads.
    #[inline(always)]
    fn decide<Tm: Timer, D: Deadlines<E>>(
        &mut self,
        pass: &mut Pass<'_, Tm, D>,
        oldest_start: Option<Duration>,
    ) -> Next<T, E> {
        let Pass {
            settings,
            deadlines,
            clock,
        } = pass;
        let can_start = self.launched < self.max_copies;
        if !can_start {
            if self.in_flight == 0 {
                return Next::End(self.kept.give_up());
            }
            if deadlines.attempt().is_none() && deadlines.total().is_none() {
                // Hedging off, or every copy started: only the copies can end the call.
                return Next::Wait;
            }
        }
        let (launched, in_flight, held, owed, key) = (
            self.launched,
            self.in_flight,
            self.held,
            self.owed,
            self.key,
        );
        let times = self.start_clock(clock, &settings.timer);
        let first_start = times.first_start;
        let total_deadline = deadlines
            .total()
            .and_then(|total| deadline(first_start, total));
        if can_start && !held && (in_flight == 0 || owed > 0) {
            // Every copy failed, or a failure is to be replaced: the next starts now,
            // unless the call's deadline came (a copy due then is not started either).
            let now = clock.now(&settings.timer);
            if total_deadline.is_some_and(|deadline| now >= deadline) {
                return Next::End(self.kept.time_out(|| deadlines.elapsed()));
            }
            let reason = if in_flight == 0 {
                Reason::NoneInFlight
            } else {
                Reason::Replace
            };
            return self.request_start(reason, now);
        }
        let due = if can_start {
            times.next_due(settings, launched, key)
        } else {
            None
        };
        let armed_at = times.armed_at;
        let attempt_deadline = match (deadlines.attempt(), oldest_start) {
            (Some(attempt), Some(started)) => deadline(started, attempt),
            _ => None,
        };
        let Some(earliest) = sooner(sooner(due, attempt_deadline), total_deadline) else {
            return if self.in_flight == 0 {
                // Held by a pushback to the end of time: nothing will ever start.
                Next::End(self.kept.give_up())
            } else {
                Next::Wait
            };
        };
        if armed_at == Some(earliest) {
            return Next::Sleep { rearm: None };
        }
        let now = clock.now(&settings.timer);
        if total_deadline.is_some_and(|deadline| now >= deadline) {
            return Next::End(self.kept.time_out(|| deadlines.elapsed()));
        }
        if let (Some(attempt), Some(deadline)) = (deadlines.attempt(), attempt_deadline) {
            if now >= deadline {
                return Next::Expire { now, attempt };
            }
        }
        if due.is_some_and(|due| due <= now) {
            return self.request_start(Reason::Due, now);
        }
        if let Some(times) = &mut self.times {
            times.armed_at = Some(earliest);
        }
        Next::Sleep {
            rearm: Some(Arm {
                deadline: earliest,
                now,
            }),
        }
    }

    /// Asks for copy `launched` to start now, never before the copy before it started.
    fn request_start(&mut self, reason: Reason, now: Duration) -> Next<T, E> {
        self.reason = reason;
        let (first_start, start) = match &mut self.times {
            Some(times) => {
                times.latest_start = times.latest_start.max(now);
                (times.first_start, times.latest_start)
            }
            None => (now, now),
        };
        Next::Start(Attempt::new(
            self.launched.into(),
            self.max_copies.into(),
            start.saturating_sub(first_start),
        ))
    }

    /// Asks the budget for the copy of the last [`Next::Start`]; on a refusal, that reason
    /// to start a copy is spent and `false` is returned.
    pub(crate) fn admit<Tm: Timer, D>(&mut self, pass: &mut Pass<'_, Tm, D>) -> bool {
        let Pass {
            settings, clock, ..
        } = pass;
        // Whichever copy it is for: copy 1 may have started without asking (a declining
        // factory's caught panic). A copy due with the call itself (`parallel()`) is how
        // the call is sent, not a sign it ran slow: asking for it keeps the call earning.
        // A copy held for a pushback starts by the server's word, not the clock: it is
        // never withheld.
        if self.reason == Reason::Due
            && !self.held
            && settings.withhold.is_some()
            && !self.may_hedge(settings, clock)
        {
            return false;
        }
        let first_ask = !self.asked && !self.due_with_call();
        self.asked |= first_ask;
        match settings.admit_hedge(first_ask, || clock.now(&settings.timer)) {
            Ok(holds_slot) => {
                self.slots |= u64::from(holds_slot) << self.launched;
                true
            }
            Err(_) => {
                self.refuse(settings);
                false
            }
        }
    }

    /// Whether the call's hedges still win often enough to start the copy the clock asks
    /// for (see `min_win_rate`); a withheld copy is counted, and the clock starts no
    /// other.
    #[cold]
    fn may_hedge<Tm: Timer>(&mut self, settings: &Settings<Tm>, clock: &mut Clock) -> bool {
        if self.timed == Timed::Withheld {
            self.spend(Reason::Due);
            return false;
        }
        let Some((withhold, rate)) = settings.win_rate_for(self.key, clock.now(&settings.timer))
        else {
            return true;
        };
        match rate.ask(withhold) {
            Ask::Hedge => true,
            Ask::Probe => {
                self.timed = Timed::Probing;
                true
            }
            Ask::Withhold => {
                // Counted once per call, and not for a call that hedged already: that
                // hedge's end still tells whether hedges win.
                if self.timed == Timed::None {
                    self.timed = Timed::Withheld;
                    settings.counters.add(&[Counter::Withheld]);
                }
                self.spend(Reason::Due);
                false
            }
        }
    }

    /// Whether the copy of the last [`Next::Start`] starts by the schedule at the call's
    /// own start: a zero delay, not a wait, a failure or a pushback.
    #[inline]
    fn due_with_call(&self) -> bool {
        match &self.times {
            Some(times) if self.reason == Reason::Due && !self.held => {
                times.next_due == Due::At(times.first_start)
            }
            _ => false,
        }
    }

    #[cold]
    fn refuse<Tm>(&mut self, settings: &Settings<Tm>) {
        // Refused again after a failure, the same copy is not counted or reported twice.
        if self.refused != self.launched + 1 {
            self.refused = self.launched + 1;
            settings.budget_refused();
            crate::trace::budget_refused(
                &settings.name,
                self.launched.into(),
                self.max_copies.into(),
            );
        }
        self.spend(self.reason);
    }

    /// A reason to start a copy was refused: it is spent.
    fn spend(&mut self, reason: Reason) {
        match reason {
            // No timed copy until another starts (a failure may still ask for this one).
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
    pub(crate) fn hook<Tm>(&self, settings: &Settings<Tm>, attempt: &Attempt) {
        if let Some(on_hedge) = &settings.on_hedge {
            on_hedge(attempt);
        }
        crate::trace::hedge_launched(&settings.name, attempt);
    }

    /// The copy of the last [`Next::Start`] was made: it is in flight.
    pub(crate) fn record_launch<Tm>(&mut self, settings: &Settings<Tm>) {
        let index = self.launched;
        if let Some(times) = &mut self.times {
            times.last_start = match (self.reason, times.next_due) {
                // A timed copy sits at its due time in the schedule, however late it started.
                (Reason::Due, Due::At(due)) => due,
                _ => times.latest_start,
            };
            times.next_due = Due::Unknown;
        }
        if self.reason == Reason::Due && !self.held {
            self.timed = match self.timed {
                Timed::Probing | Timed::Probed => Timed::Probed,
                _ => Timed::Hedged,
            };
        }
        self.launched += 1;
        self.in_flight |= 1 << index;
        self.held = false;
        self.owed = self.owed.saturating_sub(1);
        settings.counters.add(&[Counter::Hedges]);
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
}
