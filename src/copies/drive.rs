//! [`InFlight`]: the copies in flight and the one timer, and the loop that carries out
//! what the race decides on them.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use super::copier::{judge, make, poll, Copier, RaceEntry};
use crate::attempt::{Attempt, Classify, Verdict};
use crate::policy::Settings;
use crate::race::{verdict, End, Next, Pass, Race};
use crate::timeout::Deadlines;
use crate::timer::Timer;

/// The copies in flight and the one timer that schedules the next: a call's original and
/// the parts of its race that hold copies.
pub(crate) struct InFlight<'a, C, S> {
    pub(super) original: Pin<&'a mut Option<C>>,
    pub(super) hedges: &'a mut Option<Vec<Slot<C>>>,
    pub(super) sleep: Pin<&'a mut Option<S>>,
}

/// Copy k's place in the slab: the copy, boxed, and when it started.
pub(super) struct Slot<C> {
    pub(super) copy: Option<Pin<Box<C>>>,
    started: Duration,
}

/// One poll of a call: how its copies are made and judged, what its race decides with,
/// and the task to wake.
pub(crate) struct Poller<'a, 'cx, K, Cl, Tm, D> {
    pub(crate) copier: K,
    pub(crate) classify: &'a mut Cl,
    pub(crate) cx: &'a mut Context<'cx>,
    pub(crate) pass: Pass<'a, Tm, D>,
}

impl<'a, 'cx, K: Copier, Cl, Tm: Timer, D: Deadlines<K::Error>> Poller<'a, 'cx, K, Cl, Tm, D> {
    /// The poll of a call entering its race at `entry`.
    #[inline(always)]
    pub(crate) fn new(
        (copier, classify): (K, &'a mut Cl),
        deadlines: &'a D,
        settings: &'a Settings<Tm>,
        cx: &'a mut Context<'cx>,
        entry: &RaceEntry<K::Ok, K::Error>,
    ) -> Self {
        let starting = matches!(entry, RaceEntry::Pending);
        Poller {
            copier,
            classify,
            cx,
            pass: Pass::new(settings, deadlines, starting),
        }
    }
}

impl<C, S: Future<Output = ()>> InFlight<'_, C, S> {
    /// Polls every copy in flight (or settles the original, just started), then does
    /// what the race says until it waits or ends.
    #[inline]
    pub(crate) fn drive<K, Cl, D, Tm>(
        &mut self,
        race: &mut Race<K::Ok, K::Error>,
        poller: &mut Poller<'_, '_, K, Cl, Tm, D>,
        entry: RaceEntry<K::Ok, K::Error>,
    ) -> Poll<End<K::Ok, K::Error>>
    where
        K: Copier<Copy = C>,
        Cl: Classify<K::Ok, K::Error>,
        D: Deadlines<K::Error>,
        Tm: Timer<Sleep = S>,
    {
        let settled = match entry {
            RaceEntry::Running => self.poll_each(race, poller),
            RaceEntry::Pending => None,
            RaceEntry::Finished(finished, verdict) => {
                race.settle(0, finished, verdict, &mut poller.pass)
            }
        };
        if let Some(end) = settled {
            return Poll::Ready(end);
        }
        let timer = &poller.pass.settings.timer;
        self.read_start(race, timer);
        loop {
            let oldest_start = match poller.pass.deadlines.attempt() {
                Some(_) => race
                    .oldest_in_flight()
                    .map(|index| self.started(race, index)),
                None => None,
            };
            match race.next(&mut poller.pass, oldest_start) {
                Next::Wait => return Poll::Pending,
                Next::End(end) => return Poll::Ready(end),
                Next::Sleep { rearm } => {
                    if let Some(arm) = rearm {
                        let (times, sleep) = (race.times_mut(), self.sleep.as_mut());
                        if !poller.pass.clock.arm(times, timer, sleep, arm) {
                            continue; // read, the deadline is past the end of time
                        }
                    }
                    let fired = self
                        .sleep
                        .as_mut()
                        .as_pin_mut()
                        .map_or(Poll::Ready(()), |s| s.poll(poller.cx));
                    if fired.is_pending() {
                        return Poll::Pending;
                    }
                    let sleep = self.sleep.as_ref().get_ref().as_ref();
                    poller.pass.clock.fired(race.times_mut(), timer, sleep);
                }
                Next::Expire { now, attempt } => self.expire(race, now, attempt, &poller.pass),
                Next::Start(attempt) => {
                    if let Some(end) = self.launch(race, attempt, poller) {
                        return Poll::Ready(end);
                    }
                }
            }
        }
    }

    /// Moves the race onto the clock if its start is unread, as its first sleep tells it:
    /// before any decision that needs the time.
    #[inline]
    fn read_start<T, E, Tm: Timer<Sleep = S>>(&self, race: &mut Race<T, E>, timer: &Tm) {
        if let Some(times) = race.times_mut() {
            times.read_start(timer, self.sleep.as_ref().get_ref().as_ref());
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
    fn poll_each<K, Cl, Tm, D>(
        &mut self,
        race: &mut Race<K::Ok, K::Error>,
        poller: &mut Poller<'_, '_, K, Cl, Tm, D>,
    ) -> Option<End<K::Ok, K::Error>>
    where
        K: Copier<Copy = C>,
        Cl: Classify<K::Ok, K::Error>,
        Tm: Timer<Sleep = S>,
    {
        let catch = poller.pass.settings.catch_unwind;
        if let Some(copy) = self.original.as_mut().as_pin_mut() {
            if let Poll::Ready(finished) = poll::<K>(copy, poller.cx, catch) {
                let original = &mut self.original;
                let verdict = judge::<K, _>(&finished, poller.classify, || original.set(None));
                if verdict != Some(Verdict::Win) {
                    self.read_start(race, &poller.pass.settings.timer); // the call goes on
                }
                if let Some(end) = race.settle(0, finished, verdict, &mut poller.pass) {
                    return Some(end);
                }
            }
        }
        let slab = self.hedges.as_deref_mut().unwrap_or_default();
        for (slot, index) in slab.iter_mut().zip(1..) {
            if let Some(end) = poll_slot(slot, index, race, poller) {
                return Some(end);
            }
        }
        None
    }

    /// Starts copy `attempt.index()`, as the race asked, and polls it once.
    #[inline(always)]
    fn launch<K, Cl, Tm, D>(
        &mut self,
        race: &mut Race<K::Ok, K::Error>,
        attempt: Attempt,
        poller: &mut Poller<'_, '_, K, Cl, Tm, D>,
    ) -> Option<End<K::Ok, K::Error>>
    where
        K: Copier<Copy = C>,
        Cl: Classify<K::Ok, K::Error>,
        Tm: Timer,
    {
        let settings = poller.pass.settings;
        let catch = settings.catch_unwind;
        // A factory that may decline makes the copy first: a declined copy never takes a
        // token or a slot, nor runs the hook. One whose making panicked started and failed.
        let made_first = match K::MAY_DECLINE {
            true => match make(&mut poller.copier, attempt, catch) {
                Ok(None) => {
                    race.declined();
                    return None;
                }
                made => Some(made),
            },
            false => None,
        };
        if !matches!(made_first, Some(Err(_))) {
            if !race.admit(&mut poller.pass) {
                return None; // dropped before its first poll, if made: it never started
            }
            race.hook(settings, &attempt);
        }
        let made = match made_first.unwrap_or_else(|| make(&mut poller.copier, attempt, catch)) {
            Ok(Some(copy)) => Ok(copy),
            Ok(None) => {
                panic!("`Factory::make` returned `None` though `Factory::MAY_DECLINE` is false")
            }
            Err(panicked) => Err(panicked),
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
                poll_slot(slot, index, race, poller)
            }
            Err(panicked) => {
                // The slot is held empty so later copies keep their index.
                slab.push(Slot {
                    copy: None,
                    started,
                });
                let verdict = verdict(&panicked, poller.classify);
                race.settle(index, panicked, verdict, &mut poller.pass)
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
        pass: &Pass<'_, Tm, D>,
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
            race.timed_out(0, pass);
        }
        let slab = self.hedges.as_deref_mut().unwrap_or_default();
        for (slot, index) in slab.iter_mut().zip(1..) {
            if slot.copy.is_some() {
                if !timed_out(slot.started) {
                    return;
                }
                slot.copy = None;
                race.timed_out(index, pass);
            }
        }
    }
}

impl<C, S> InFlight<'_, C, S> {
    /// Ends the race: drops every copy (but a winner that stays: see
    /// [`Copier::KEEP_WINNER`]) and the timer, then records the call. Returns the
    /// index of the copy that stays, if one does.
    #[inline(always)]
    pub(crate) fn conclude<K, Tm>(
        &mut self,
        race: &mut Race<K::Ok, K::Error>,
        settings: &Settings<Tm>,
        end: &End<K::Ok, K::Error>,
    ) -> Option<usize>
    where
        K: Copier<Copy = C>,
        Tm: Timer,
    {
        let original_alive = self.original.is_some();
        let stays = match end {
            End::Won { index, .. } if K::KEEP_WINNER => Some(*index),
            _ => None,
        };
        match stays {
            Some(winner) => self.clear_except(winner),
            None => self.clear(),
        }
        race.conclude(settings, end, original_alive);
        stays
    }

    /// Drops every copy and the timer.
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        self.original.set(None);
        if let Some(slab) = self.hedges {
            slab.clear();
        }
        self.sleep.set(None);
    }

    /// Drops every copy but `winner`, and the timer.
    fn clear_except(&mut self, winner: usize) {
        if winner != 0 {
            self.original.set(None);
        }
        if let Some(slab) = self.hedges {
            for (slot, index) in slab.iter_mut().zip(1..) {
                if index != winner {
                    slot.copy = None;
                }
            }
        }
        self.sleep.set(None);
    }
}

/// Polls the copy in `slot` (copy `index`), settling it if it finished.
#[inline(always)]
fn poll_slot<K, Cl, Tm, D>(
    slot: &mut Slot<K::Copy>,
    index: usize,
    race: &mut Race<K::Ok, K::Error>,
    poller: &mut Poller<'_, '_, K, Cl, Tm, D>,
) -> Option<End<K::Ok, K::Error>>
where
    K: Copier,
    Cl: Classify<K::Ok, K::Error>,
    Tm: Timer,
{
    let copy = slot.copy.as_mut()?;
    let catch = poller.pass.settings.catch_unwind;
    let Poll::Ready(finished) = poll::<K>(copy.as_mut(), poller.cx, catch) else {
        return None;
    };
    let verdict = judge::<K, _>(&finished, poller.classify, || slot.copy = None);
    race.settle(index, finished, verdict, &mut poller.pass)
}
