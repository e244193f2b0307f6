//! The copies of one call and its one timer: where they live, and the loop that polls
//! them and carries out what the race decides. [`Hedge`](crate::Hedge) and
//! [`HedgeStream`](crate::HedgeStream) differ only in what a copy is (a future, or a
//! stream until its first item) and in what a winning copy becomes: that is
//! [`Contest`].

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use pin_project::pin_project;

use crate::attempt::{Attempt, Verdict};
use crate::policy::{AsPolicy, Shared};
use crate::race::{Finished, Phase, Race};
use crate::timer::Timer;

mod drive;

/// What a copy is, for the loop that races copies.
pub(crate) trait Contest {
    /// One copy.
    type Copy;
    type Ok;
    type Error;
    /// Whether a winning copy stays alive after the race (a stream: its later items).
    const KEEP_WINNER: bool;
    /// Whether the factory may decline a copy; if so, a copy is made before the budget
    /// is asked and the hook runs, so a declined copy touches neither.
    const MAY_DECLINE: bool;

    /// Whether a copy that finished with `verdict` stays alive: only a winning stream.
    fn stays(verdict: Option<Verdict>) -> bool {
        Self::KEEP_WINNER && verdict == Some(Verdict::Win)
    }

    /// Makes copy `attempt.index()`, or declines it.
    fn make(&mut self, attempt: Attempt) -> Option<Self::Copy>;

    /// Polls a copy for its result: a future's output, or a stream's first item (`None`
    /// when it ended without one).
    fn poll_copy(
        copy: Pin<&mut Self::Copy>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Self::Ok, Self::Error>>>;
}

/// How a poll of a call found its original.
pub(crate) enum Opening<T, E> {
    /// Started by an earlier poll: every copy in flight is to be polled.
    Running,
    /// Just started, and pending.
    Pending,
    /// Just started, and already finished without winning: to be settled.
    Finished(Finished<T, E>, Option<Verdict>),
}

/// One call: the policy it runs under, its race, and its copies. Dropped mid-race, it
/// drops the copies first, then gives back their budget slots and counts the call as
/// cancelled, even if a copy panics as it drops; a call that finished pays one check.
#[pin_project(PinnedDrop, project = CallParts)]
pub(crate) struct Call<P: AsPolicy, C, T, E> {
    pub(crate) policy: P,
    pub(crate) race: Race<T, E>,
    #[pin]
    pub(crate) copies: Copies<C, <P::Timer as Timer>::Sleep>,
}

impl<P: AsPolicy, C, T, E> Call<P, C, T, E> {
    pub(crate) const fn new(policy: P) -> Self {
        Call {
            policy,
            race: Race::new(),
            copies: Copies::new(),
        }
    }
}

#[pin_project::pinned_drop]
impl<P: AsPolicy, C, T, E> PinnedDrop for Call<P, C, T, E> {
    fn drop(self: Pin<&mut Self>) {
        if self.race.phase == Phase::Running {
            cancel(self);
        }
    }
}

#[cold]
#[inline(never)]
fn cancel<P: AsPolicy, C, T, E>(call: Pin<&mut Call<P, C, T, E>>) {
    let this = call.project();
    let mut cancel = Cancel {
        copies: this.copies,
        race: this.race,
        shared: this.policy.as_policy().shared(),
    };
    cancel.copies.as_mut().clear();
}

/// Cancels a call as it drops: after `cancel`'s own clearing, or while a copy's panic
/// unwinds out of it, when the copies left are dropped first.
struct Cancel<'a, C, S, T, E, Tm> {
    copies: Pin<&'a mut Copies<C, S>>,
    race: &'a mut Race<T, E>,
    shared: &'a Shared<Tm>,
}

impl<C, S, T, E, Tm> Drop for Cancel<'_, C, S, T, E, Tm> {
    fn drop(&mut self) {
        self.copies.as_mut().clear();
        self.race.cancel(self.shared);
    }
}

/// Copy k's place in the slab: the copy, boxed, and when it started.
struct Slot<C> {
    copy: Option<Pin<Box<C>>>,
    started: Duration,
}

/// Copy k lives at `[k - 1]`; the slab is allocated at the first hedge, with room for
/// every copy the call may start. `None` until then.
struct Hedges<C>(Option<Vec<Slot<C>>>);

impl<C> Drop for Hedges<C> {
    // A call that never hedged pays one check: the slab's drop loop stays out of line.
    #[inline]
    fn drop(&mut self) {
        if self.0.is_some() {
            drop_slab(self.0.take());
        }
    }
}

#[cold]
#[inline(never)]
fn drop_slab<T>(slab: Option<Vec<T>>) {
    drop(slab);
}

/// The copies in flight and the one timer that schedules the next.
#[pin_project]
pub(crate) struct Copies<C, S> {
    /// The original lives inline: a call it wins allocates nothing.
    #[pin]
    original: PinSlot<C>,
    hedges: Hedges<C>,
    #[pin]
    sleep: PinSlot<S>,
}

/// An `Option` in a pinned place whose drop is one check when it is empty: what it
/// holds is dropped out of line, so the drop of a call that finished stays small.
#[pin_project(PinnedDrop)]
struct PinSlot<T> {
    #[pin]
    value: Option<T>,
}

#[pin_project::pinned_drop]
impl<T> PinnedDrop for PinSlot<T> {
    fn drop(self: Pin<&mut Self>) {
        if self.value.is_some() {
            empty(self.project().value);
        }
    }
}

#[cold]
#[inline(never)]
fn empty<T>(mut slot: Pin<&mut Option<T>>) {
    slot.set(None);
}

impl<T> PinSlot<T> {
    const fn new() -> Self {
        PinSlot { value: None }
    }

    fn is_some(&self) -> bool {
        self.value.is_some()
    }

    #[inline]
    fn get(self: Pin<&mut Self>) -> Pin<&mut Option<T>> {
        self.project().value
    }
}

impl<C, S> Copies<C, S> {
    pub(crate) const fn new() -> Self {
        Copies {
            original: PinSlot::new(),
            hedges: Hedges(None),
            sleep: PinSlot::new(),
        }
    }

    /// Whether the original is still in flight.
    pub(crate) fn original_alive(&self) -> bool {
        self.original.is_some()
    }

    /// Drops every copy and the timer.
    #[inline]
    pub(crate) fn clear(self: Pin<&mut Self>) {
        let mut this = self.project();
        this.original.as_mut().get().set(None);
        if let Some(slab) = &mut this.hedges.0 {
            slab.clear();
        }
        this.sleep.as_mut().get().set(None);
    }

    /// Drops every copy but `winner`, and the timer.
    pub(crate) fn clear_except(self: Pin<&mut Self>, winner: usize) {
        let mut this = self.project();
        if winner != 0 {
            this.original.as_mut().get().set(None);
        }
        if let Some(slab) = &mut this.hedges.0 {
            for (slot, index) in slab.iter_mut().zip(1..) {
                if index != winner {
                    slot.copy = None;
                }
            }
        }
        this.sleep.as_mut().get().set(None);
    }

    /// Whether copy `index` is alive.
    pub(crate) fn holds(&self, index: usize) -> bool {
        match index {
            0 => self.original.is_some(),
            _ => self
                .hedges
                .0
                .as_ref()
                .and_then(|slab| slab.get(index - 1))
                .is_some_and(|slot| slot.copy.is_some()),
        }
    }

    /// Copy `index`, if it is alive.
    pub(crate) fn get(self: Pin<&mut Self>, index: usize) -> Option<Pin<&mut C>> {
        let this = self.project();
        match index {
            0 => this.original.get().as_pin_mut(),
            _ => this
                .hedges
                .0
                .as_mut()?
                .get_mut(index - 1)?
                .copy
                .as_mut()
                .map(Pin::as_mut),
        }
    }
}
