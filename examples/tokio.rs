//! Hedged calls on tokio, timed by tokio's own clock (`TokioTimer`, feature `tokio`), so
//! `tokio::time::pause` drives the hedges in tests too.
//!
//! ```sh
//! cargo run --example tokio --features tokio
//! ```

use std::time::{Duration, Instant};

use hedging::timer::TokioTimer;
use hedging::{Attempt, Hedgeable, Policy};

/// A replica call: 1–2 ms, but one call in 50 stalls for 100 ms.
async fn fetch(replica: usize, key: u32) -> Result<String, std::io::Error> {
    let stalled = fastrand::u32(..50) == 0;
    let latency = if stalled { 100 } else { 1 + fastrand::u64(..2) };
    tokio::time::sleep(Duration::from_millis(latency)).await;
    Ok(format!("value {key} from replica {replica}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_millis(10))
        .timer(TokioTimer::new())
        .build();

    let value = (|a: Attempt| fetch(a.index(), 7)).hedged(&policy).await?;
    println!("{value}");

    // An owned policy makes a `Send + 'static` future: spawn 200 calls at once.
    let started = Instant::now();
    let calls: Vec<_> = (0..200)
        .map(|key| tokio::spawn((move |a: Attempt| fetch(a.index(), key)).hedged(policy.clone())))
        .collect();
    for call in calls {
        call.await??;
    }
    println!("200 concurrent calls in {:?}", started.elapsed());
    println!("{:?}", policy.stats());
    Ok(())
}
