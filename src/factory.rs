//! [`Factory`] and [`StreamFactory`]: what makes each copy of a call, and the closures
//! that are factories.

use core::fmt;
use core::future::Future;

use futures_core::Stream;

use crate::attempt::Attempt;

/// Makes the future of each copy of a hedged call.
///
/// [`Hedgeable`](crate::Hedgeable) wraps closures in [`FactoryFn`], [`AttemptFn`] or [`DecliningFn`];
/// implement it directly only for a hand-written factory type.
pub trait Factory {
    /// The value of a successful copy.
    type Ok;
    /// The error of a failed copy.
    type Error;
    /// One copy of the request.
    type Future: Future<Output = Result<Self::Ok, Self::Error>>;

    /// Whether [`make`](Factory::make) may return `None`. If so, each copy beyond the
    /// first is made before the budget is asked and the `on_hedge` hook runs, so a
    /// declined copy touches neither (a copy the budget refuses or `min_win_rate`
    /// withholds is dropped unpolled, and its attempt may be made again for the retry
    /// after a failure); if not, the budget and the hook come first, and `make` runs only
    /// for a copy that starts. Default `true`.
    const MAY_DECLINE: bool = true;

    /// Makes copy `attempt.index()`, or declines it with `None`: no copy for this
    /// attempt and none after it (the copies in flight keep racing).
    ///
    /// # Panics
    ///
    /// The original (attempt 0) cannot be declined: `None` for it makes the call panic,
    /// and so does `None` from a factory whose `MAY_DECLINE` is `false`.
    fn make(&mut self, attempt: Attempt) -> Option<Self::Future>;
}

/// Makes the stream of each copy of a hedged stream: see
/// [`HedgeableStream::hedged_stream`](crate::HedgeableStream::hedged_stream).
///
/// [`HedgeableStream`](crate::HedgeableStream) wraps closures in [`FactoryFn`], [`AttemptFn`] or
/// [`DecliningFn`]; implement it directly only for a hand-written factory type.
pub trait StreamFactory {
    /// The value of a successful item.
    type Ok;
    /// The error of a failed item.
    type Error;
    /// One copy of the stream.
    type Stream: Stream<Item = Result<Self::Ok, Self::Error>>;

    /// As [`Factory::MAY_DECLINE`].
    const MAY_DECLINE: bool = true;

    /// Makes copy `attempt.index()`, or declines it, as [`Factory::make`].
    fn make(&mut self, attempt: Attempt) -> Option<Self::Stream>;
}

/// A factory from a closure that takes no arguments: `|| client.get(key)`.
#[derive(Clone, Copy)]
pub struct FactoryFn<F>(pub(crate) F);

/// A factory from a closure that takes the [`Attempt`]:
/// `|a: Attempt| replicas[a.index()].get(key)`.
#[derive(Clone, Copy)]
pub struct AttemptFn<F>(pub(crate) F);

/// A factory from a closure that takes the [`Attempt`] and may decline it:
/// `|a: Attempt| replicas.get(a.index()).map(|r| r.get(key))`, where `None` means no
/// copy for this attempt and none after it.
#[derive(Clone, Copy)]
pub struct DecliningFn<F>(pub(crate) F);

/// The `Factory` and `StreamFactory` impls of one closure wrapper, written once for both:
/// `closure_factory!(Wrapper, attempt, (closure argument) -> what it returns, how a copy is
/// made, whether it may decline)`. A macro: the two traits name their copy type differently.
macro_rules! closure_factory {
    ($name:ident, $attempt:ident, ($($arg:ty)?) -> $made:ident, $make:expr, $declines:expr) => {
        impl<F, Fut, T, E> Factory for $name<F>
        where
            F: FnMut($($arg)?) -> closure_factory!(@made $made Fut),
            Fut: Future<Output = Result<T, E>>,
        {
            type Ok = T;
            type Error = E;
            type Future = Fut;
            const MAY_DECLINE: bool = $declines;

            #[inline]
            fn make(&mut self, $attempt: Attempt) -> Option<Fut> {
                let call = &mut self.0;
                $make(call)
            }
        }

        impl<F, S, T, E> StreamFactory for $name<F>
        where
            F: FnMut($($arg)?) -> closure_factory!(@made $made S),
            S: Stream<Item = Result<T, E>>,
        {
            type Ok = T;
            type Error = E;
            type Stream = S;
            const MAY_DECLINE: bool = $declines;

            #[inline]
            fn make(&mut self, $attempt: Attempt) -> Option<S> {
                let call = &mut self.0;
                $make(call)
            }
        }
    };
    (@made Copy $copy:ident) => { $copy };
    (@made Option $copy:ident) => { Option<$copy> };
}

closure_factory!(FactoryFn, _attempt, () -> Copy, |call: &mut F| Some(call()), false);
closure_factory!(AttemptFn, attempt, (Attempt) -> Copy, |call: &mut F| Some(call(attempt)), false);
closure_factory!(DecliningFn, attempt, (Attempt) -> Option, |call: &mut F| call(attempt), true);

macro_rules! debug_non_exhaustive {
    ($($name:ident),*) => {$(
        impl<F> fmt::Debug for $name<F> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }
    )*};
}

debug_non_exhaustive!(FactoryFn, AttemptFn, DecliningFn);
