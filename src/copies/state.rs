//! A call's [`State`]: its phase, its cap, its original, and its race once made; and
//! [`Call`], the state with its policy, which cancels the call when dropped mid-race.

use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use pin_project::pin_project;

use super::copier::{judge, make, poll, Copier, RaceEntry};
use super::drive::{InFlight, Poller, Slot};
use super::place::Place;
use crate::attempt::{Attempt, Classify, Verdict};
use crate::cold::{Cold, ColdTaken};
use crate::key::CallKey;
use crate::keyed::Key;
use crate::policy::{AsPolicy, Settings};
use crate::race::{cancelled_without_race, End, Finished, Phase, Race};
use crate::timeout::Deadlines;
use crate::timer::Timer;

/// One call: the policy it runs under, and its state.
///
/// Dropped mid-race, it drops the copies first, then gives back their budget slots and
/// counts the call as cancelled, even if a copy panics as it drops; a call that finished
/// pays a check for each place that may still hold something.
#[pin_project(PinnedDrop, project = CallParts)]
pub(crate) struct Call<P: AsPolicy, C, T, E> {
    pub(crate) policy: P,
    #[pin]
    pub(crate) state: State<C, <P::Timer as Timer>::Sleep, T, E>,
}

impl<P: AsPolicy, C, T, E> Call<P, C, T, E> {
    pub(crate) const fn new(policy: P) -> Self {
        Call {
            policy,
            state: State {
                phase: Phase::Idle,
                // Until the call begins, its own cap (see `cap`).
                max_copies: MAX_COPIES,
                original: Cold::new(),
                racing: Place::Empty,
            },
        }
    }
}

#[pin_project::pinned_drop]
impl<P: AsPolicy, C, T, E> PinnedDrop for Call<P, C, T, E> {
    #[inline]
    fn drop(self: Pin<&mut Self>) {
        if self.state.phase == Phase::Running {
            cancel(self);
        }
    }
}

#[cold]
#[inline(never)]
fn cancel<P: AsPolicy, C, T, E>(call: Pin<&mut Call<P, C, T, E>>) {
    let parts = call.project();
    let mut cancel = Cancel {
        state: parts.state,
        settings: parts.policy.as_policy().settings(),
    };
    cancel.state.as_mut().clear();
}

/// Cancels a call as it drops: after `cancel`'s own clearing, or while a copy's panic
/// unwinds out of it, when the copies left are dropped first.
struct Cancel<'a, C, S, T, E, Tm> {
    state: Pin<&'a mut State<C, S, T, E>>,
    settings: &'a Settings<Tm>,
}

impl<C, S, T, E, Tm> Drop for Cancel<'_, C, S, T, E, Tm> {
    fn drop(&mut self) {
        self.state.as_mut().clear();
        match self.state.as_mut().project().racing.get_pin_mut() {
            Some(racing) => racing.project().race.cancel(self.settings),
            None => cancelled_without_race(self.settings),
        }
    }
}

/// A call's state: its phase, its cap, its original copy, and, once the original did not
/// win its first poll, its race with the other copies and the timer. A call its original
/// wins at once makes no race: it starts, polls and drops one copy.
#[pin_project]
pub(crate) struct State<C, S, T, E> {
    pub(crate) phase: Phase,
    /// The call's own cap, or 1 if it lost the policy's probability roll; the copies it
    /// may start are the fewer of these and the policy's `max_copies`.
    max_copies: u8,
    /// The original lives inline: a call it wins allocates nothing.
    #[pin]
    original: Cold<C>,
    /// Empty until the original's first poll did not win (and, when the original runs
    /// alone, until it fails).
    #[pin]
    racing: Place<Racing<C, S, T, E>>,
}

/// A race under way: its decisions, the hedges and the one timer.
#[pin_project]
struct Racing<C, S, T, E> {
    race: Race<T, E>,
    /// Copy k lives at `[k - 1]`; allocated at the first hedge, with room for every copy
    /// the call may start.
    hedges: ColdTaken<Vec<Slot<C>>>,
    #[pin]
    sleep: Option<S>,
}

/// The most copies a call starts: `PolicyBuilder::MAX_COPIES`.
const MAX_COPIES: u8 = 64;

impl<C, S, T, E> State<C, S, T, E> {
    /// Caps the copies this call may start; too late once it began.
    pub(crate) fn cap(&mut self, max_copies: usize) {
        if self.phase == Phase::Idle {
            self.max_copies = max_copies.clamp(1, MAX_COPIES.into()) as u8;
        }
    }

    /// The copies this call may start (its own cap, until its race is made).
    pub(crate) fn max_copies(&self) -> usize {
        match self.racing.get() {
            Some(racing) => racing.race.max_copies(),
            None => self.max_copies.into(),
        }
    }

    /// Whether this call, once it began, may start one copy only: hedging is off for it.
    #[inline]
    pub(crate) fn one_copy<Tm>(&self, settings: &Settings<Tm>) -> bool {
        self.max_copies == 1 || settings.max_copies == 1
    }

    /// The copies this call may start, once it began.
    #[inline]
    pub(crate) fn copies_allowed<Tm>(&self, settings: &Settings<Tm>) -> usize {
        usize::from(self.max_copies).min(settings.max_copies)
    }

    /// Copies started so far.
    pub(crate) fn launched(&self) -> usize {
        match (self.racing.get(), self.phase) {
            (Some(racing), _) => racing.race.launched(),
            (None, Phase::Idle) => 0,
            (None, _) => 1,
        }
    }

    /// Whether the call has made its race. It has none while its original runs with
    /// hedging off, no timeouts and no failure. A race, once made, stays: a cap that falls
    /// to 1 mid-race (a refusal, a declined copy) keeps its timer and its clock, and the
    /// call ends through the race.
    #[inline]
    pub(crate) fn has_race(&self) -> bool {
        self.racing.get().is_some()
    }

    /// Whether copy `index` is alive.
    pub(crate) fn holds(&self, index: usize) -> bool {
        match (index, self.racing.get()) {
            (0, _) => self.original.is_some(),
            (_, Some(racing)) => racing
                .hedges
                .0
                .as_ref()
                .and_then(|slab| slab.get(index - 1))
                .is_some_and(|slot| slot.copy.is_some()),
            (_, None) => false,
        }
    }

    /// Marks the call running and returns its original's attempt, after rolling the
    /// policy's dice, if it has any.
    #[inline]
    pub(crate) fn first_attempt<Tm>(mut self: Pin<&mut Self>, settings: &Settings<Tm>) -> Attempt {
        let this = self.as_mut().project();
        *this.phase = Phase::Running;
        if settings.loses_roll() {
            *this.max_copies = 1;
        }
        Attempt::new(0, self.copies_allowed(settings), Duration::ZERO)
    }

    /// The call returned (or, for a stream, committed to its winner).
    #[inline]
    pub(crate) fn done(self: Pin<&mut Self>) {
        *self.project().phase = Phase::Done;
    }

    /// The original's place.
    #[inline]
    pub(crate) fn original(self: Pin<&mut Self>) -> Pin<&mut Option<C>> {
        self.project().original.get()
    }

    /// The call's race and its copies; the race is made here, for a call with `key`, if
    /// the call has none yet, with its original started and polled once.
    #[inline]
    pub(crate) fn race<K: CallKey, Tm>(
        self: Pin<&mut Self>,
        settings: &Settings<Tm>,
        key: &K,
    ) -> (&mut Race<T, E>, InFlight<'_, C, S>) {
        let this = self.project();
        let cap = *this.max_copies;
        let racing = this.racing.get_or_fill_with(|| {
            // The policy's switch is read here, once per call, where its race is made (a
            // call answered at once never reads it): a disabled policy races one copy.
            // At most `PolicyBuilder::MAX_COPIES` (64): a byte holds it.
            let max_copies = settings.copies_allowed(usize::from(cap)) as u8;
            Racing {
                race: Race::new(max_copies, key_hash(key, settings)),
                hedges: ColdTaken(None),
                sleep: None,
            }
        });
        racing.split(this.original.get())
    }

    /// Copy `index`, if it is alive.
    pub(crate) fn copy(self: Pin<&mut Self>, index: usize) -> Option<Pin<&mut C>> {
        let this = self.project();
        match index {
            0 => this.original.get().as_pin_mut(),
            _ => this
                .racing
                .get_pin_mut()?
                .project()
                .hedges
                .0
                .as_mut()?
                .get_mut(index - 1)?
                .copy
                .as_mut()
                .map(Pin::as_mut),
        }
    }

    /// Drops every copy and the timer.
    pub(crate) fn clear(self: Pin<&mut Self>) {
        let this = self.project();
        let mut original = this.original.get();
        match this.racing.get_pin_mut() {
            Some(racing) => racing.split(original).1.clear(),
            None => original.set(None),
        }
    }

    /// Starts the original copy and polls it once. A finished original is still in its
    /// place: see [`State::judge_original`].
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

    /// The original finished, at its first poll or while the call had no race: its
    /// verdict, and its place emptied unless it is a winner that stays.
    #[inline]
    pub(crate) fn judge_original<K, Cl>(
        self: Pin<&mut Self>,
        finished: &Finished<T, E>,
        classify: &mut Cl,
    ) -> Option<Verdict>
    where
        K: Copier<Copy = C, Ok = T, Error = E>,
        Cl: Classify<T, E>,
    {
        let mut original = self.original();
        judge::<K, _>(finished, classify, || original.set(None))
    }

    /// The one run path of a call past its fast path: makes the race if the call has
    /// none (for the call's `key`, hashed then, see [`key_hash`]), drives the
    /// copies from `entry`, and when the race ends concludes it (every copy dropped but a
    /// winner that stays, the call counted) and marks the call done. Returns the end, and
    /// the index of the copy that stays if one does.
    #[inline(always)]
    pub(crate) fn run<K, Cl, D, Tm, Ck: CallKey>(
        mut self: Pin<&mut Self>,
        poller: &mut Poller<'_, '_, K, Cl, Tm, D>,
        entry: RaceEntry<T, E>,
        key: &Ck,
    ) -> Poll<(End<T, E>, Option<usize>)>
    where
        K: Copier<Copy = C, Ok = T, Error = E>,
        Cl: Classify<T, E>,
        D: Deadlines<E>,
        Tm: Timer<Sleep = S>,
        S: Future<Output = ()>,
    {
        let settings = poller.pass.settings;
        let (race, mut copies) = self.as_mut().race(settings, key);
        let Poll::Ready(end) = copies.drive(race, poller, entry) else {
            return Poll::Pending;
        };
        let stays = copies.conclude::<K, _>(race, settings, &end);
        self.done();
        Poll::Ready((end, stays))
    }
}

/// The hash of a call's `key` for its race, being made, on a policy with keys; none
/// otherwise. A call answered before it needs a race never reads its key.
#[inline(always)]
fn key_hash<K: CallKey, Tm>(key: &K, settings: &Settings<Tm>) -> Option<Key> {
    match settings.keys.is_some() {
        true => key.key_hash().0,
        false => None,
    }
}

impl<C, S, T, E> Racing<C, S, T, E> {
    /// The race, and the copies it holds with the call's `original`.
    fn split<'a>(
        self: Pin<&'a mut Self>,
        original: Pin<&'a mut Option<C>>,
    ) -> (&'a mut Race<T, E>, InFlight<'a, C, S>) {
        let racing = self.project();
        let copies = InFlight {
            original,
            hedges: &mut racing.hedges.0,
            sleep: racing.sleep,
        };
        (racing.race, copies)
    }
}
