//! The README's quick start, compiled by CI: `cargo run -p reqwest-hedging --features
//! tokio --example quick_start_reqwest -- http://host/path`.

use std::time::Duration;

use reqwest_hedging::hedging::{timer::TokioTimer, Policy};
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::ClientBuilder;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // TokioTimer: the hedge delay on tokio's clock, which a test's paused clock drives
    // (the default FuturesTimer follows the real clock, paused or not).
    let policy = Policy::builder()
        .name("catalog")
        .delay(Duration::from_millis(20)) // until each host has 100 latencies,
        .optimal_delay(0.99) // then the delay predicted to cut its p99 most:
        .adaptive_keys(64) // a delay per (scheme, authority)
        .timer(TokioTimer::new())
        .build();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();

    let url = std::env::args()
        .nth(1)
        .unwrap_or("http://127.0.0.1:8080/".into());
    let response = client.get(url).send().await?; // a GET slower than its host's delay gets a copy
    println!("{}; {:?}", response.status(), policy.stats());
    Ok(())
}
