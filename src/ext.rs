//! [`Hedgeable`]: `.hedged(&policy)` on a function that makes the request future.

use core::fmt;
use core::future::Future;

use crate::attempt::{Attempt, ByResult};
use crate::hedge::Hedge;
use crate::policy::AsPolicy;

/// Makes the future of one copy of a hedged call.
///
/// [`Hedgeable`] wraps closures in [`FactoryFn`] or [`AttemptFn`]; implement it directly
/// only for a hand-written factory type.
pub trait Factory {
    /// The value of a successful copy.
    type Ok;
    /// The error of a failed copy.
    type Error;
    /// One copy of the request.
    type Future: Future<Output = Result<Self::Ok, Self::Error>>;

    /// Starts copy `attempt.index()`.
    fn make(&mut self, attempt: Attempt) -> Self::Future;
}

/// A factory from a closure that takes no arguments: `|| client.get(key)`.
#[derive(Clone, Copy)]
pub struct FactoryFn<F>(F);

/// A factory from a closure that takes the [`Attempt`]: `|a: Attempt| replicas[a.index()].get(key)`.
#[derive(Clone, Copy)]
pub struct AttemptFn<F>(F);

impl<F, Fut, T, E> Factory for FactoryFn<F>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Ok = T;
    type Error = E;
    type Future = Fut;

    #[inline]
    fn make(&mut self, _attempt: Attempt) -> Fut {
        (self.0)()
    }
}

impl<F, Fut, T, E> Factory for AttemptFn<F>
where
    F: FnMut(Attempt) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Ok = T;
    type Error = E;
    type Future = Fut;

    #[inline]
    fn make(&mut self, attempt: Attempt) -> Fut {
        (self.0)(attempt)
    }
}

impl<F> fmt::Debug for FactoryFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryFn").finish_non_exhaustive()
    }
}

impl<F> fmt::Debug for AttemptFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptFn").finish_non_exhaustive()
    }
}

/// Adds [`hedged`](Hedgeable::hedged) to every function that makes a request future
/// returning `Result<T, E>`.
///
/// Implemented for `FnMut() -> Fut` and for `FnMut(Attempt) -> Fut`; `Args` tells the two
/// apart and is always inferred. A closure that takes the attempt needs its argument
/// type written: `|a: Attempt| ...`.
///
/// ```
/// use hedging::{Hedgeable, Policy};
/// # futures::executor::block_on(async {
/// let policy = Policy::builder().build();
/// let row: Result<&str, std::io::Error> = (|| async { Ok("row") }).hedged(&policy).await;
/// assert_eq!(row.unwrap(), "row");
/// # });
/// ```
pub trait Hedgeable<Args>: Sized {
    /// The factory the function becomes.
    type Factory: Factory;

    /// A [`Hedge`] future that calls this function once per copy, as `policy` says.
    fn hedged<P: AsPolicy>(self, policy: P) -> Hedge<Self::Factory, P, ByResult>;
}

impl<F, Fut, T, E> Hedgeable<()> for F
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Factory = FactoryFn<F>;

    #[inline]
    fn hedged<P: AsPolicy>(self, policy: P) -> Hedge<FactoryFn<F>, P, ByResult> {
        Hedge::new(FactoryFn(self), policy)
    }
}

impl<F, Fut, T, E> Hedgeable<Attempt> for F
where
    F: FnMut(Attempt) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Factory = AttemptFn<F>;

    #[inline]
    fn hedged<P: AsPolicy>(self, policy: P) -> Hedge<AttemptFn<F>, P, ByResult> {
        Hedge::new(AttemptFn(self), policy)
    }
}
