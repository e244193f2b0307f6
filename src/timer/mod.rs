//! The clock and sleep a [`Hedge`](crate::Hedge) schedules its copies with.
//!
//! A [`Timer`] tells the time and makes sleeps. The crate ships:
//!
#![cfg_attr(
    feature = "futures-timer",
    doc = "- [`FuturesTimer`] (feature `futures-timer`, default): a helper thread drives the"
)]
#![cfg_attr(
    not(feature = "futures-timer"),
    doc = "- `FuturesTimer` (feature `futures-timer`, default): a helper thread drives the"
)]
//!   sleeps; works under any executor.
#![cfg_attr(
    feature = "async-io",
    doc = "- [`AsyncIoTimer`] (feature `async-io`): the async-io reactor drives the sleeps; the"
)]
#![cfg_attr(
    not(feature = "async-io"),
    doc = "- `AsyncIoTimer` (feature `async-io`): the async-io reactor drives the sleeps; the"
)]
//!   natural choice on smol and async-std.
#![cfg_attr(
    feature = "tokio",
    doc = "- [`TokioTimer`] (feature `tokio`): tokio's clock and sleeps; honours"
)]
#![cfg_attr(
    not(feature = "tokio"),
    doc = "- `TokioTimer` (feature `tokio`): tokio's clock and sleeps; honours"
)]
//!   `tokio::time::pause`, so paused-clock tests drive the hedges.
#![cfg_attr(
    feature = "std",
    doc = "- [`ManualTimer`] (feature `std`): virtual time that moves only when told to, for"
)]
#![cfg_attr(
    not(feature = "std"),
    doc = "- `ManualTimer` (feature `std`): virtual time that moves only when told to, for"
)]
//!   deterministic tests of hedged code.
//!
//! Any other clock (a runtime's own, an embedded HAL's) plugs in by implementing
//! [`Timer`]; see `examples/custom_timer.rs`.

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

#[cfg(feature = "async-io")]
mod async_io;
#[cfg(feature = "futures-timer")]
mod futures_timer;
#[cfg(feature = "std")]
mod manual;
#[cfg(feature = "tokio")]
mod tokio;

#[cfg(feature = "async-io")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-io")))]
pub use self::async_io::{AsyncIoSleep, AsyncIoTimer};
#[cfg(feature = "futures-timer")]
#[cfg_attr(docsrs, doc(cfg(feature = "futures-timer")))]
pub use self::futures_timer::{FuturesSleep, FuturesTimer};
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use self::manual::{ManualSleep, ManualTimer};
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use self::tokio::TokioTimer;

/// A monotonic clock that can make sleeps.
///
/// `Hedge` arms one sleep per call, only when a hedge is due while the original is still
/// pending: through [`sleep_from_now`](Timer::sleep_from_now) if the timer can tell later
/// when that sleep started (the call's clock then starts unread, and
/// [`started`](Timer::started) reads it only if the call goes on), else by reading
/// [`now`](Timer::now) and calling [`sleep_until`](Timer::sleep_until). Later deadlines
/// re-arm that one sleep through [`reset_until`](Timer::reset_until). These default to
/// [`sleep`](Timer::sleep) and [`reset`](Timer::reset), the two a timer must provide.
///
/// Implementations must be cheap to clone (the policy holds one) and must not block.
///
/// # Huge durations
///
/// [`sleep`](Timer::sleep) and [`reset`](Timer::reset) (and
/// [`sleep_until`](Timer::sleep_until) and [`reset_until`](Timer::reset_until), if a
/// timer overrides them) must accept every `Duration`, up to `Duration::MAX`, without
/// panicking: a deadline the clock cannot represent is parked as far away as it can go
/// (the shipped timers park it decades away; `ManualTimer` saturates). `Hedge` itself never arms a deadline that saturated to `Duration::MAX`: a
/// copy due at the end of time is never started by the clock.
///
/// A policy given something else fails to compile with a note naming every shipped timer
/// and the runtime each is for:
///
/// ```compile_fail,E0277
/// // error[E0277]: `u8` is not a hedging timer
/// let policy = hedging::Policy::builder().timer(42u8).build();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a hedging timer",
    label = "no `Timer` implementation",
    note = "give the policy a timer with `PolicyBuilder::timer`: `timer::TokioTimer` (feature `tokio`) on tokio, paused clocks included; `timer::AsyncIoTimer` (feature `async-io`) on smol or async-std; `timer::FuturesTimer` (feature `futures-timer`, on by default) on any executor, or none; `timer::ManualTimer` (feature `std`) in tests; or a type of your own that implements `hedging::timer::Timer`"
)]
pub trait Timer: Clone {
    /// The future [`sleep`](Timer::sleep) returns; it completes once its duration has passed.
    type Sleep: Future<Output = ()>;

    /// The time elapsed since an arbitrary, fixed origin. Must never go backwards.
    fn now(&self) -> Duration;

    /// A future that completes `after` from now.
    fn sleep(&self, after: Duration) -> Self::Sleep;

    /// Re-arms `sleep` to complete `after` from now.
    ///
    /// The default replaces it with a fresh [`sleep`](Timer::sleep); backends that can
    /// move a registered deadline should override it to avoid a new registration.
    fn reset(&self, mut sleep: Pin<&mut Self::Sleep>, after: Duration) {
        sleep.set(self.sleep(after));
    }

    /// A sleep that completes at `deadline`, a time on this timer's clock (see
    /// [`now`](Timer::now)), where `now` is a reading of that clock just taken.
    ///
    /// `Hedge` reads the clock before it arms its timer, so a backend that can sleep until
    /// an instant (tokio's `sleep_until`, async-io's `Timer::at`) overrides this to skip
    /// reading its clock a second time, and need not look at `now`. The default is
    /// `sleep(deadline - now)`: it trusts `now`, and a deadline at or before it is due at
    /// once.
    fn sleep_until(&self, deadline: Duration, now: Duration) -> Self::Sleep {
        self.sleep(deadline.saturating_sub(now))
    }

    /// Re-arms `sleep` to complete at `deadline`, where `now` is a reading of this
    /// timer's clock just taken: see [`sleep_until`](Timer::sleep_until). The default is
    /// `reset(sleep, deadline - now)`.
    fn reset_until(&self, sleep: Pin<&mut Self::Sleep>, deadline: Duration, now: Duration) {
        self.reset(sleep, deadline.saturating_sub(now));
    }

    /// A sleep that completes `after` from now, made before the caller read the clock, if
    /// this timer can tell later which reading of its clock the sleep counts from (see
    /// [`started`](Timer::started)); `None` if it cannot.
    ///
    /// `Hedge` arms a call's first sleep through this, so that a call whose original answers
    /// before the delay never reads the clock itself; it asks [`started`](Timer::started)
    /// only if the call goes on. On `None` it reads [`now`](Timer::now) and arms
    /// [`sleep_until`](Timer::sleep_until), as it does for every later deadline. The default
    /// is `None`.
    fn sleep_from_now(&self, after: Duration) -> Option<Self::Sleep> {
        let _ = after;
        None
    }

    /// The reading of [`now`](Timer::now) that `sleep`, made by
    /// [`sleep_from_now`](Timer::sleep_from_now)`(after)`, counts from: its deadline less
    /// `after`. `Hedge` asks at most once per call, before it re-arms `sleep`.
    ///
    /// A timer whose `sleep_from_now` returns `Some` overrides this. The default reads
    /// `now`, later than the sleep's own reading: right only for a timer whose
    /// `sleep_from_now` returns `None`, which never has it called.
    fn started(&self, sleep: &Self::Sleep, after: Duration) -> Duration {
        let _ = (sleep, after);
        self.now()
    }
}

/// The timer a [`Policy`](crate::Policy) uses when none is given: [`FuturesTimer`].
#[cfg(feature = "futures-timer")]
pub type DefaultTimer = FuturesTimer;

/// The timer a [`Policy`](crate::Policy) uses when none is given.
///
/// The `futures-timer` feature is off, so there is no default: this placeholder does not
/// implement [`Timer`], and building a policy without
/// [`PolicyBuilder::timer`](crate::PolicyBuilder::timer) fails to compile with a message
/// naming the fix.
#[cfg(not(feature = "futures-timer"))]
pub type DefaultTimer = EnableFuturesTimerFeatureOrCallPolicyBuilderTimer;

/// Stands in for the default timer while the `futures-timer` feature is off.
///
/// It does not implement [`Timer`]: enable `futures-timer`, or pass a timer to
/// [`PolicyBuilder::timer`](crate::PolicyBuilder::timer).
#[cfg(not(feature = "futures-timer"))]
#[derive(Debug, Clone, Copy, Default)]
pub struct EnableFuturesTimerFeatureOrCallPolicyBuilderTimer;

/// A process-wide origin for timers built on `std::time::Instant`.
#[cfg(any(feature = "futures-timer", feature = "async-io"))]
fn origin() -> std::time::Instant {
    use std::sync::OnceLock;
    use std::time::Instant;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// The time since the process-wide origin.
#[cfg(any(feature = "futures-timer", feature = "async-io"))]
pub(crate) fn since_origin() -> Duration {
    origin().elapsed()
}

/// What `since_origin` read, or would have, at `instant` (zero if it came before the
/// origin was set, as the first reading after it is close to zero).
#[cfg(any(feature = "futures-timer", feature = "async-io"))]
pub(crate) fn since(instant: std::time::Instant) -> Duration {
    instant.saturating_duration_since(origin())
}

/// The instant `since_origin` reads as `at`, if it can be represented.
#[cfg(feature = "async-io")]
pub(crate) fn instant(at: Duration) -> Option<std::time::Instant> {
    origin().checked_add(at)
}
