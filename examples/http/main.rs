//! Hedged GETs over real loopback sockets: two HTTP/1 servers, the primary stalling 1%
//! of requests for 200 ms, and a hyper client. Prints the latency table without and with
//! hedging.
//!
//! ```sh
//! cargo run --release --example http --features tokio [-- REQUESTS DELAY_MS]
//! ```

mod calls;

use std::time::Duration;

use calls::{ok, run};
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_test_server::http::{client, Server};
use hedging_test_server::report::{self, args, Run};
use hedging_test_server::{always, one_in, Error};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (requests, delay) = args(2000, 5)?;

    let primary = Server::start(one_in(100, Duration::from_millis(200))).await?;
    let replica = Server::start(always(ok())).await?;
    let (primary_uri, replica_uri) = (primary.uri("/"), replica.uri("/"));
    let client = client();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(delay)
        .timer(TokioTimer::new())
        .build();

    // Warm up: open the pooled connections to both servers.
    run(&client, &primary_uri, &replica_uri, 20, Some(&policy)).await?;
    policy.reset_stats();
    let stalls_before = primary.held();

    let plain = run(&client, &primary_uri, &replica_uri, requests, None).await?;
    let hedged = run(&client, &primary_uri, &replica_uri, requests, Some(&policy)).await?;
    let stats = policy.stats();
    let runs = [
        Run {
            label: "without hedging".into(),
            latencies: plain,
            extra: None,
        },
        Run {
            label: format!("hedged after {} ms", delay.as_millis()),
            latencies: hedged,
            extra: Some(stats.hedges as f64 / requests as f64),
        },
    ];
    let what = format!(
        "{requests} sequential GETs per run; the primary stalls 1 request in 100 for 200 ms, \
         hedges go to a replica"
    );
    let stalls = primary.held() - stalls_before;
    report::print(&what, &runs, stats.hedges, stats.hedge_wins, stalls);
    Ok(())
}
