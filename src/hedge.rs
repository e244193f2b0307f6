//! [`Hedge`]: the future that races copies of a request and keeps the first win.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use futures_core::FusedFuture;
use pin_project::pin_project;

use crate::attempt::{Attempt, ByResult, Classify, Verdict, When};
use crate::ext::Factory;
use crate::policy::{AsPolicy, Shared};
use crate::shard::Counter;
use crate::timer::Timer;

#[cfg(feature = "std")]
type Panic = Box<dyn core::any::Any + Send>;

/// A hedged call: starts copies of a request on the policy's schedule, returns the first
/// that wins, and drops the rest.
///
/// Made by [`Hedgeable::hedged`](crate::Hedgeable::hedged). It is one future: the copies
/// are polled inside its `poll` with the caller's waker, nothing is spawned, and dropping
/// it drops every copy and its timer. Its output is the copies' own `Result<T, E>`.
///
/// ```
/// use std::time::Duration;
/// use hedging::{Hedgeable, Policy};
/// # futures::executor::block_on(async {
/// #[derive(Debug, PartialEq)]
/// enum DbError { Timeout, NotFound }
///
/// let policy = Policy::builder().max_copies(3).delay(Duration::from_millis(5)).build();
/// let row = (|| async { Err::<u32, _>(DbError::NotFound) })
///     .hedged(&policy)
///     .when(|e: &DbError| *e == DbError::Timeout) // only timeouts are worth another copy
///     .await;
/// assert_eq!(row, Err(DbError::NotFound));
/// assert_eq!(policy.stats().hedges, 0); // the non-retryable error ended the race
/// # });
/// ```
///
/// # Cancellation
///
/// Dropping a `Hedge` drops every copy still in flight and its timer; nothing keeps
/// running. The policy's stats count the call as `cancelled`.
///
/// # Panics
///
/// Polling it again after it returned `Ready` panics; it implements
/// [`FusedFuture`] so `select!` can tell.
///
/// A copy that panics, and the factory when it panics making a copy, unwind through
/// `poll` unless the policy enables
/// [`catch_unwind`](crate::PolicyBuilder::catch_unwind); then the copy counts as failed
/// (the next one starts at once if none is in flight), and only a race with no win and
/// no error to return resumes the lowest-index panic, after every copy is dropped. A
/// panicking [`on_hedge`](crate::PolicyBuilder::on_hedge) hook always unwinds.
///
/// A panic that unwinds mid-race leaves the copies inside the `Hedge`: dropping it, as
/// an unwinding caller does, drops every copy and the timer and counts the call as
/// `cancelled`. Like any future that panicked, it should not be polled again. The
/// policy, its stats and its timer stay usable: nothing shared is poisoned.
#[pin_project]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct Hedge<F: Factory, P: AsPolicy, C = ByResult> {
    factory: F,
    classify: C,
    // Declared before `call` so the copies are dropped before the call is counted.
    #[pin]
    copies: Copies<F::Future, <P::Timer as Timer>::Sleep>,
    call: Call<P, F::Ok, F::Error>,
}

impl<F: Factory, P: AsPolicy> Hedge<F, P, ByResult> {
    pub(crate) fn new(factory: F, policy: P) -> Self {
        Hedge {
            factory,
            classify: ByResult,
            copies: Copies {
                original: None,
                hedges: Hedges(None),
                sleep: None,
            },
            call: Call {
                policy,
                race: Race::new(),
            },
        }
    }
}

impl<F: Factory, P: AsPolicy, C> Hedge<F, P, C> {
    /// Decides which errors are worth another copy: `true` keeps racing (the copy
    /// failed, the others go on), `false` returns the error at once and drops the others.
    /// `Ok` always wins.
    pub fn when<W>(self, retryable: W) -> Hedge<F, P, When<W>>
    where
        W: FnMut(&F::Error) -> bool,
    {
        self.with_classify(When(retryable))
    }

    /// Decides what each finished copy means, with full control: see [`Verdict`].
    ///
    /// ```
    /// use hedging::{Hedgeable, Policy, Verdict};
    /// # futures::executor::block_on(async {
    /// let policy = Policy::builder().max_copies(2).build();
    /// let mut answers = vec![Ok::<Option<u32>, ()>(Some(5)), Ok(None)];
    /// let value = (|| std::future::ready(answers.pop().unwrap()))
    ///     .hedged(&policy)
    ///     .classify(|r: &Result<Option<u32>, ()>| match r {
    ///         Ok(Some(_)) => Verdict::Win,
    ///         Ok(None) => Verdict::Retry, // an empty answer: ask another copy
    ///         Err(_) => Verdict::Fatal,
    ///     })
    ///     .await;
    /// assert_eq!(value, Ok(Some(5)));
    /// # });
    /// ```
    pub fn classify<K>(self, classify: K) -> Hedge<F, P, K>
    where
        K: FnMut(&Result<F::Ok, F::Error>) -> Verdict,
    {
        self.with_classify(classify)
    }

    pub(crate) fn with_classify<K>(self, classify: K) -> Hedge<F, P, K> {
        Hedge {
            factory: self.factory,
            classify,
            copies: self.copies,
            call: self.call,
        }
    }
}

impl<F, P, C> Future for Hedge<F, P, C>
where
    F: Factory,
    P: AsPolicy,
    C: Classify<F::Ok, F::Error>,
{
    type Output = Result<F::Ok, F::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let factory = this.factory;
        let classify = this.classify;
        let mut copies = this.copies;
        let Call { policy, race } = this.call;
        let shared = policy.as_policy().shared();

        let catch = shared.catch_unwind;
        let first_poll = match race.phase {
            Phase::Running => false,
            Phase::Idle => {
                race.phase = Phase::Running;
                // At most `PolicyBuilder::MAX_COPIES` (64): a byte holds it.
                race.max_copies = shared.copies_for_call() as u8;
                race.launched = 1;
                race.in_flight = 1;
                let attempt = Attempt::new(0, race.max_copies.into(), Duration::ZERO);
                let finished = match make_copy(factory, attempt, catch) {
                    Ok(copy) => {
                        let mut original = copies.as_mut().project().original;
                        original.set(Some(copy));
                        match original
                            .as_mut()
                            .as_pin_mut()
                            .map(|copy| poll_copy(copy, cx, catch))
                        {
                            Some(Poll::Ready(finished)) => {
                                original.set(None);
                                Some(finished)
                            }
                            _ => None,
                        }
                    }
                    // A caught factory panic is a copy that failed at once.
                    Err(panicked) => Some(panicked),
                };
                if let Some(finished) = finished {
                    // The fast path: an original that wins at once ends the call here,
                    // with one stats update and none of the race's bookkeeping.
                    let verdict = race.verdict(&finished, classify);
                    match (finished, verdict) {
                        (Finished::Output(result), Some(Verdict::Win)) => {
                            race.phase = Phase::Done;
                            shared.counters.add(&[Counter::Wins]);
                            return Poll::Ready(result);
                        }
                        (finished, verdict) => {
                            if let Some(end) = race.settle_as(0, finished, verdict, shared) {
                                return Poll::Ready(race.finish(copies, shared, end));
                            }
                        }
                    }
                }
                true
            }
            Phase::Done => panic!("`Hedge` polled after completion"),
        };

        race.run(copies, factory, classify, shared, cx, first_poll)
    }
}

impl<F, P, C> FusedFuture for Hedge<F, P, C>
where
    F: Factory,
    P: AsPolicy,
    C: Classify<F::Ok, F::Error>,
{
    fn is_terminated(&self) -> bool {
        self.call.race.phase == Phase::Done
    }
}

impl<F: Factory, P: AsPolicy, C> fmt::Debug for Hedge<F, P, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let race = &self.call.race;
        f.debug_struct("Hedge")
            .field("phase", &race.phase)
            .field("max_copies", &race.max_copies)
            .field("launched", &race.launched)
            .field("in_flight", &race.in_flight)
            .finish_non_exhaustive()
    }
}

/// The copies in flight and the one timer that schedules the next.
#[pin_project]
struct Copies<Fut, S> {
    /// The original lives inline: a call it wins allocates nothing.
    #[pin]
    original: Option<Fut>,
    hedges: Hedges<Fut>,
    #[pin]
    sleep: Option<S>,
}

/// How a copy finished: with its output, or (with `catch_unwind`) with a panic.
enum Finished<O> {
    Output(O),
    #[cfg(feature = "std")]
    Panicked(Panic),
}

fn poll_copy<Fut: Future>(
    copy: Pin<&mut Fut>,
    cx: &mut Context<'_>,
    catch: bool,
) -> Poll<Finished<Fut::Output>> {
    #[cfg(feature = "std")]
    if catch {
        let polled = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| copy.poll(cx)));
        return match polled {
            Ok(poll) => poll.map(Finished::Output),
            Err(panic) => Poll::Ready(Finished::Panicked(panic)),
        };
    }
    let _ = catch;
    copy.poll(cx).map(Finished::Output)
}

/// A copy made, or how it ended when its factory panicked under `catch_unwind`.
type Made<F> =
    Result<<F as Factory>::Future, Finished<Result<<F as Factory>::Ok, <F as Factory>::Error>>>;

/// Makes a copy; with `catch`, a panicking factory yields the panic as the copy's end.
fn make_copy<F: Factory>(factory: &mut F, attempt: Attempt, catch: bool) -> Made<F> {
    #[cfg(feature = "std")]
    if catch {
        let make = core::panic::AssertUnwindSafe(|| factory.make(attempt));
        return std::panic::catch_unwind(make).map_err(Finished::Panicked);
    }
    let _ = catch;
    Ok(factory.make(attempt))
}

impl<Fut: Future, S: Future<Output = ()>> Copies<Fut, S> {
    /// Polls every copy in flight in index order, dropping each the moment it finishes
    /// and handing it to `settle`; stops at the first `Some`.
    fn poll_each<R>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        catch: bool,
        mut settle: impl FnMut(usize, Finished<Fut::Output>) -> Option<R>,
    ) -> Option<R> {
        let mut this = self.project();
        if let Some(copy) = this.original.as_mut().as_pin_mut() {
            if let Poll::Ready(finished) = poll_copy(copy, cx, catch) {
                this.original.set(None);
                if let Some(end) = settle(0, finished) {
                    return Some(end);
                }
            }
        }
        for (slot, index) in this.hedges.slots().iter_mut().zip(1..) {
            if let Some(end) = poll_slot(slot, index, cx, catch, &mut settle) {
                return Some(end);
            }
        }
        None
    }

    /// Adds copy `index` (≥ 1) and polls it once.
    fn push_and_poll<R>(
        self: Pin<&mut Self>,
        copy: Fut,
        index: usize,
        max_copies: usize,
        cx: &mut Context<'_>,
        catch: bool,
        settle: impl FnMut(usize, Finished<Fut::Output>) -> Option<R>,
    ) -> Option<R> {
        let slot = self.project().hedges.push(Some(Box::pin(copy)), max_copies);
        poll_slot(slot, index, cx, catch, settle)
    }

    /// Holds the slot of a copy whose factory panicked, so later copies keep their index.
    fn push_empty(self: Pin<&mut Self>, max_copies: usize) {
        self.project().hedges.push(None, max_copies);
    }

    /// Arms the timer to fire `after` from now: makes it on first use, re-arms it later.
    fn arm<T: Timer<Sleep = S>>(self: Pin<&mut Self>, timer: &T, after: Duration) {
        let mut sleep = self.project().sleep;
        match sleep.as_mut().as_pin_mut() {
            Some(armed) => timer.reset(armed, after),
            None => sleep.set(Some(timer.sleep(after))),
        }
    }

    fn poll_sleep(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.project().sleep.as_pin_mut() {
            Some(sleep) => sleep.poll(cx),
            None => Poll::Ready(()),
        }
    }

    /// Drops every copy and the timer.
    fn clear(self: Pin<&mut Self>) {
        let mut this = self.project();
        this.original.set(None);
        this.hedges.clear();
        this.sleep.set(None);
    }
}

/// Copy k lives at `slots[k - 1]`, boxed; the slab is allocated once, at the first
/// hedge, with room for every copy the call may start. `None` until then.
struct Hedges<Fut>(Option<Vec<Option<Pin<Box<Fut>>>>>);

impl<Fut> Hedges<Fut> {
    /// The copies started so far beyond the first: empty until the first hedge.
    fn slots(&mut self) -> &mut [Option<Pin<Box<Fut>>>] {
        self.0.as_deref_mut().unwrap_or_default()
    }

    /// Adds the next copy's slot, making the slab at the first; returns the slot.
    fn push(
        &mut self,
        slot: Option<Pin<Box<Fut>>>,
        max_copies: usize,
    ) -> &mut Option<Pin<Box<Fut>>> {
        let slab = self
            .0
            .get_or_insert_with(|| Vec::with_capacity(max_copies - 1));
        slab.push(slot);
        slab.last_mut().expect("a slot was just pushed")
    }

    /// Drops every copy, keeping the slab for the rest of the call.
    fn clear(&mut self) {
        if let Some(slab) = &mut self.0 {
            slab.clear();
        }
    }
}

impl<Fut> Drop for Hedges<Fut> {
    // A call that never hedged pays one check: the slab's drop loop stays out of line.
    #[inline]
    fn drop(&mut self) {
        if let Some(slab) = self.0.take() {
            drop_slab(slab);
        }
    }
}

#[cold]
#[inline(never)]
fn drop_slab<T>(slab: Vec<T>) {
    drop(slab);
}

fn poll_slot<Fut: Future, R>(
    slot: &mut Option<Pin<Box<Fut>>>,
    index: usize,
    cx: &mut Context<'_>,
    catch: bool,
    mut settle: impl FnMut(usize, Finished<Fut::Output>) -> Option<R>,
) -> Option<R> {
    let copy = slot.as_mut()?;
    let Poll::Ready(finished) = poll_copy(copy.as_mut(), cx, catch) else {
        return None;
    };
    *slot = None;
    settle(index, finished)
}

/// The policy a call runs under and the race's bookkeeping; counts the call as
/// cancelled if it is dropped mid-race.
struct Call<P: AsPolicy, T, E> {
    policy: P,
    race: Race<T, E>,
}

impl<P: AsPolicy, T, E> Drop for Call<P, T, E> {
    // A finished call pays one check; only a cancelled one reaches the counters.
    #[inline]
    fn drop(&mut self) {
        if self.race.phase == Phase::Running {
            self.count_cancelled();
        }
    }
}

impl<P: AsPolicy, T, E> Call<P, T, E> {
    /// Records a call dropped mid-race and gives back the budget slots its copies held.
    #[cold]
    #[inline(never)]
    fn count_cancelled(&mut self) {
        let shared = self.policy.as_policy().shared();
        if self.race.permits > 0 {
            shared.release_slots(self.race.permits.into());
        }
        shared.counters.add(&[Counter::Cancelled]);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Running,
    Done,
}

/// When the next copy is due, once known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Due {
    Unknown,
    At(Duration),
    Never,
}

/// How a race ends.
enum End<T, E> {
    Won {
        index: usize,
        result: Result<T, E>,
    },
    Failed(Result<T, E>),
    #[cfg(feature = "std")]
    Panicked(Panic),
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

struct Race<T, E> {
    phase: Phase,
    /// Copies this call may start: the policy's cap, or 1 after a missed probability roll.
    /// Counts of copies are bytes: a call starts at most 64.
    max_copies: u8,
    launched: u8,
    in_flight: u8,
    /// One more than the index of the copy the budget last refused, 0 if none: a copy
    /// refused again (after a failure) is not counted twice.
    refused: u8,
    /// When the original first said `Pending`; `None` until the call needs the time.
    first_start: Option<Duration>,
    /// When the newest copy started (its due time, when the clock started it).
    last_start: Duration,
    next_due: Due,
    /// Whether the timer is armed for the next copy's due time; a launch spends it.
    armed: bool,
    /// The lowest-index failure, or failing that the lowest-index caught panic, or the
    /// lowest-index withdrawn result: one slot, so a race that ends with a win drops it
    /// with one check.
    kept: Option<Kept<T, E>>,
    /// The budget's `max_outstanding` slots this call holds: one per copy in flight
    /// beyond the first, given back once `poll` sees the copy finished.
    permits: u8,
}

impl<T, E> Race<T, E> {
    const fn new() -> Self {
        Race {
            phase: Phase::Idle,
            max_copies: 0,
            launched: 0,
            in_flight: 0,
            refused: 0,
            first_start: None,
            last_start: Duration::ZERO,
            next_due: Due::Unknown,
            armed: false,
            kept: None,
            permits: 0,
        }
    }

    /// Everything past an original that won at once: polls the copies in flight, starts
    /// those due, and arms the timer for the next.
    fn run<F, C, Tm>(
        &mut self,
        mut copies: Pin<&mut Copies<F::Future, Tm::Sleep>>,
        factory: &mut F,
        classify: &mut C,
        shared: &Shared<Tm>,
        cx: &mut Context<'_>,
        first_poll: bool,
    ) -> Poll<Result<T, E>>
    where
        F: Factory<Ok = T, Error = E>,
        C: Classify<T, E>,
        Tm: Timer,
    {
        let timer = &shared.timer;
        let catch = shared.catch_unwind;
        if !first_poll {
            // Poll every copy in flight; a win or a fatal error ends the race here.
            let settled = copies.as_mut().poll_each(cx, catch, |index, finished| {
                self.settle(index, finished, classify, shared)
            });
            if let Some(end) = settled {
                return Poll::Ready(self.finish(copies, shared, end));
            }
        }
        // The first poll's one clock reading also arms the timer, as long as no copy
        // started since: a reading costs as much as the rest of the armed path.
        let mut clock_read = None;
        if first_poll && self.in_flight > 0 && self.max_copies > 1 {
            // The call's clock starts when the original first says `Pending`.
            clock_read = Some((self.start_clock(timer.now()), self.launched));
        }

        loop {
            if self.in_flight == 0 {
                if self.launched == self.max_copies {
                    let end = self.give_up();
                    return Poll::Ready(self.finish(copies, shared, end));
                }
                if !self.admit(shared) {
                    let end = self.give_up();
                    return Poll::Ready(self.finish(copies, shared, end));
                }
                // Every copy in flight failed: the next one starts now, not on schedule.
                let now = timer.now();
                self.start_clock(now);
                let start = now.max(self.last_start);
                let copy = (start, now);
                if let Some(end) = self.launch(copies.as_mut(), factory, classify, shared, copy, cx)
                {
                    return Poll::Ready(self.finish(copies, shared, end));
                }
                continue;
            }
            if self.launched == self.max_copies {
                return Poll::Pending;
            }
            let Some(due) = self.next_due(shared) else {
                return Poll::Pending;
            };
            if !self.armed && due > self.last_start {
                let now = match clock_read.take() {
                    Some((now, launched)) if launched == self.launched => now,
                    _ => timer.now(),
                };
                if due > now {
                    copies.as_mut().arm(timer, due - now);
                    self.armed = true;
                }
            }
            if self.armed && copies.as_mut().poll_sleep(cx).is_pending() {
                return Poll::Pending;
            }
            if !self.admit(shared) {
                // Refused: no more timed copies for this call; a failure may still ask.
                self.next_due = Due::Never;
                continue;
            }
            // The schedule is anchored to the due time; the attempt reports the real start.
            let copy = (due, timer.now());
            if let Some(end) = self.launch(copies.as_mut(), factory, classify, shared, copy, cx) {
                return Poll::Ready(self.finish(copies, shared, end));
            }
        }
    }

    /// Asks the policy's budget for the next copy beyond the first; `false` when refused.
    fn admit<Tm>(&mut self, shared: &Shared<Tm>) -> bool {
        match shared.admit_hedge() {
            Ok(false) => true,
            Ok(true) => {
                self.permits += 1;
                true
            }
            Err(_) => {
                // Refused again after a failure, the same copy is not counted twice.
                if self.refused != self.launched + 1 {
                    self.refused = self.launched + 1;
                    shared.budget_refused();
                }
                crate::trace::budget_refused(self.launched.into(), self.max_copies.into());
                false
            }
        }
    }

    /// Starts the call's clock at `now` unless it runs already; returns its start.
    fn start_clock(&mut self, now: Duration) -> Duration {
        *self.first_start.get_or_insert_with(|| {
            self.last_start = now;
            now
        })
    }

    /// When copy `launched` is due, computed once per copy.
    fn next_due<Tm: Timer>(&mut self, shared: &Shared<Tm>) -> Option<Duration> {
        if self.next_due == Due::Unknown {
            let first_start = match self.first_start {
                Some(first_start) => first_start,
                None => self.start_clock(shared.timer.now()),
            };
            self.next_due =
                match shared
                    .schedule
                    .due(self.launched.into(), self.last_start, first_start)
                {
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

    /// Starts copy `launched`, due at `start` and really started at `now`, and polls it
    /// once.
    fn launch<F, C, S, Tm>(
        &mut self,
        copies: Pin<&mut Copies<F::Future, S>>,
        factory: &mut F,
        classify: &mut C,
        shared: &Shared<Tm>,
        (start, now): (Duration, Duration),
        cx: &mut Context<'_>,
    ) -> Option<End<T, E>>
    where
        F: Factory<Ok = T, Error = E>,
        C: Classify<T, E>,
        S: Future<Output = ()>,
    {
        let index = usize::from(self.launched);
        let max_copies = usize::from(self.max_copies);
        let first_start = self.first_start.unwrap_or(start);
        let attempt = Attempt::new(index, max_copies, now.saturating_sub(first_start));
        if let Some(on_hedge) = &shared.on_hedge {
            on_hedge(&attempt);
        }
        crate::trace::hedge_launched(&attempt);
        let made = make_copy(factory, attempt, shared.catch_unwind);
        self.launched += 1;
        self.in_flight += 1;
        self.last_start = start;
        self.next_due = Due::Unknown;
        // The timer's deadline is spent; the next one re-arms it.
        self.armed = false;
        shared.counters.add(&[Counter::Hedges]);
        let copy = match made {
            Ok(copy) => copy,
            Err(panicked) => {
                copies.push_empty(max_copies);
                return self.settle(index, panicked, classify, shared);
            }
        };
        let catch = shared.catch_unwind;
        copies.push_and_poll(copy, index, max_copies, cx, catch, |index, finished| {
            self.settle(index, finished, classify, shared)
        })
    }

    /// Books copy `index` as finished; `Some` when its verdict ends the race.
    #[inline]
    fn settle<C: Classify<T, E>, Tm>(
        &mut self,
        index: usize,
        finished: Finished<Result<T, E>>,
        classify: &mut C,
        shared: &Shared<Tm>,
    ) -> Option<End<T, E>> {
        let verdict = self.verdict(&finished, classify);
        match (finished, verdict) {
            // The common end, kept inline: the rest of the bookkeeping is for losers.
            (Finished::Output(result), Some(Verdict::Win)) => {
                self.in_flight -= 1;
                Some(End::Won { index, result })
            }
            (finished, verdict) => self.settle_as(index, finished, verdict, shared),
        }
    }

    /// The verdict on a finished copy; `None` for a caught panic, which has no result.
    #[inline]
    fn verdict<C: Classify<T, E>>(
        &self,
        finished: &Finished<Result<T, E>>,
        classify: &mut C,
    ) -> Option<Verdict> {
        match finished {
            Finished::Output(result) => Some(classify.verdict(result)),
            #[cfg(feature = "std")]
            Finished::Panicked(_) => None,
        }
    }

    /// Books copy `index` as finished with `verdict` (from [`Race::verdict`]); `Some`
    /// when it ends the race.
    fn settle_as<Tm>(
        &mut self,
        index: usize,
        finished: Finished<Result<T, E>>,
        verdict: Option<Verdict>,
        shared: &Shared<Tm>,
    ) -> Option<End<T, E>> {
        self.in_flight -= 1;
        if index > 0 && self.permits > 0 {
            // A losing hedge is already dropped: its budget slot comes back now.
            self.permits -= 1;
            shared.release_slots(1);
        }
        let (result, verdict) = match (finished, verdict) {
            (Finished::Output(result), Some(verdict)) => (result, verdict),
            #[cfg(feature = "std")]
            (Finished::Panicked(panic), _) => {
                crate::trace::copy_failed(index, self.max_copies.into(), true);
                self.keep(index, Lost::Panicked(panic));
                return None;
            }
            (Finished::Output(_), None) => unreachable!("an output always has a verdict"),
        };
        match verdict {
            Verdict::Win => Some(End::Won { index, result }),
            Verdict::Fatal => Some(End::Failed(result)),
            Verdict::Retry => {
                crate::trace::copy_failed(index, self.max_copies.into(), false);
                self.keep(index, Lost::Failed(result));
                None
            }
            Verdict::Withdraw => {
                self.keep(index, Lost::Withdrawn(result));
                None
            }
        }
    }

    /// Keeps a finished copy if it beats the one kept: by [`Lost::rank`], and then the
    /// lower index wins.
    fn keep(&mut self, index: usize, lost: Lost<T, E>) {
        let better = match &self.kept {
            None => true,
            Some(kept) => {
                (lost.rank(), core::cmp::Reverse(index))
                    > (kept.lost.rank(), core::cmp::Reverse(kept.index.into()))
            }
        };
        if better {
            self.kept = Some(Kept {
                index: index as u8,
                lost,
            });
        }
    }

    /// How the race ends when every copy finished and none won.
    fn give_up(&mut self) -> End<T, E> {
        let kept = self.kept.take();
        match kept.expect("a finished race keeps a copy").lost {
            Lost::Failed(result) | Lost::Withdrawn(result) => End::Failed(result),
            #[cfg(feature = "std")]
            Lost::Panicked(panic) => End::Panicked(panic),
        }
    }

    /// Drops every copy and the timer, records the call, and yields its output.
    fn finish<Fut: Future, S: Future<Output = ()>, Tm: Timer>(
        &mut self,
        copies: Pin<&mut Copies<Fut, S>>,
        shared: &Shared<Tm>,
        end: End<T, E>,
    ) -> Result<T, E> {
        // The clock runs only once a call waited: an instant answer skips all of this.
        if let Some(first_start) = self.first_start {
            if let Some(tracker) = shared.schedule.tracker() {
                // The original's latency: exact if it won, a lower bound if it loses now.
                let original_won = matches!(end, End::Won { index: 0, .. });
                if original_won || copies.as_ref().get_ref().original.is_some() {
                    let now = shared.timer.now();
                    tracker.record(now.saturating_sub(first_start), now);
                }
            }
        }
        copies.clear();
        // Losers first, then their budget slots: a slot is held exactly while its copy lives.
        if self.permits > 0 {
            shared.release_slots(self.permits.into());
            self.permits = 0;
        }
        // A failure kept in case no copy won goes with the other losers.
        self.kept = None;
        self.phase = Phase::Done;
        let (outcome, hedge_win, result) = match end {
            End::Won { index, result } => {
                crate::trace::won(index, self.launched.into());
                (Counter::Wins, index > 0, result)
            }
            End::Failed(result) => (Counter::Failures, false, result),
            #[cfg(feature = "std")]
            End::Panicked(panic) => {
                self.record(shared, Counter::Failures, false);
                std::panic::resume_unwind(panic);
            }
        };
        self.record(shared, outcome, hedge_win);
        result
    }

    /// Counts the call where it ends, in one update: its outcome (which counts the call
    /// too), and a hedge win.
    #[inline]
    fn record<Tm>(&self, shared: &Shared<Tm>, outcome: Counter, hedge_win: bool) {
        let counters = [outcome, Counter::HedgeWins];
        let last = if hedge_win { 2 } else { 1 };
        shared.counters.add(&counters[..last]);
    }
}
