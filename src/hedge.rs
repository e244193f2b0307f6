//! [`Hedge`]: the future that races copies of a request and keeps the first win.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use futures_core::FusedFuture;
use pin_project::pin_project;

use crate::attempt::{Attempt, ByResult, Classify, Verdict, When};
use crate::copies::{Call, CallParts, Copier, Poller, RaceEntry};
use crate::factory::Factory;
use crate::key::{CallKey, NoKey};
use crate::policy::AsPolicy;
use crate::race::{won_without_race, End, Finished, Phase};
use crate::timeout::{Deadlines, Elapsed, IntoTimeouts, NoTimeouts, Timeouts};

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
/// The type parameters are the factory `F`, the policy `P` (borrowed or owned), the
/// classifier `C` that [`when`](Hedge::when) or [`classify`](Hedge::classify) sets, the
/// timeouts `D` that [`timeout`](Hedge::timeout) and
/// [`attempt_timeout`](Hedge::attempt_timeout) set, and the key `K` that
/// [`key`](Hedge::key) sets: a call without them carries nothing for them.
///
/// # Examples
///
/// [`classify`](Hedge::classify) decides what each finished copy means:
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
///
/// [`max_copies`](Hedge::max_copies) caps one call below its policy:
///
/// ```
/// use hedging::{Hedgeable, Policy};
/// # futures::executor::block_on(async {
/// let policy = Policy::builder().max_copies(3).build();
/// let replayable = false; // say, a request whose body cannot be sent twice
/// let call = (|| async { Ok::<_, ()>("done") }).hedged(&policy);
/// let answer = if replayable { call.await } else { call.max_copies(1).await };
/// assert_eq!(answer, Ok("done"));
/// assert_eq!(policy.stats().calls, 1);
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
/// [`FusedFuture`] so `select!` can tell. A factory that returns `None` for the original
/// (attempt 0) panics: the original cannot be declined.
///
/// A copy that panics, and the factory when it panics making a copy, unwind through
/// `poll` unless the policy enables
#[doc = crate::feature_doc::with_std!(
    "[`catch_unwind`](crate::PolicyBuilder::catch_unwind); then the copy counts as failed",
    "`catch_unwind`; then the copy counts as failed"
)]
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
pub struct Hedge<F: Factory, P: AsPolicy, C = ByResult, D = NoTimeouts, K = NoKey> {
    factory: F,
    classify: C,
    deadlines: D,
    key: K,
    #[pin]
    call: Call<P, F::Future, F::Ok, F::Error>,
}

impl<F: Factory, P: AsPolicy> Hedge<F, P> {
    pub(crate) fn new(factory: F, policy: P) -> Self {
        Hedge {
            factory,
            classify: ByResult,
            deadlines: NoTimeouts,
            key: NoKey,
            call: Call::new(policy),
        }
    }
}

crate::call_methods::call_methods!(Hedge, Factory, "each finished copy");

impl<F: Factory, P: AsPolicy, C, D, K> Hedge<F, P, C, D, K> {
    /// How many copies the call has started, the original included: 0 before its first
    /// poll, and after it returned, every copy it started. For a caller that goes on with
    /// the call's work within the copies the call left (a read resuming its stalled body
    /// from where the winner stopped): await the call pinned in place, then ask.
    ///
    /// ```
    /// use std::pin::pin;
    /// use hedging::{Hedgeable, Policy};
    /// # futures::executor::block_on(async {
    /// let policy = Policy::builder().max_copies(3).build();
    /// let mut call = pin!((|| async { Ok::<_, ()>("row") }).hedged(&policy));
    /// assert_eq!(call.copies_started(), 0);
    /// assert_eq!(call.as_mut().await, Ok("row"));
    /// assert_eq!(call.copies_started(), 1); // the original answered: no hedge
    /// # });
    /// ```
    pub fn copies_started(&self) -> usize {
        self.call.state.launched()
    }

    /// The policy the call runs under.
    #[cfg(feature = "tower")]
    pub(crate) fn policy(&self) -> &crate::Policy<P::Timer> {
        self.call.policy.as_policy()
    }
}

impl<F, P, C, D, K> Future for Hedge<F, P, C, D, K>
where
    F: Factory,
    P: AsPolicy,
    C: Classify<F::Ok, F::Error>,
    D: Deadlines<F::Error>,
    K: CallKey,
{
    type Output = Result<F::Ok, F::Error>;

    // Inline, so a caller sees the fast path whole: an original that wins at its first
    // poll; everything else is in `race_on`, out of line.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.as_mut().project();
        let CallParts { policy, mut state } = this.call.project();
        let settings = policy.as_policy().settings();

        // With no timeouts, a call that runs its original alone needs no race at all.
        let untimed = this.deadlines.attempt().is_none() && this.deadlines.total().is_none();
        let finished = match state.phase {
            Phase::Running if !state.has_race() => {
                match state
                    .as_mut()
                    .poll_original::<FutureCopier<'_, F>>(settings.catch_unwind, cx)
                {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(finished) => finished,
                }
            }
            Phase::Running => return self.race_on(cx, RaceEntry::Running),
            Phase::Idle => {
                let copier = &mut FutureCopier(this.factory);
                match state.as_mut().launch_original(copier, settings, cx) {
                    Poll::Pending if untimed && state.one_copy(settings) => return Poll::Pending,
                    Poll::Pending => return self.race_on(cx, RaceEntry::Pending),
                    Poll::Ready(finished) => finished,
                }
            }
            Phase::Done => panic!("`Hedge` polled after completion"),
        };
        let verdict = state
            .as_mut()
            .judge_original::<FutureCopier<'_, F>, _>(&finished, this.classify);
        match (finished, verdict) {
            // The fast path: one stats update, and no race made.
            (Finished::Item(result), Some(Verdict::Win)) => {
                state.done();
                won_without_race(settings);
                Poll::Ready(result)
            }
            (finished, verdict) => self.race_on(cx, RaceEntry::Finished(finished, verdict)),
        }
    }
}

impl<F: Factory, P: AsPolicy, C, D, K: CallKey> Hedge<F, P, C, D, K> {
    /// Everything but the fast path: makes the race, polls the copies and follows the
    /// race to its end.
    #[inline(never)]
    fn race_on(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        entry: RaceEntry<F::Ok, F::Error>,
    ) -> Poll<Result<F::Ok, F::Error>>
    where
        C: Classify<F::Ok, F::Error>,
        D: Deadlines<F::Error>,
    {
        let this = self.project();
        let CallParts { policy, state } = this.call.project();
        let settings = policy.as_policy().settings();
        let work = (FutureCopier(this.factory), this.classify);
        let mut poller = Poller::new(work, this.deadlines, settings, cx, &entry);
        let ran = state.run(&mut poller, entry, this.key);
        ran.map(|(end, _)| output(end))
    }
}

/// What the call returns when its race ends: the winner's output, or the failure.
#[inline(always)]
fn output<T, E>(end: End<T, E>) -> Result<T, E> {
    match end {
        End::Won { result, .. } | End::Failed(result) => result,
        End::Empty => unreachable!("a future copy always ends with a result"),
        #[cfg(feature = "std")]
        End::Panicked(panic) => std::panic::resume_unwind(panic),
    }
}

/// The copies of a [`Hedge`] are futures.
struct FutureCopier<'f, F>(&'f mut F);

impl<F: Factory> Copier for FutureCopier<'_, F> {
    type Copy = F::Future;
    type Ok = F::Ok;
    type Error = F::Error;
    const KEEP_WINNER: bool = false;
    const MAY_DECLINE: bool = F::MAY_DECLINE;

    #[inline]
    fn make(&mut self, attempt: Attempt) -> Option<F::Future> {
        self.0.make(attempt)
    }

    #[inline]
    fn poll_copy(
        copy: Pin<&mut F::Future>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<F::Ok, F::Error>>> {
        copy.poll(cx).map(Some)
    }
}

impl<F: Factory, P: AsPolicy, C, D, K> FusedFuture for Hedge<F, P, C, D, K>
where
    Self: Future,
{
    fn is_terminated(&self) -> bool {
        self.call.state.phase == Phase::Done
    }
}

impl<F: Factory, P: AsPolicy, C, D, K> fmt::Debug for Hedge<F, P, C, D, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = &self.call.state;
        f.debug_struct("Hedge")
            .field("phase", &state.phase)
            .field("max_copies", &state.max_copies())
            .field("launched", &state.launched())
            .finish_non_exhaustive()
    }
}
