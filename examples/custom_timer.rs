//! A timer of your own: implement `hedging::timer::Timer` (a clock and a sleep). This
//! one wraps another timer and counts how often a hedge armed or re-armed it, a metric
//! worth exporting: every arm is a call whose original was still pending when a hedge
//! came due.
//!
//! ```sh
//! cargo run --example custom_timer
//! ```

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use hedging::timer::{FuturesTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy};

/// Counts the sleeps and re-arms of the timer it wraps.
#[derive(Clone, Debug, Default)]
struct Metered<T> {
    inner: T,
    sleeps: Arc<AtomicU64>,
    resets: Arc<AtomicU64>,
}

impl<T: Timer> Timer for Metered<T> {
    type Sleep = T::Sleep;

    fn now(&self) -> Duration {
        self.inner.now()
    }

    fn sleep(&self, after: Duration) -> T::Sleep {
        self.sleeps.fetch_add(1, Relaxed);
        self.inner.sleep(after)
    }

    // Keep the inner timer's cheap re-arm instead of the default (a fresh sleep).
    fn reset(&self, sleep: Pin<&mut T::Sleep>, after: Duration) {
        self.resets.fetch_add(1, Relaxed);
        self.inner.reset(sleep, after);
    }
}

fn main() {
    let timer = Metered::<FuturesTimer>::default();
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_millis(5))
        .timer(timer.clone())
        .build();

    futures::executor::block_on(async {
        for key in 0..20u64 {
            let answer = (|a: Attempt| async move {
                // One call in four has a slow original, one in eight a slow first hedge
                // too (the timer is re-armed for the second); the rest answer at once.
                let slow = match a.index() {
                    0 => key % 4 == 0,
                    1 => key % 8 == 0,
                    _ => false,
                };
                if slow {
                    futures_timer::Delay::new(Duration::from_millis(50)).await;
                }
                Ok::<_, ()>((key, a.index()))
            })
            .hedged(&policy)
            .await;
            assert_eq!(answer.map(|(k, _)| k), Ok(key));
        }
    });

    let stats = policy.stats();
    println!(
        "20 calls: {} sleeps made, {} re-armed; {} hedges, {} won by a hedge",
        timer.sleeps.load(Relaxed),
        timer.resets.load(Relaxed),
        stats.hedges,
        stats.hedge_wins,
    );
}
