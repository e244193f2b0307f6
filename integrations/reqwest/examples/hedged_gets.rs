//! Hedged GETs through a `reqwest_middleware` client on real loopback sockets: a server
//! that stalls 1 request in 100 for 200 ms, called without and with `HedgeMiddleware`.
//! Prints the latency table of each run.
//!
//! ```sh
//! cargo run --release -p reqwest-hedging --example hedged_gets [-- REQUESTS DELAY_MS]
//! ```

use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_test_server::http::Server;
use hedging_test_server::report::{self, args, extra, latencies, Run};
use hedging_test_server::{one_in, Error};
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

/// Sends `requests` GETs one after another, body read to the end; their latencies.
async fn run(
    client: &ClientWithMiddleware,
    url: &str,
    requests: usize,
) -> Result<Vec<Duration>, Error> {
    latencies(requests, || async {
        let response = client.get(url).send().await?.error_for_status()?;
        response.bytes().await?;
        Ok::<_, Error>(())
    })
    .await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (requests, delay) = args(2000, 5)?;

    let server = Server::start(one_in(100, Duration::from_millis(200))).await?;
    let url = server.url("/catalog/item");
    let plain = ClientBuilder::new(reqwest::Client::new()).build();
    let policy = Policy::builder()
        .name("catalog")
        .max_copies(2)
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();

    // Warm up: open the pooled connections of both clients.
    run(&plain, &url, 20).await?;
    run(&hedged, &url, 20).await?;
    policy.reset_stats();

    let unhedged = run(&plain, &url, requests).await?;
    let before = server.requests();
    let latencies = run(&hedged, &url, requests).await?;
    let runs = [
        Run {
            label: "reqwest".into(),
            latencies: unhedged,
            extra: None,
        },
        Run {
            label: format!(
                "reqwest + HedgeMiddleware, hedged after {} ms",
                delay.as_millis()
            ),
            latencies,
            extra: Some(extra(server.requests() - before, requests)),
        },
    ];
    let what = format!(
        "{requests} sequential GETs per run; the server stalls 1 request in 100 for 200 ms"
    );
    let stats = policy.stats();
    report::print(&what, &runs, stats.hedges, stats.hedge_wins, server.held());
    Ok(())
}
