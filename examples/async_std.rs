//! Hedged calls on async-std, timed by the async-io reactor async-std runs
//! (`AsyncIoTimer`).
//!
//! ```sh
//! cargo run --example async_std --features async-io
//! ```

use std::time::{Duration, Instant};

use hedging::timer::AsyncIoTimer;
use hedging::{Attempt, Hedgeable, Policy};

/// A replica call: 1–2 ms, but one call in 50 stalls for 100 ms.
async fn fetch(replica: usize, key: u32) -> Result<String, std::io::Error> {
    let stalled = fastrand::u32(..50) == 0;
    let latency = if stalled { 100 } else { 1 + fastrand::u64(..2) };
    async_std::task::sleep(Duration::from_millis(latency)).await;
    Ok(format!("value {key} from replica {replica}"))
}

fn main() -> Result<(), std::io::Error> {
    async_std::task::block_on(run())
}

async fn run() -> Result<(), std::io::Error> {
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_millis(10))
        .timer(AsyncIoTimer::new())
        .build();

    let value = (|a: Attempt| fetch(a.index(), 7)).hedged(&policy).await?;
    println!("{value}");

    let started = Instant::now();
    let calls: Vec<_> = (0..200)
        .map(|key| {
            async_std::task::spawn((move |a: Attempt| fetch(a.index(), key)).hedged(policy.clone()))
        })
        .collect();
    for call in calls {
        call.await?;
    }
    println!("200 concurrent calls in {:?}", started.elapsed());
    println!("{:?}", policy.stats());
    Ok(())
}
