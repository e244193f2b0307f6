//! The call's clock: one reading per poll, the times the race keeps from it, and a start
//! that may stay unread until a decision needs it.

use core::time::Duration;

use super::Race;
use crate::keyed::Key;
use crate::policy::Settings;
use crate::timeout::Deadlines;
use crate::timer::Timer;

/// When the next copy is due, once known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Due {
    Unknown,
    At(Duration),
    Never,
}

/// What a race decides with during one poll of its call: the policy's settings, the
/// call's deadlines, and the poll's clock.
pub(crate) struct Pass<'a, Tm, D> {
    pub(crate) settings: &'a Settings<Tm>,
    pub(crate) deadlines: &'a D,
    pub(crate) clock: Clock,
}

impl<'a, Tm: Timer, D> Pass<'a, Tm, D> {
    /// The pass of one poll; `starting` when this poll starts the call's clock (its
    /// original's first poll said `Pending`). The clock then stays unread while the
    /// race's decisions need only the time since the start (no deadline, no adaptive
    /// delay): a timer that can tell when its first sleep started is never asked the time
    /// unless the call goes on.
    #[inline(always)]
    pub(crate) fn new<E>(settings: &'a Settings<Tm>, deadlines: &'a D, starting: bool) -> Self
    where
        D: Deadlines<E>,
    {
        let unread = starting
            && deadlines.attempt().is_none()
            && deadlines.total().is_none()
            && settings.schedule.tracker().is_none();
        Pass {
            settings,
            deadlines,
            clock: Clock::new(unread),
        }
    }
}

/// One time reading per poll, taken from the policy's timer only if a decision needs it.
pub(crate) struct Clock {
    now: Option<Duration>,
    /// Whether the call's clock starts in this poll and has not been read: it reads zero,
    /// and the times the race takes from it count from the call's start (see
    /// [`Race::resolve`](super::Race::resolve)).
    unread: bool,
}

impl Clock {
    /// The clock of one poll. `unread`, for the poll that starts a call's clock when none
    /// of its decisions needs the time itself (no deadlines, no adaptive delay): until
    /// [`Clock::start`], it reads zero, the call's start.
    pub(crate) fn new(unread: bool) -> Self {
        Clock {
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
    pub(crate) fn start<Tm: Timer>(&mut self, timer: &Tm) -> Duration {
        let now = timer.now();
        self.now = Some(now);
        self.unread = false;
        now
    }

    /// The time of this poll, read on first use.
    pub(crate) fn now<Tm: Timer>(&mut self, timer: &Tm) -> Duration {
        *self.now.get_or_insert_with(|| timer.now())
    }

    /// The timer, armed for `deadline`, fired: time has moved on, to the deadline at least
    /// (a timer that fires is trusted, whatever its clock says).
    pub(crate) fn fired_at<Tm: Timer>(&mut self, timer: &Tm, deadline: Option<Duration>) {
        let now = timer.now();
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

/// The race's side of the clock: its times, started from the clock, and moved onto it
/// when they began unread.
impl<T, E> Race<T, E> {
    /// Starts the call's clock, read on `timer`, unless it runs already.
    pub(super) fn start_clock<Tm: Timer>(&mut self, clock: &mut Clock, timer: &Tm) -> &mut Times {
        self.times.get_or_insert_with(|| {
            let now = clock.now(timer);
            Times {
                first_start: now,
                last_start: now,
                latest_start: now,
                next_due: Due::Unknown,
                armed_at: None,
                unread: clock.is_unread(),
            }
        })
    }

    /// How far past the call's start the timer is armed, while the start is unread: the
    /// first sleep, made without reading the clock, tells the start (`Timer::started`).
    #[inline]
    pub(crate) fn unread_start(&self) -> Option<Duration> {
        match &self.times {
            Some(times) if times.unread => times.armed_at,
            _ => None,
        }
    }

    /// The call's clock, which started unread, started at `start`: the times that counted
    /// from it move onto the clock, as if it had been read then. Whatever saturates is past
    /// the end of time.
    #[cold]
    pub(crate) fn resolve(&mut self, start: Duration) {
        let Some(times) = self.times.as_mut().filter(|times| times.unread) else {
            return;
        };
        times.unread = false;
        times.first_start = start;
        times.last_start = start.saturating_add(times.last_start);
        times.latest_start = start.saturating_add(times.latest_start);
        if let Due::At(due) = times.next_due {
            times.next_due = deadline(start, due).map_or(Due::Never, Due::At);
        }
        times.armed_at = times
            .armed_at
            .and_then(|armed_at| deadline(start, armed_at));
    }

    /// The deadline the timer is armed for, once the call's clock was read.
    pub(crate) fn armed_at(&self) -> Option<Duration> {
        self.times
            .as_ref()
            .filter(|times| !times.unread)
            .and_then(|times| times.armed_at)
    }
}

impl Times {
    /// When copy `copy` of a call with `key` is due by the clock, computed once per
    /// copy; `None` when the clock never starts it.
    #[inline(always)]
    pub(super) fn next_due<Tm>(
        &mut self,
        settings: &Settings<Tm>,
        copy: u8,
        key: Option<Key>,
    ) -> Option<Duration> {
        if self.next_due == Due::Unknown {
            // A key's own tracker, looked up only by a call with a key and an adaptive delay.
            let tracker = match key {
                None => None,
                Some(_) => settings.tracker_for(key, self.last_start),
            };
            let due =
                settings
                    .schedule
                    .due(copy.into(), self.last_start, self.first_start, tracker);
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
