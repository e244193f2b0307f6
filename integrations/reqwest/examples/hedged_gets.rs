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
use hedging_test_server::report::{self, args};
use hedging_test_server::{one_in, real_clock, Error, Server};
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

/// One GET, its body read to the end.
async fn get(client: &ClientWithMiddleware, url: &str) -> Result<(), Error> {
    let response = client.get(url).send().await?.error_for_status()?;
    response.bytes().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (requests, delay) = args(2000, 5)?;

    let server = Server::http(one_in(100, Duration::from_millis(200)), real_clock()).await?;
    let url = server.url("/catalog/item");
    let plain = ClientBuilder::new(reqwest::Client::new()).build();
    let policy = Policy::builder()
        .name("catalog")
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();

    let what = format!(
        "{requests} sequential GETs per run; the server stalls 1 request in 100 for 200 ms"
    );
    let label = format!(
        "reqwest + HedgeMiddleware, hedged after {} ms",
        delay.as_millis()
    );
    let unhedged = ("reqwest", || get(&plain, &url));
    let hedged = (label.as_str(), || get(&hedged, &url));
    report::compare(&what, requests, &policy, &[&server], unhedged, hedged).await
}
