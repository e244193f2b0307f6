//! The call's clock: one reading per poll ([`Clock`]), the times the race keeps from it
//! ([`Times`]), and a start that may stay unread until a decision needs it: when it stays
//! unread, how the first sleep is armed without it, and how the times move onto the clock
//! once it is read. The race and the loop that drives the copies call these; nothing
//! else handles an unread start.

use core::pin::Pin;
use core::time::Duration;

use crate::adaptive::{nanos, LatencyTracker};
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

/// When to arm the timer for: `deadline` on the policy's clock, which read `now` during
/// this poll (a timer that can sleep until an instant need not read it again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arm {
    pub(crate) deadline: Duration,
    pub(crate) now: Duration,
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
    /// [`Times::resolve`]).
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
    pub(super) fn is_unread(&self) -> bool {
        self.unread
    }

    /// Reads the clock for a poll that began unread, and returns the reading: the call's
    /// start.
    fn start<Tm: Timer>(&mut self, timer: &Tm) -> Duration {
        let now = timer.now();
        self.now = Some(now);
        self.unread = false;
        now
    }

    /// The time of this poll, read on first use.
    pub(crate) fn now<Tm: Timer>(&mut self, timer: &Tm) -> Duration {
        *self.now.get_or_insert_with(|| timer.now())
    }

    /// After a decision: a clock still unread is read, and the call's `times` moved onto
    /// it, unless the decision is to arm the call's first sleep (`arming`), which goes on
    /// without the time.
    #[inline(always)]
    pub(super) fn read_unless_arming<Tm: Timer>(
        &mut self,
        arming: bool,
        times: Option<&mut Times>,
        timer: &Tm,
    ) {
        if self.unread && !arming {
            let start = self.start(timer);
            if let Some(times) = times {
                times.resolve(start);
            }
        }
    }

    /// Arms `sleep` as the race asked, or re-arms it; `false` if nothing was armed: the
    /// clock, read for a timer that cannot arm before the reading, put the deadline past
    /// the end of time. `times`: the call's, which the race started before it asked.
    #[inline(always)]
    pub(crate) fn arm<Tm: Timer>(
        &mut self,
        times: Option<&mut Times>,
        timer: &Tm,
        mut sleep: Pin<&mut Option<Tm::Sleep>>,
        Arm { deadline, now }: Arm,
    ) -> bool {
        match sleep.as_mut().as_pin_mut() {
            Some(armed) => timer.reset_until(armed, deadline, now),
            None if self.unread => {
                // The call's first sleep, its clock unread: the deadline counts from the
                // call's start, and `now` is that start.
                let Some(first) = timer.sleep_from_now(deadline) else {
                    return self.arm_read(times, timer, sleep);
                };
                sleep.set(Some(first));
            }
            None => sleep.set(Some(timer.sleep_until(deadline, now))),
        }
        true
    }

    /// [`Clock::arm`] for a timer that cannot arm before the clock is read: reads it, and
    /// arms for the race's deadline on it.
    #[inline(never)]
    fn arm_read<Tm: Timer>(
        &mut self,
        times: Option<&mut Times>,
        timer: &Tm,
        mut sleep: Pin<&mut Option<Tm::Sleep>>,
    ) -> bool {
        let now = self.start(timer);
        let Some(times) = times else {
            unreachable!("the race starts its times before it arms");
        };
        times.resolve(now);
        let Some(deadline) = times.armed_at() else {
            return false;
        };
        sleep.set(Some(timer.sleep_until(deadline, now)));
        true
    }

    /// The timer, armed for the deadline the call's `times` hold, fired: the times move
    /// onto the clock if their start was unread (`sleep` tells it), the deadline is taken,
    /// and time has moved on, to the deadline at least (a timer that fires is trusted,
    /// whatever its clock says).
    #[inline(always)]
    pub(crate) fn fired<Tm: Timer>(
        &mut self,
        times: Option<&mut Times>,
        timer: &Tm,
        sleep: Option<&Tm::Sleep>,
    ) {
        let deadline = times.and_then(|times| {
            times.read_start(timer, sleep);
            times.armed_at.take()
        });
        let now = timer.now();
        self.now = Some(deadline.map_or(now, |deadline| now.max(deadline)));
        self.unread = false;
    }
}

/// The race's times, from when its clock starts: the original's first `Pending`.
pub(crate) struct Times {
    /// When the original first said `Pending`.
    pub(super) first_start: Duration,
    /// The newest copy's start by the schedule: its due time, or when it started early.
    pub(super) last_start: Duration,
    /// When the copy of the last `Next::Start` starts, as its `Attempt::elapsed` says:
    /// the clock, or the start of the copy before if the clock reads earlier (a clock
    /// that went back, a sleep that fired early), so starts never go backwards.
    pub(super) latest_start: Duration,
    pub(super) next_due: Due,
    /// The deadline the timer is armed for.
    pub(super) armed_at: Option<Duration>,
    /// Whether these times count from the call's start, which was not read (see
    /// [`Clock::new`]): zero is the start, until [`Times::resolve`].
    pub(super) unread: bool,
}

impl Times {
    /// The call's times, started on `clock` as it reads: the original's first `Pending`.
    #[inline(always)]
    pub(super) fn start<Tm: Timer>(clock: &mut Clock, timer: &Tm) -> Times {
        let now = clock.now(timer);
        Times {
            first_start: now,
            last_start: now,
            latest_start: now,
            next_due: Due::Unknown,
            armed_at: None,
            unread: clock.is_unread(),
        }
    }

    /// Moves the times onto the clock if their start is unread, as the call's first
    /// `sleep` tells it ([`Timer::started`]): before any decision that needs the time.
    #[inline]
    pub(crate) fn read_start<Tm: Timer>(&mut self, timer: &Tm, sleep: Option<&Tm::Sleep>) {
        if let Some(after) = self.unread_start() {
            let Some(sleep) = sleep else {
                unreachable!("a call whose start is unread has its first sleep");
            };
            self.resolve(timer.started(sleep, after));
        }
    }

    /// How far past the call's start the timer is armed, while the start is unread: the
    /// first sleep, made without reading the clock, tells the start (`Timer::started`).
    #[inline]
    fn unread_start(&self) -> Option<Duration> {
        match self.unread {
            true => self.armed_at,
            false => None,
        }
    }

    /// The call's clock, which started unread, started at `start`: the times that counted
    /// from it move onto the clock, as if it had been read then. Whatever saturates is past
    /// the end of time.
    #[cold]
    fn resolve(&mut self, start: Duration) {
        if !self.unread {
            return;
        }
        self.unread = false;
        self.first_start = start;
        self.last_start = start.saturating_add(self.last_start);
        self.latest_start = start.saturating_add(self.latest_start);
        if let Due::At(due) = self.next_due {
            self.next_due = deadline(start, due).map_or(Due::Never, Due::At);
        }
        self.armed_at = self.armed_at.and_then(|armed_at| deadline(start, armed_at));
    }

    /// The deadline the timer is armed for, once the call's clock was read.
    fn armed_at(&self) -> Option<Duration> {
        self.armed_at.filter(|_| !self.unread)
    }

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
                Some(key) => key_tracker(settings, key, self.last_start),
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

/// The own tracker of a call's `key` at `now`, and `now` in nanoseconds, at which its
/// lookup marked the key used (its delay is read at the same time); `None` where the
/// call hedges at the policy's estimate (no adaptive delay, or the key not kept).
#[inline]
fn key_tracker<Tm>(
    settings: &Settings<Tm>,
    key: Key,
    now: Duration,
) -> Option<(&LatencyTracker, u64)> {
    let (Some(keys), Some(_)) = (&settings.keys, settings.schedule.tracker()) else {
        return None;
    };
    let now = nanos(now);
    Some((keys.find_or_take_at(key, now)?.tracker.as_ref()?, now))
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
