//! Hedged calls on smol, timed by the async-io reactor smol runs (`AsyncIoTimer`): no
//! helper thread, no allocation per sleep.
//!
//! ```sh
//! cargo run --example smol --features async-io
//! ```

use std::time::{Duration, Instant};

use hedging::timer::AsyncIoTimer;
use hedging::{Attempt, Hedgeable, Policy};

/// A replica call: 1–2 ms, but one call in 50 stalls for 100 ms.
async fn fetch(replica: usize, key: u32) -> Result<String, std::io::Error> {
    let stalled = fastrand::u32(..50) == 0;
    let latency = if stalled { 100 } else { 1 + fastrand::u64(..2) };
    smol::Timer::after(Duration::from_millis(latency)).await;
    Ok(format!("value {key} from replica {replica}"))
}

fn main() -> Result<(), std::io::Error> {
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_millis(10))
        .timer(AsyncIoTimer::new())
        .build();

    smol::block_on(async {
        // A borrowed policy: no reference counting per call.
        let value = (|a: Attempt| fetch(a.index(), 7)).hedged(&policy).await?;
        println!("{value}");

        // An owned policy makes a `'static` future: spawn 200 calls at once.
        let started = Instant::now();
        let calls: Vec<_> = (0..200)
            .map(|key| {
                smol::spawn((move |a: Attempt| fetch(a.index(), key)).hedged(policy.clone()))
            })
            .collect();
        for call in calls {
            call.await?;
        }
        println!("200 concurrent calls in {:?}", started.elapsed());
        println!("{:?}", policy.stats());
        Ok(())
    })
}
