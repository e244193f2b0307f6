//! [`FuturesTimer`]: sleeps from the `futures-timer` crate.

use core::pin::Pin;
use core::time::Duration;

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
#[derive(Debug, Clone, Copy, Default)]
pub struct FuturesTimer;

impl FuturesTimer {
    /// The timer. It holds no state; every value shares the process-wide helper thread.
    pub const fn new() -> Self {
        FuturesTimer
    }
}

impl Timer for FuturesTimer {
    type Sleep = futures_timer::Delay;

    fn now(&self) -> Duration {
        super::since_origin()
    }

    fn sleep(&self, after: Duration) -> Self::Sleep {
        futures_timer::Delay::new(after.min(FAR_FUTURE))
    }

    fn reset(&self, sleep: Pin<&mut Self::Sleep>, after: Duration) {
        sleep.get_mut().reset(after.min(FAR_FUTURE));
    }
}
