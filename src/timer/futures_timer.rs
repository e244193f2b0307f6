//! [`FuturesTimer`]: sleeps from the `futures-timer` crate.

use core::pin::Pin;
use core::time::Duration;
use std::future::Future;
use std::task::{Context, Poll};
use std::time::Instant;

use super::Timer;

/// Longer sleeps are cut to this: `Delay` adds its duration to `Instant::now()`, which
/// panics on overflow, and a century is as good as never.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// The default timer: [`futures_timer::Delay`] on a helper thread, the wall clock from
/// [`std::time::Instant`].
///
/// It works under any executor, or none. Its first sleep in the process starts the
/// helper thread; each sleep allocates one small node.
///
/// # Precision
///
/// Sleeps fire on the helper thread's schedule, usually within a few tens of
/// microseconds of their deadline.
///
/// # Under a paused tokio clock
///
/// It follows the real clock, so under `tokio::time::pause` (or `start_paused`) a hedge
/// comes only when real time has passed, and a test that advances tokio's clock tests no
/// hedging. Give such a policy `TokioTimer` (feature `tokio`). In a debug build
/// with the `tokio` feature, the first of its sleeps armed under a paused tokio clock
/// (tokio's clock stands still while the real one ticks, at t = 0 as after an advance)
/// says so, once per process: a `tracing` warning with the `tracing` feature when a
/// subscriber takes it, else a line on standard error.
#[derive(Debug, Clone, Copy, Default)]
pub struct FuturesTimer;

impl FuturesTimer {
    /// The timer. It holds no state; every value shares the process-wide helper thread.
    pub const fn new() -> Self {
        FuturesTimer
    }
}

/// The sleep of [`FuturesTimer`]: a [`futures_timer::Delay`] that completes once.
#[derive(Debug)]
pub struct FuturesSleep {
    delay: futures_timer::Delay,
    /// The clock reading it counts from, if it was made by `sleep_from_now`: `Delay` reads
    /// its own and keeps it to itself.
    start: Option<Instant>,
}

impl Future for FuturesSleep {
    type Output = ();

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.delay).poll(cx)
    }
}

impl Timer for FuturesTimer {
    type Sleep = FuturesSleep;

    fn now(&self) -> Duration {
        super::since_origin()
    }

    fn sleep(&self, after: Duration) -> Self::Sleep {
        #[cfg(all(debug_assertions, feature = "tokio"))]
        paused_tokio::warn_once();
        FuturesSleep {
            delay: futures_timer::Delay::new(after.min(FAR_FUTURE)),
            start: None,
        }
    }

    fn reset(&self, sleep: Pin<&mut Self::Sleep>, after: Duration) {
        sleep.get_mut().delay.reset(after.min(FAR_FUTURE));
    }

    // A raw reading, taken as `Delay` takes its own: converted only if the call goes on.
    #[inline]
    fn sleep_from_now(&self, after: Duration) -> Option<Self::Sleep> {
        #[cfg(all(debug_assertions, feature = "tokio"))]
        paused_tokio::warn_once();
        let start = Instant::now();
        Some(FuturesSleep {
            delay: futures_timer::Delay::new(after.min(FAR_FUTURE)),
            start: Some(start),
        })
    }

    fn started(&self, sleep: &Self::Sleep, _after: Duration) -> Duration {
        sleep.start.map_or_else(|| self.now(), super::since)
    }
}

/// The one warning that a default timer runs under a paused tokio clock.
#[cfg(all(debug_assertions, feature = "tokio"))]
mod paused_tokio {
    use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

    static WARNED: AtomicBool = AtomicBool::new(false);

    /// Checked at every sleep until it warned: a paused clock is caught at the first sleep
    /// armed under it, at t = 0 as after it moved.
    pub(super) fn warn_once() {
        if !WARNED.load(Relaxed) && tokio_clock_is_paused() && !WARNED.swap(true, Relaxed) {
            crate::trace::default_timer_under_paused_tokio();
        }
    }

    /// Whether tokio's clock stood still while the real one ticked. A running tokio clock
    /// (paused or not, it reads the real one when it runs) moves with it; a paused one
    /// moves only when advanced, which nothing does while this thread spins.
    fn tokio_clock_is_paused() -> bool {
        let tokio_before = tokio::time::Instant::now();
        let real_after = std::time::Instant::now();
        // A few nanoseconds where the clock counts them; a clock too coarse to tick in
        // this many reads tells nothing, and nothing is said.
        let ticked = (0..10_000).any(|_| std::time::Instant::now() > real_after);
        ticked && tokio::time::Instant::now() == tokio_before
    }
}
