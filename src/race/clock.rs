//! The call's clock: one reading per poll, the times the race keeps from it, and a start
//! that may stay unread until a decision needs it.

use core::time::Duration;

use crate::policy::Settings;
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
    /// Whether the call's clock starts in this poll and has not been read: it reads zero,
    /// and the times the race takes from it count from the call's start (see
    /// [`Race::resolve`](super::Race::resolve)).
    unread: bool,
}

impl<'t, Tm: Timer> Clock<'t, Tm> {
    /// The clock of one poll. `unread`, for the poll that starts a call's clock when none
    /// of its decisions needs the time itself (no deadlines, no adaptive delay): until
    /// [`Clock::start`], it reads zero, the call's start.
    pub(crate) fn new(timer: &'t Tm, unread: bool) -> Self {
        Clock {
            timer,
            now: unread.then_some(Duration::ZERO),
            unread,
        }
    }

    /// Whether the clock still reads the call's start as zero.
    pub(crate) fn is_unread(&self) -> bool {
        self.unread
    }

    /// Reads the clock for a poll that began unread, and returns the reading: the call's
    /// start.
    pub(crate) fn start(&mut self) -> Duration {
        let now = self.timer.now();
        self.now = Some(now);
        self.unread = false;
        now
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
        self.unread = false;
    }
}

/// The race's times, from when its clock starts: the original's first `Pending`.
pub(super) struct Times {
    /// When the original first said `Pending`.
    pub(super) first_start: Duration,
    /// The newest copy's start by the schedule: its due time, or when it started early.
    pub(super) last_start: Duration,
    /// When the copy of the last [`Next::Start`](super::Next::Start) starts, as its `Attempt::elapsed` says:
    /// the clock, or the start of the copy before if the clock reads earlier (a clock
    /// that went back, a sleep that fired early), so starts never go backwards.
    pub(super) latest_start: Duration,
    pub(super) next_due: Due,
    /// The deadline the timer is armed for.
    pub(super) armed_at: Option<Duration>,
    /// Whether these times count from the call's start, which was not read (see
    /// [`Clock::new`]): zero is the start, until [`Race::resolve`](super::Race::resolve).
    pub(super) unread: bool,
}

impl Times {
    /// When copy `copy` is due by the clock, computed once per copy; `None` when the
    /// clock never starts it.
    #[inline(always)]
    pub(super) fn next_due<Tm>(&mut self, settings: &Settings<Tm>, copy: u8) -> Option<Duration> {
        if self.next_due == Due::Unknown {
            let due = settings
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

/// `after` past `start`, or `None` if that saturates: past the end of time, it never comes.
#[inline]
pub(super) fn deadline(start: Duration, after: Duration) -> Option<Duration> {
    start
        .checked_add(after)
        .filter(|deadline| *deadline < Duration::MAX)
}

/// The sooner of two deadlines, either of which may be missing.
#[inline]
pub(super) fn sooner(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}
