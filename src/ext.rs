//! [`Hedgeable`] and [`HedgeableStream`]: `.hedged(&policy)` and
//! `.hedged_stream(&policy)` on a function that makes the request.

use core::future::Future;

use futures_core::Stream;

use crate::attempt::Attempt;
use crate::factory::{AttemptFn, DecliningFn, Factory, FactoryFn, StreamFactory};
use crate::hedge::Hedge;
use crate::policy::AsPolicy;
use crate::stream::HedgeStream;

/// A function that makes copies of a request: what [`Hedgeable::hedged`] accepts.
///
/// Implemented for `FnMut() -> Fut`, `FnMut(Attempt) -> Fut` and
/// `FnMut(Attempt) -> Option<Fut>` where `Fut: Future<Output = Result<T, E>>`; `Args`
/// tells them apart and is always inferred. A closure that takes the attempt needs its
/// argument type written: `|a: Attempt| ...`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be hedged: it is not a function that makes a future of `Result<T, E>`",
    label = "`.hedged` needs a function returning a future of `Result<T, E>`",
    note = "`.hedged` takes `FnMut() -> Fut`, `FnMut(Attempt) -> Fut` or `FnMut(Attempt) -> Option<Fut>`, where `Fut: Future<Output = Result<T, E>>`",
    note = "if the future's output is not a `Result`, wrap the value: `async {{ Ok::<_, std::convert::Infallible>(value) }}`",
    note = "if the function returns a `Stream` of `Result`s, use `.hedged_stream(policy)`"
)]
pub trait IntoFactory<Args> {
    /// The factory the function becomes.
    type Factory: Factory;

    /// Wraps the function.
    fn into_factory(self) -> Self::Factory;
}

/// A function that makes copies of a streaming request: what
/// [`HedgeableStream::hedged_stream`] accepts.
///
/// Implemented for `FnMut() -> S`, `FnMut(Attempt) -> S` and
/// `FnMut(Attempt) -> Option<S>` where `S: Stream<Item = Result<T, E>>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be hedged as a stream: it is not a function that makes a `Stream` of `Result<T, E>`",
    label = "`.hedged_stream` needs a function returning a `Stream<Item = Result<T, E>>`",
    note = "`.hedged_stream` takes `FnMut() -> S`, `FnMut(Attempt) -> S` or `FnMut(Attempt) -> Option<S>`, where `S: Stream<Item = Result<T, E>>`",
    note = "if the function returns a future, use `.hedged(policy)`"
)]
pub trait IntoStreamFactory<Args> {
    /// The factory the function becomes.
    type Factory: StreamFactory;

    /// Wraps the function.
    fn into_stream_factory(self) -> Self::Factory;
}

/// The `IntoFactory` and `IntoStreamFactory` impls of one closure shape, written once for
/// both: `into_factory!(Args, (closure argument) -> what it returns, Wrapper)`. A macro:
/// the two traits bound the closure's output by different traits.
macro_rules! into_factory {
    ($args:ty, ($($arg:ty)?) -> $made:ident, $wrapper:ident) => {
        impl<F, Fut, T, E> IntoFactory<$args> for F
        where
            F: FnMut($($arg)?) -> into_factory!(@made $made Fut),
            Fut: Future<Output = Result<T, E>>,
        {
            type Factory = $wrapper<F>;

            #[inline]
            fn into_factory(self) -> $wrapper<F> {
                $wrapper(self)
            }
        }

        impl<F, S, T, E> IntoStreamFactory<$args> for F
        where
            F: FnMut($($arg)?) -> into_factory!(@made $made S),
            S: Stream<Item = Result<T, E>>,
        {
            type Factory = $wrapper<F>;

            #[inline]
            fn into_stream_factory(self) -> $wrapper<F> {
                $wrapper(self)
            }
        }
    };
    (@made Copy $copy:ident) => { $copy };
    (@made Option $copy:ident) => { Option<$copy> };
}

into_factory!((), () -> Copy, FactoryFn);
into_factory!(Attempt, (Attempt) -> Copy, AttemptFn);
into_factory!(Option<Attempt>, (Attempt) -> Option, DecliningFn);

/// Adds [`hedged`](Hedgeable::hedged) to every function that makes a request future
/// returning `Result<T, E>` (see [`IntoFactory`] for the shapes accepted).
///
/// ```
/// use hedging::{Attempt, Hedgeable, Policy};
/// # futures::executor::block_on(async {
/// let policy = Policy::builder().build();
/// let row: Result<&str, std::io::Error> = (|| async { Ok("row") }).hedged(&policy).await;
/// assert_eq!(row.unwrap(), "row");
///
/// // A factory may decline a copy: here, there are only two replicas to ask.
/// let replicas = ["a", "b"];
/// let row = (|a: Attempt| {
///     let replica = replicas.get(a.index())?;
///     Some(async move { Ok::<_, std::io::Error>(*replica) })
/// })
/// .hedged(&policy)
/// .await;
/// assert_eq!(row.unwrap(), "a");
/// # });
/// ```
pub trait Hedgeable<Args>: Sized {
    /// A [`Hedge`] future that calls this function once per copy, as `policy` says.
    #[inline]
    fn hedged<P: AsPolicy>(self, policy: P) -> Hedge<<Self as IntoFactory<Args>>::Factory, P>
    where
        Self: IntoFactory<Args>,
    {
        Hedge::new(self.into_factory(), policy)
    }
}

impl<F, Args> Hedgeable<Args> for F {}

/// Adds [`hedged_stream`](HedgeableStream::hedged_stream) to every function that makes a
/// `Stream` of `Result<T, E>` (see [`IntoStreamFactory`] for the shapes accepted).
pub trait HedgeableStream<Args>: Sized {
    /// A [`HedgeStream`] that races copies of the stream, as `policy` says, until one
    /// yields a winning first item, then follows that copy alone.
    #[inline]
    fn hedged_stream<P: AsPolicy>(
        self,
        policy: P,
    ) -> HedgeStream<<Self as IntoStreamFactory<Args>>::Factory, P>
    where
        Self: IntoStreamFactory<Args>,
    {
        HedgeStream::new(self.into_stream_factory(), policy)
    }
}

impl<F, Args> HedgeableStream<Args> for F {}
