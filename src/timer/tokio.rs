//! [`TokioTimer`]: tokio's clock and sleeps.

use core::pin::Pin;
use core::time::Duration;

use tokio::time::Instant;

use super::Timer;

/// Where a deadline past the end of `Instant` goes: tokio's own `sleep` does the same
/// (about 30 years on), and a sleep that far away is as good as never.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// A timer on tokio's clock: sleeps are [`tokio::time::Sleep`]s, and the time is
/// [`tokio::time::Instant::now`].
///
/// Because both come from tokio, a runtime whose clock is paused
/// (`tokio::time::pause`, `#[tokio::test(start_paused = true)]`) drives the hedges
/// too: `tokio::time::advance` starts every copy that comes due, and an idle paused
/// runtime jumps straight to the next hedge. Tests of hedged code on tokio need no real
/// time. Re-arming moves the existing sleep's deadline instead of making a new one.
///
/// ```
/// use std::time::Duration;
/// use hedging::{Hedgeable, Policy, timer::TokioTimer};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let policy = Policy::builder()
///     .delay(Duration::from_millis(20))
///     .timer(TokioTimer::new())
///     .build();
/// let started = tokio::time::Instant::now();
/// let answer = (|a: hedging::Attempt| async move {
///     if a.index() == 0 {
///         tokio::time::sleep(Duration::from_secs(1)).await; // the original stalls
///     }
///     Ok::<_, ()>(a.index())
/// })
/// .hedged(&policy)
/// .await;
/// assert_eq!(answer, Ok(1)); // the hedge won...
/// assert_eq!(started.elapsed(), Duration::from_millis(20)); // ...exactly at its delay
/// # });
/// ```
///
/// # Panics
///
/// A sleep is made only when a hedge is due while the original is still pending; it must
/// then be polled inside a tokio runtime with time enabled (`enable_time`, or
/// `enable_all`), as every tokio sleep must. Outside one, tokio panics.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub struct TokioTimer {
    origin: Instant,
}

impl TokioTimer {
    /// The timer. Its clock counts from now; under a paused runtime, from the paused
    /// clock's now.
    pub fn new() -> Self {
        TokioTimer {
            origin: Instant::now(),
        }
    }
}

impl Default for TokioTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl Timer for TokioTimer {
    type Sleep = tokio::time::Sleep;

    fn now(&self) -> Duration {
        // Saturating: a timer made on one runtime's clock and used under another
        // (paused) one never reads a time before its origin.
        Instant::now().saturating_duration_since(self.origin)
    }

    fn sleep(&self, after: Duration) -> Self::Sleep {
        tokio::time::sleep(after)
    }

    fn reset(&self, sleep: Pin<&mut Self::Sleep>, after: Duration) {
        let now = Instant::now();
        // `Instant + Duration` panics on overflow; saturate as `sleep` does.
        let deadline = now.checked_add(after).unwrap_or_else(|| now + FAR_FUTURE);
        sleep.reset(deadline);
    }

    // The hedge read the clock already: tokio's own `sleep` would read it again.
    fn sleep_until(&self, deadline: Duration, _now: Duration) -> Self::Sleep {
        tokio::time::sleep_until(self.instant(deadline))
    }

    fn reset_until(&self, sleep: Pin<&mut Self::Sleep>, deadline: Duration, _now: Duration) {
        sleep.reset(self.instant(deadline));
    }

    // tokio's own `sleep` reads the clock once, and the sleep keeps its deadline: the
    // reading is that deadline less `after`, converted only if the call goes on. Past
    // `FAR_FUTURE`, tokio may park the deadline elsewhere, so the hedge reads the clock.
    #[inline]
    fn sleep_from_now(&self, after: Duration) -> Option<Self::Sleep> {
        if after.as_secs() < FAR_FUTURE.as_secs() {
            Some(tokio::time::sleep(after))
        } else {
            None
        }
    }

    fn started(&self, sleep: &Self::Sleep, after: Duration) -> Duration {
        sleep
            .deadline()
            .checked_sub(after)
            .map_or(Duration::ZERO, |start| {
                start.saturating_duration_since(self.origin)
            })
    }
}

impl TokioTimer {
    /// The instant `deadline` on this timer's clock names, or, if it cannot be
    /// represented, one decades away (where tokio's own `sleep` parks such deadlines).
    fn instant(&self, deadline: Duration) -> Instant {
        self.origin
            .checked_add(deadline)
            .unwrap_or_else(|| Instant::now() + FAR_FUTURE)
    }
}
