//! Hedged GETs over real loopback sockets: two HTTP/1 servers, the primary stalling 1%
//! of requests for 200 ms, and a hyper client. Prints latency quantiles without and with
//! hedging.
//!
//! ```sh
//! cargo run --release --example http --features tokio [-- REQUESTS DELAY_MS]
//! ```

mod loopback;

use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::Policy;
use loopback::{client, run, summary, Error, Server};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let delay_ms: u64 = args.next().map_or(Ok(5), |a| a.parse())?;
    if requests == 0 {
        return Err("REQUESTS must be at least 1".into());
    }

    let primary = Server::start(Some(100), Duration::from_millis(200)).await?;
    let replica = Server::start(None, Duration::ZERO).await?;
    let client = client();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(Duration::from_millis(delay_ms))
        .timer(TokioTimer::new())
        .build();

    // Warm up: open the pooled connections to both servers.
    run(&client, &primary.uri, &replica.uri, 20, Some(&policy)).await?;
    policy.reset_stats();
    let stalls_before = primary.stalled.load(std::sync::atomic::Ordering::Relaxed);

    println!("{requests} sequential GETs per run; primary stalls 1 request in 100 for 200 ms");
    let plain = run(&client, &primary.uri, &replica.uri, requests, None).await?;
    println!("without hedging:          {}", summary(&plain));
    let hedged = run(&client, &primary.uri, &replica.uri, requests, Some(&policy)).await?;
    println!("hedged after {delay_ms:>3} ms:      {}", summary(&hedged));

    let stats = policy.stats();
    let stalls = primary.stalled.load(std::sync::atomic::Ordering::Relaxed) - stalls_before;
    println!(
        "stalls served: {stalls}; hedges sent: {} ({:.1}% extra requests), won by a hedge: {}",
        stats.hedges,
        100.0 * stats.hedges as f64 / requests as f64,
        stats.hedge_wins,
    );
    Ok(())
}
