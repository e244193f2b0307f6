//! The call's clock: one reading per poll, and the times the race keeps from it.

use core::time::Duration;

use super::Race;
use crate::policy::Shared;
use crate::timer::Timer;

/// When the next copy is due, once known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Due {
    Unknown,
    At(Duration),
    Never,
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

/// The race's times, from when its clock starts: the original's first `Pending`.
pub(super) struct Times {
    /// When the original first said `Pending`.
    pub(super) first_start: Duration,
    /// The newest copy's start by the schedule: its due time, or when it started early.
    pub(super) last_start: Duration,
    /// When the copy of the last [`Next::Start`] starts, as its `Attempt::elapsed` says:
    /// the clock, or the start of the copy before if the clock reads earlier (a clock
    /// that went back, a sleep that fired early), so starts never go backwards.
    pub(super) latest_start: Duration,
    pub(super) next_due: Due,
    /// The deadline the timer is armed for.
    pub(super) armed_at: Option<Duration>,
}

impl Times {
    /// When copy `copy` is due by the clock, computed once per copy; `None` when the
    /// clock never starts it.
    pub(super) fn next_due<Tm>(&mut self, shared: &Shared<Tm>, copy: u8) -> Option<Duration> {
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

impl<T, E> Race<T, E> {
    /// Starts the call's clock unless it runs already.
    pub(super) fn start_clock<Tm: Timer>(&mut self, clock: &mut Clock<'_, Tm>) -> &mut Times {
        self.times.get_or_insert_with(|| {
            let now = clock.now();
            Times {
                first_start: now,
                last_start: now,
                latest_start: now,
                next_due: Due::Unknown,
                armed_at: None,
            }
        })
    }
}
