//! [`Elapsed`], the error of a timed-out copy or call, and the type states that carry a
//! call's timeouts: [`NoTimeouts`] costs nothing, [`Timeouts`] holds the two durations.

use core::fmt;
use core::time::Duration;

/// A copy, or a whole call, ran out of time: see
/// [`Hedge::attempt_timeout`](crate::Hedge::attempt_timeout) and
/// [`Hedge::timeout`](crate::Hedge::timeout).
///
/// A marker: the call's error type converts from it (`E: From<Elapsed>`), so the output
/// stays the copies' own `Result<T, E>`.
///
/// ```
/// use std::time::Duration;
/// use hedging::{Elapsed, Hedgeable, Policy};
///
/// #[derive(Debug, PartialEq)]
/// enum FetchError { TimedOut, NotFound }
///
/// impl From<Elapsed> for FetchError {
///     fn from(_: Elapsed) -> Self {
///         FetchError::TimedOut
///     }
/// }
/// # futures::executor::block_on(async {
/// let policy = Policy::builder().build();
/// let answer = (|| std::future::pending::<Result<u32, FetchError>>())
///     .hedged(&policy)
///     .timeout(Duration::ZERO) // no time at all: only an answer ready at once wins
///     .await;
/// assert_eq!(answer, Err(FetchError::TimedOut));
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Elapsed;

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("hedged call timed out")
    }
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl std::error::Error for Elapsed {}

/// The timeouts of a call, as a type: [`NoTimeouts`] until
/// [`Hedge::timeout`](crate::Hedge::timeout) or
/// [`Hedge::attempt_timeout`](crate::Hedge::attempt_timeout) makes them [`Timeouts`].
///
/// Sealed: implemented by those two types only.
pub trait Deadlines<E>: sealed::Sealed {
    /// How long each copy may run, if bounded.
    fn attempt(&self) -> Option<Duration>;

    /// How long the whole call may run, if bounded.
    fn total(&self) -> Option<Duration>;

    /// The error of a copy or call that ran out of time.
    fn elapsed(&self) -> E;
}

/// No timeout: the default type state of a [`Hedge`](crate::Hedge); it holds nothing and
/// every check on it compiles away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoTimeouts;

/// The attempt and total timeouts of a call; made by
/// [`Hedge::timeout`](crate::Hedge::timeout) and
/// [`Hedge::attempt_timeout`](crate::Hedge::attempt_timeout).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeouts {
    pub(crate) attempt: Option<Duration>,
    pub(crate) total: Option<Duration>,
}

impl<E> Deadlines<E> for NoTimeouts {
    #[inline(always)]
    fn attempt(&self) -> Option<Duration> {
        None
    }

    #[inline(always)]
    fn total(&self) -> Option<Duration> {
        None
    }

    fn elapsed(&self) -> E {
        unreachable!("a call without timeouts never times out")
    }
}

impl<E: From<Elapsed>> Deadlines<E> for Timeouts {
    #[inline]
    fn attempt(&self) -> Option<Duration> {
        self.attempt
    }

    #[inline]
    fn total(&self) -> Option<Duration> {
        self.total
    }

    fn elapsed(&self) -> E {
        E::from(Elapsed)
    }
}

/// What a call's timeouts become when one more is set.
pub trait IntoTimeouts: sealed::Sealed {
    /// The timeouts set so far.
    fn timeouts(&self) -> Timeouts;
}

impl IntoTimeouts for NoTimeouts {
    fn timeouts(&self) -> Timeouts {
        Timeouts::default()
    }
}

impl IntoTimeouts for Timeouts {
    fn timeouts(&self) -> Timeouts {
        *self
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoTimeouts {}
    impl Sealed for super::Timeouts {}
}
