//! [`Attempt`], what a copy knows about itself, and [`Verdict`], what its result means.

use core::fmt;
use core::time::Duration;

/// One copy of a hedged call, as the factory and the `on_hedge` hook see it.
///
/// ```
/// use hedging::{Attempt, Hedgeable, Policy};
/// # futures::executor::block_on(async {
/// let replicas = ["a.internal", "b.internal", "c.internal"];
/// let policy = Policy::builder().max_copies(3).build();
/// let answer = (|attempt: Attempt| {
///     let replica = replicas[attempt.index() % replicas.len()];
///     async move { Ok::<_, ()>(replica) }
/// })
/// .hedged(&policy)
/// .await;
/// assert_eq!(answer, Ok("a.internal")); // the original answered at once
/// # });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    index: usize,
    max_copies: usize,
    elapsed: Duration,
}

impl Attempt {
    pub(crate) const fn new(index: usize, max_copies: usize, elapsed: Duration) -> Self {
        Attempt {
            index,
            max_copies,
            elapsed,
        }
    }

    /// Which copy this is: 0 for the original, 1 for the first hedge, and so on.
    pub const fn index(&self) -> usize {
        self.index
    }

    /// Whether this copy is a hedge (any copy but the original).
    pub const fn is_hedge(&self) -> bool {
        self.index > 0
    }

    /// The most copies this call may start, the original included.
    pub const fn max_copies(&self) -> usize {
        self.max_copies
    }

    /// How long after the original this copy started.
    ///
    /// Zero for the original. The call's clock starts when the original's first poll
    /// returns `Pending`: a copy that answers at once never needs the time.
    ///
    /// It never decreases from one copy of a call to the next, whatever the timer does:
    /// if the clock went back, or a sleep fired before its deadline (a copy the timer
    /// starts then is taken to start at its due time), a copy is said to start when the
    /// copy before it did.
    pub const fn elapsed(&self) -> Duration {
        self.elapsed
    }
}

/// What one finished copy means for the race.
///
/// The default reading is `Ok` → [`Win`](Verdict::Win), `Err` →
/// [`Retry`](Verdict::Retry); [`Hedge::when`](crate::Hedge::when) and
/// [`Hedge::classify`](crate::Hedge::classify) change it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Return this result and drop every other copy.
    Win,
    /// This copy failed; keep racing, and start the next copy at once if none is in
    /// flight. If every copy fails, the lowest-index failure is returned.
    Retry,
    /// Return this result now and drop every other copy (an error retrying cannot fix).
    Fatal,
    /// Discard this result: neither a win nor a failure. If the race ends with no win and
    /// no failure, the lowest-index withdrawn result is returned.
    Withdraw,
    /// This copy failed, and the next copy is due this long from now: the server asked
    /// for room (HTTP `Retry-After`, gRPC `grpc-retry-pushback-ms`). It replaces the next
    /// copy's scheduled time and beats every early start (a failure with nothing in
    /// flight, [`replace_failed`](crate::PolicyBuilder::replace_failed)); later copies
    /// follow the schedule from there. `RetryAfter(Duration::ZERO)` starts the next copy
    /// at once, even while others run. With no further copy to start (the cap reached, a
    /// factory that declined) it ends like `Retry`: nothing is waited for.
    RetryAfter(Duration),
    /// This copy failed, and no further copy starts for this call; the copies in flight
    /// keep racing. If none is in flight, the call ends with the lowest-index failure.
    Stop,
}

/// Decides the [`Verdict`] of a finished copy.
///
/// Implemented for every `FnMut(&Result<T, E>) -> Verdict`; [`Hedge`](crate::Hedge) uses
/// [`ByResult`] until [`when`](crate::Hedge::when) or
/// [`classify`](crate::Hedge::classify) replaces it.
pub trait Classify<T, E> {
    /// The verdict on one copy's result.
    fn verdict(&mut self, result: &Result<T, E>) -> Verdict;
}

impl<T, E, F> Classify<T, E> for F
where
    F: FnMut(&Result<T, E>) -> Verdict,
{
    fn verdict(&mut self, result: &Result<T, E>) -> Verdict {
        self(result)
    }
}

/// The default classification: `Ok` wins, `Err` is retried.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByResult;

impl<T, E> Classify<T, E> for ByResult {
    #[inline]
    fn verdict(&mut self, result: &Result<T, E>) -> Verdict {
        match result {
            Ok(_) => Verdict::Win,
            Err(_) => Verdict::Retry,
        }
    }
}

/// The classification of [`Hedge::when`](crate::Hedge::when): `Ok` wins, an `Err` the
/// predicate accepts is retried, any other `Err` is fatal.
#[derive(Clone, Copy)]
pub struct When<P>(pub(crate) P);

impl<T, E, P> Classify<T, E> for When<P>
where
    P: FnMut(&E) -> bool,
{
    #[inline]
    fn verdict(&mut self, result: &Result<T, E>) -> Verdict {
        match result {
            Ok(_) => Verdict::Win,
            Err(error) if (self.0)(error) => Verdict::Retry,
            Err(_) => Verdict::Fatal,
        }
    }
}

impl<P> fmt::Debug for When<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("When").finish_non_exhaustive()
    }
}
