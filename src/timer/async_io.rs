//! [`AsyncIoTimer`]: sleeps driven by the async-io reactor.

use core::pin::Pin;
use core::time::Duration;
use std::future::Future;
use std::task::{Context, Poll};
use std::time::Instant;

use super::Timer;

/// A timer driven by the [`async_io`] reactor, the one smol and async-std run.
///
/// Sleeps are [`async_io::Timer`]s: no helper thread, and re-arming moves the existing
/// registration instead of making a new one.
#[derive(Debug, Clone, Copy, Default)]
pub struct AsyncIoTimer;

impl AsyncIoTimer {
    /// The timer. It holds no state; sleeps register with the process-wide reactor.
    pub const fn new() -> Self {
        AsyncIoTimer
    }
}

/// The sleep of [`AsyncIoTimer`]: an [`async_io::Timer`] that completes once.
#[derive(Debug)]
pub struct AsyncIoSleep {
    timer: async_io::Timer,
    /// The clock reading it counts from, if it was made by `sleep_from_now`.
    start: Option<Instant>,
}

impl AsyncIoSleep {
    fn new(timer: async_io::Timer) -> Self {
        AsyncIoSleep { timer, start: None }
    }
}

impl Future for AsyncIoSleep {
    type Output = ();

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.timer).poll(cx).map(drop)
    }
}

impl Timer for AsyncIoTimer {
    type Sleep = AsyncIoSleep;

    fn now(&self) -> Duration {
        super::since_origin()
    }

    fn sleep(&self, after: Duration) -> Self::Sleep {
        AsyncIoSleep::new(async_io::Timer::after(after))
    }

    fn reset(&self, sleep: Pin<&mut Self::Sleep>, after: Duration) {
        sleep.get_mut().timer.set_after(after);
    }

    // The hedge read the clock already: `Timer::after` would read it again.
    // A deadline `Instant` cannot hold is past the end of time: it never fires.
    fn sleep_until(&self, deadline: Duration, _now: Duration) -> Self::Sleep {
        match super::instant(deadline) {
            Some(at) => AsyncIoSleep::new(async_io::Timer::at(at)),
            None => self.sleep(Duration::MAX),
        }
    }

    fn reset_until(&self, sleep: Pin<&mut Self::Sleep>, deadline: Duration, _now: Duration) {
        match super::instant(deadline) {
            Some(at) => sleep.get_mut().timer.set_at(at),
            None => self.reset(sleep, Duration::MAX),
        }
    }

    // What `Timer::after` does, keeping the reading: converted only if the call goes on.
    #[inline]
    fn sleep_from_now(&self, after: Duration) -> Option<Self::Sleep> {
        let start = Instant::now();
        let at = start.checked_add(after)?;
        Some(AsyncIoSleep {
            timer: async_io::Timer::at(at),
            start: Some(start),
        })
    }

    fn started(&self, sleep: &Self::Sleep, _after: Duration) -> Duration {
        sleep.start.map_or_else(|| self.now(), super::since)
    }
}
