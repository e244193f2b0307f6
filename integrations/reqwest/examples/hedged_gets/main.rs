//! Hedged GETs through a `reqwest_middleware` client on real loopback sockets: a server
//! that stalls 1 request in 100 for 200 ms, called without and with `HedgeMiddleware`.
//! Prints the latency table of each run.
//!
//! ```sh
//! cargo run --release -p reqwest-hedging --example hedged_gets [-- REQUESTS DELAY_MS]
//! ```

mod loopback;

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use hedging::timer::TokioTimer;
use hedging::Policy;
use loopback::{header, row, Error, Server};
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

/// Sends `requests` GETs one after another, body read to the end, and returns each one's
/// latency, sorted.
async fn run(
    client: &ClientWithMiddleware,
    url: &str,
    requests: usize,
) -> Result<Vec<Duration>, Error> {
    let mut latencies = Vec::with_capacity(requests);
    for _ in 0..requests {
        let started = Instant::now();
        let response = client.get(url).send().await?.error_for_status()?;
        response.bytes().await?;
        latencies.push(started.elapsed());
    }
    latencies.sort();
    Ok(latencies)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let requests: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let delay_ms: u64 = args.next().map_or(Ok(5), |a| a.parse())?;
    if requests == 0 {
        return Err("REQUESTS must be at least 1".into());
    }

    let server = Server::start(Duration::from_millis(200), Some(100)).await?;
    let url = server.url("/catalog/item");
    let plain = ClientBuilder::new(reqwest::Client::new()).build();
    let policy = Policy::builder()
        .name("catalog")
        .max_copies(2)
        .delay(Duration::from_millis(delay_ms))
        .timer(TokioTimer::new())
        .build();
    let hedged = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();

    // Warm up: open the pooled connections of both clients.
    run(&plain, &url, 20).await?;
    run(&hedged, &url, 20).await?;
    policy.reset_stats();

    println!("{requests} sequential GETs per run; the server stalls 1 request in 100 for 200 ms\n");
    println!("{}", header());
    let plain_latencies = run(&plain, &url, requests).await?;
    println!("{}", row("reqwest", &plain_latencies, None));
    let before = server.requests.load(Relaxed);
    let hedged_latencies = run(&hedged, &url, requests).await?;
    let extra = (server.requests.load(Relaxed) - before) as f64 / requests as f64 - 1.0;
    let label = format!("reqwest + HedgeMiddleware, hedged after {delay_ms} ms");
    println!("{}", row(&label, &hedged_latencies, Some(extra)));

    let stats = policy.stats();
    println!(
        "\nhedges sent: {}, won by a hedge: {}, stalls served in all: {}",
        stats.hedges,
        stats.hedge_wins,
        server.stalled.load(Relaxed),
    );
    Ok(())
}
