//! The README's quick start, compiled by CI: `cargo run -p hedging-http --features tokio
//! --example quick_start_http -- http://host/path`.

use std::time::Duration;

use bytes::Bytes;
use hedging_http::hedging::{timer::TokioTimer, Policy};
use hedging_http::HttpHedgeLayer;
use http_body_util::{BodyExt, Empty};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use tower::{ServiceBuilder, ServiceExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // TokioTimer: the hedge delay on tokio's clock, which a test's paused clock drives
    // (the default FuturesTimer follows the real clock, paused or not).
    let policy = Policy::builder()
        .delay(Duration::from_millis(20)) // until each host has 100 latencies,
        .optimal_delay(0.99) // then the delay predicted to cut its p99 most:
        .adaptive_keys(64) // a delay per (scheme, authority)
        .timer(TokioTimer::new())
        .build();
    let client = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(Client::builder(TokioExecutor::new()).build_http());

    let url = std::env::args()
        .nth(1)
        .unwrap_or("http://127.0.0.1:8080/".into());
    let request = http::Request::get(url).body(Empty::<Bytes>::new())?;
    let response = client.oneshot(request).await?; // a GET slower than its host's delay gets a copy
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    println!("{status}, {} bytes; {:?}", body.len(), policy.stats());
    Ok(())
}
