//! The loop that races a call's copies: it polls them, reports what it saw to the race,
//! and carries out what the race decides (start a copy, expire copies, arm the timer).

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use super::{Copier, Copies, RaceEntry, Slot, State};
use crate::attempt::{Attempt, Classify, Verdict};
use crate::policy::Settings;
use crate::race::{Arm, Clock, End, Finished, Next, Race};
use crate::timeout::Deadlines;
use crate::timer::Timer;

impl<C, S, T, E> State<C, S, T, E> {
    /// Starts the original copy and polls it once. A finished original is still in its
    /// place: see [`State::drop_original`].
    #[inline]
    pub(crate) fn launch_original<K, Tm>(
        mut self: Pin<&mut Self>,
        copier: &mut K,
        settings: &Settings<Tm>,
        cx: &mut Context<'_>,
    ) -> Poll<Finished<T, E>>
    where
        K: Copier<Copy = C, Ok = T, Error = E>,
    {
        let attempt = self.as_mut().first_attempt(settings);
        // Read once, for the copy's making and its first poll.
        let catch = settings.catch_unwind;
        match make(copier, attempt, catch) {
            Ok(Some(copy)) => {
                self.as_mut().original().set(Some(copy));
                self.poll_original::<K>(catch, cx)
            }
            Ok(None) => panic!(
                "the original copy cannot be declined: the factory returned `None` for attempt 0"
            ),
            // A caught factory panic is a copy that failed at once.
            Err(panicked) => Poll::Ready(panicked),
        }
    }

    /// Polls the original, which must be in flight; with `catch`, a panic is its end.
    #[inline]
    pub(crate) fn poll_original<K>(
        self: Pin<&mut Self>,
        catch: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Finished<T, E>>
    where
        K: Copier<Copy = C, Ok = T, Error = E>,
    {
        match self.original().as_pin_mut() {
            Some(copy) => poll::<K>(copy, cx, catch),
            None => unreachable!("the original is in flight"),
        }
    }

    /// Drops the original copy.
    #[inline]
    pub(crate) fn drop_original(self: Pin<&mut Self>) {
        self.original().set(None);
    }
}

impl<C, S: Future<Output = ()>> Copies<'_, C, S> {
    /// Polls every copy in flight (or settles the original, just started), then does
    /// what the race says until it waits or ends.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn drive<K, Cl, D, Tm>(
        &mut self,
        race: &mut Race<K::Ok, K::Error>,
        copier: &mut K,
        classify: &mut Cl,
        deadlines: &D,
        settings: &Settings<Tm>,
        cx: &mut Context<'_>,
        entry: RaceEntry<K::Ok, K::Error>,
    ) -> Poll<End<K::Ok, K::Error>>
    where
        K: Copier<Copy = C>,
        Cl: Classify<K::Ok, K::Error>,
        D: Deadlines<K::Error>,
        Tm: Timer<Sleep = S>,
    {
        // The poll that starts the call's clock leaves it unread while its decisions need
        // only the time since the start: a timer that can tell when its first sleep started
        // is then never asked the time unless the call goes on.
        let unread = matches!(entry, RaceEntry::Pending)
            && deadlines.attempt().is_none()
            && deadlines.total().is_none()
            && settings.schedule.tracker().is_none();
        let mut clock = Clock::new(&settings.timer, unread);
        let settled = match entry {
            RaceEntry::Running => {
                self.poll_each::<K, _, _>(race, classify, settings, &mut clock, cx)
            }
            RaceEntry::Pending => None,
            RaceEntry::Finished(finished, verdict) => {
                race.settle(0, finished, verdict, settings, &mut clock)
            }
        };
        if let Some(end) = settled {
            return Poll::Ready(end);
        }
        self.read_start(race, &settings.timer);
        loop {
            let oldest_start = match deadlines.attempt() {
                Some(_) => race
                    .oldest_in_flight()
                    .map(|index| self.started(race, index)),
                None => None,
            };
            match race.next(settings, deadlines, oldest_start, &mut clock) {
                Next::Wait => return Poll::Pending,
                Next::End(end) => return Poll::Ready(end),
                Next::Sleep { rearm } => {
                    if let Some(arm) = rearm {
                        if !self.arm(race, &mut clock, &settings.timer, arm) {
                            continue; // read, the deadline is past the end of time
                        }
                    }
                    let fired = self
                        .sleep
                        .as_mut()
                        .as_pin_mut()
                        .map_or(Poll::Ready(()), |s| s.poll(cx));
                    if fired.is_pending() {
                        return Poll::Pending;
                    }
                    self.read_start(race, &settings.timer);
                    let deadline = race.fired();
                    clock.fired_at(deadline);
                }
                Next::Expire { now, attempt } => {
                    self.expire(race, now, attempt, deadlines, settings);
                }
                Next::Start(attempt) => {
                    let launched =
                        self.launch(race, attempt, copier, classify, settings, &mut clock, cx);
                    if let Some(end) = launched {
                        return Poll::Ready(end);
                    }
                }
            }
        }
    }

    /// Arms the timer as the race asked, or re-arms it; `false` if nothing was armed: the
    /// clock, read for a timer that cannot arm before the reading, put the deadline past
    /// the end of time.
    #[inline(always)]
    fn arm<T, E, Tm: Timer<Sleep = S>>(
        &mut self,
        race: &mut Race<T, E>,
        clock: &mut Clock<'_, Tm>,
        timer: &Tm,
        Arm { deadline, now }: Arm,
    ) -> bool {
        match self.sleep.as_mut().as_pin_mut() {
            Some(armed) => timer.reset_until(armed, deadline, now),
            None if clock.is_unread() => {
                // The call's first sleep, its clock unread: the deadline counts from the
                // call's start, and `now` is that start.
                self.sleep.set(timer.sleep_from_now(deadline));
                if self.sleep.is_none() {
                    return self.arm_read(race, clock, timer);
                }
            }
            None => self.sleep.set(Some(timer.sleep_until(deadline, now))),
        }
        true
    }

    /// [`Copies::arm`] for a timer that cannot arm before the clock is read: reads it, and
    /// arms for the race's deadline on it.
    #[inline(never)]
    fn arm_read<T, E, Tm: Timer<Sleep = S>>(
        &mut self,
        race: &mut Race<T, E>,
        clock: &mut Clock<'_, Tm>,
        timer: &Tm,
    ) -> bool {
        let now = clock.start();
        race.resolve(now);
        let Some(deadline) = race.armed_at() else {
            return false;
        };
        self.sleep.set(Some(timer.sleep_until(deadline, now)));
        true
    }

    /// Moves the race onto the clock if its start is unread, as its first sleep tells it:
    /// before any decision that needs the time.
    #[inline]
    fn read_start<T, E, Tm: Timer<Sleep = S>>(&self, race: &mut Race<T, E>, timer: &Tm) {
        if let Some(after) = race.unread_start() {
            let Some(sleep) = self.sleep.as_ref().get_ref() else {
                unreachable!("a call whose start is unread has its first sleep");
            };
            race.resolve(timer.started(sleep, after));
        }
    }

    /// When copy `index` started.
    fn started<T, E>(&self, race: &Race<T, E>, index: usize) -> Duration {
        let first_start = race.first_start().unwrap_or_default();
        match (index, &*self.hedges) {
            (1.., Some(slab)) => slab.get(index - 1).map_or(first_start, |slot| slot.started),
            _ => first_start,
        }
    }

    /// Polls every copy in flight in index order, settling each that finished; stops at
    /// the first that ends the race.
    #[inline(always)]
    fn poll_each<K, Cl, Tm>(
        &mut self,
        race: &mut Race<K::Ok, K::Error>,
        classify: &mut Cl,
        settings: &Settings<Tm>,
        clock: &mut Clock<'_, Tm>,
        cx: &mut Context<'_>,
    ) -> Option<End<K::Ok, K::Error>>
    where
        K: Copier<Copy = C>,
        Cl: Classify<K::Ok, K::Error>,
        Tm: Timer<Sleep = S>,
    {
        let catch = settings.catch_unwind;
        if let Some(copy) = self.original.as_mut().as_pin_mut() {
            if let Poll::Ready(finished) = poll::<K>(copy, cx, catch) {
                let verdict = Race::verdict(&finished, classify);
                if !K::stays(verdict) {
                    self.original.set(None);
                }
                if verdict != Some(Verdict::Win) {
                    self.read_start(race, &settings.timer); // the call goes on
                }
                if let Some(end) = race.settle(0, finished, verdict, settings, clock) {
                    return Some(end);
                }
            }
        }
        let slab = self.hedges.as_deref_mut().unwrap_or_default();
        for (slot, index) in slab.iter_mut().zip(1..) {
            if let Some(end) =
                poll_slot::<K, _, _>(slot, index, race, classify, settings, clock, cx)
            {
                return Some(end);
            }
        }
        None
    }

    /// Starts copy `attempt.index()`, as the race asked, and polls it once.
    #[allow(clippy::too_many_arguments)]
    fn launch<K, Cl, Tm>(
        &mut self,
        race: &mut Race<K::Ok, K::Error>,
        attempt: Attempt,
        copier: &mut K,
        classify: &mut Cl,
        settings: &Settings<Tm>,
        clock: &mut Clock<'_, Tm>,
        cx: &mut Context<'_>,
    ) -> Option<End<K::Ok, K::Error>>
    where
        K: Copier<Copy = C>,
        Cl: Classify<K::Ok, K::Error>,
        Tm: Timer,
    {
        let catch = settings.catch_unwind;
        let made = if K::MAY_DECLINE {
            // Made first: a declined copy never takes a token or a slot, nor runs the hook.
            match make(copier, attempt, catch) {
                Ok(None) => {
                    race.declined();
                    return None;
                }
                Ok(Some(copy)) => {
                    if !race.admit(settings, clock) {
                        return None; // dropped before its first poll: it never started
                    }
                    race.hook(settings, &attempt);
                    Ok(copy)
                }
                Err(panicked) => Err(panicked),
            }
        } else {
            if !race.admit(settings, clock) {
                return None;
            }
            race.hook(settings, &attempt);
            match make(copier, attempt, catch) {
                Ok(Some(copy)) => Ok(copy),
                Ok(None) => {
                    panic!("`Factory::make` returned `None` though `Factory::MAY_DECLINE` is false")
                }
                Err(panicked) => Err(panicked),
            }
        };
        race.record_launch(settings);
        let index = attempt.index();
        let started = race.first_start().unwrap_or_default() + attempt.elapsed();
        let max_copies = attempt.max_copies();
        let slab = self
            .hedges
            .get_or_insert_with(|| Vec::with_capacity(max_copies - 1));
        match made {
            Ok(copy) => {
                slab.push(Slot {
                    copy: Some(Box::pin(copy)),
                    started,
                });
                let slot = slab.last_mut().expect("a slot was just pushed");
                poll_slot::<K, _, _>(slot, index, race, classify, settings, clock, cx)
            }
            Err(panicked) => {
                // The slot is held empty so later copies keep their index.
                slab.push(Slot {
                    copy: None,
                    started,
                });
                let verdict = Race::verdict(&panicked, classify);
                race.settle(index, panicked, verdict, settings, clock)
            }
        }
    }

    /// Drops the copies in flight whose `attempt` timeout passed by `now`. Copies start
    /// in index order, so the first younger one stops it.
    fn expire<T, E, D, Tm>(
        &mut self,
        race: &mut Race<T, E>,
        now: Duration,
        attempt: Duration,
        deadlines: &D,
        settings: &Settings<Tm>,
    ) where
        D: Deadlines<E>,
        Tm: Timer,
    {
        let timed_out = |started: Duration| started.saturating_add(attempt) <= now;
        if self.original.is_some() {
            if !timed_out(race.first_start().unwrap_or_default()) {
                return;
            }
            self.original.set(None);
            race.timed_out(0, deadlines, settings);
        }
        let slab = self.hedges.as_deref_mut().unwrap_or_default();
        for (slot, index) in slab.iter_mut().zip(1..) {
            if slot.copy.is_some() {
                if !timed_out(slot.started) {
                    return;
                }
                slot.copy = None;
                race.timed_out(index, deadlines, settings);
            }
        }
    }
}

/// Polls the copy in `slot` (copy `index`), settling it if it finished.
fn poll_slot<K, Cl, Tm>(
    slot: &mut Slot<K::Copy>,
    index: usize,
    race: &mut Race<K::Ok, K::Error>,
    classify: &mut Cl,
    settings: &Settings<Tm>,
    clock: &mut Clock<'_, Tm>,
    cx: &mut Context<'_>,
) -> Option<End<K::Ok, K::Error>>
where
    K: Copier,
    Cl: Classify<K::Ok, K::Error>,
    Tm: Timer,
{
    let copy = slot.copy.as_mut()?;
    let Poll::Ready(finished) = poll::<K>(copy.as_mut(), cx, settings.catch_unwind) else {
        return None;
    };
    let verdict = Race::verdict(&finished, classify);
    if !K::stays(verdict) {
        slot.copy = None;
    }
    race.settle(index, finished, verdict, settings, clock)
}

/// Polls one copy; with `catch`, a panic is the copy's end.
#[inline]
fn poll<K: Copier>(
    copy: Pin<&mut K::Copy>,
    cx: &mut Context<'_>,
    catch: bool,
) -> Poll<Finished<K::Ok, K::Error>> {
    let finished = |polled: Option<Result<K::Ok, K::Error>>| match polled {
        Some(result) => Finished::Item(result),
        None => Finished::Ended,
    };
    #[cfg(feature = "std")]
    if catch {
        let polled =
            std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| K::poll_copy(copy, cx)));
        return match polled {
            Ok(poll) => poll.map(finished),
            Err(panic) => Poll::Ready(Finished::Panicked(panic)),
        };
    }
    let _ = catch;
    K::poll_copy(copy, cx).map(finished)
}

/// A copy made (or declined), or, under `catch_unwind`, how it ended when its factory
/// panicked.
type Made<K> =
    Result<Option<<K as Copier>::Copy>, Finished<<K as Copier>::Ok, <K as Copier>::Error>>;

/// Makes a copy; with `catch`, a panicking factory yields the panic as the copy's end.
fn make<K: Copier>(copier: &mut K, attempt: Attempt, catch: bool) -> Made<K> {
    #[cfg(feature = "std")]
    if catch {
        let make = core::panic::AssertUnwindSafe(|| copier.make(attempt));
        return std::panic::catch_unwind(make).map_err(Finished::Panicked);
    }
    let _ = catch;
    Ok(copier.make(attempt))
}
