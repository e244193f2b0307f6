//! Hedged GETs over real loopback sockets: two HTTP/1 servers, the primary stalling 1%
//! of requests for 200 ms, and a hyper client. Prints the latency table without and with
//! hedging.
//!
//! ```sh
//! cargo run --release --example http --features tokio [-- REQUESTS DELAY_MS]
//! ```

mod calls;

use std::time::Duration;

use calls::{get, ok, primary_or_replica};
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_test_server::http::client;
use hedging_test_server::report::{self, args};
use hedging_test_server::{always, one_in, real_clock, Error, Server};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (requests, delay) = args(2000, 5)?;

    let primary = Server::http(one_in(100, Duration::from_millis(200)), real_clock()).await?;
    let replica = Server::http(always(ok()), real_clock()).await?;
    let (primary_uri, replica_uri) = (primary.uri("/"), replica.uri("/"));
    let client = client();
    let policy = Policy::builder()
        .delay(delay)
        .timer(TokioTimer::new())
        .build();

    let what = format!(
        "{requests} sequential GETs per run; the primary stalls 1 request in 100 for 200 ms, \
         hedges go to a replica"
    );
    let label = format!("hedged after {} ms", delay.as_millis());
    let unhedged = ("without hedging", || get(&client, primary_uri.clone()));
    let hedged = (label.as_str(), || {
        primary_or_replica(&client, &primary_uri, &replica_uri, &policy)
    });
    let servers = [&*primary, &*replica];
    report::compare(&what, requests, &policy, &servers, unhedged, hedged).await
}
