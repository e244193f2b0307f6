//! Hedged unary gRPC calls through a tonic `Channel` with `GrpcHedgeLayer`, against a
//! loopback tonic server that stalls 1 request in 100 for 200 ms. Prints the latency
//! table without and with hedging.
//!
//! ```sh
//! cargo run --release -p hedging-http --example grpc [-- CALLS DELAY_MS]
//! ```

use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::ReplayBody;
use hedging_test_server::grpc::{request, say, Server, SAY};
use hedging_test_server::report::{self, args, extra, latencies, Run};
use hedging_test_server::{one_in, Error};
use tonic::body::Body;
use tower::ServiceBuilder;

const STALL: Duration = Duration::from_millis(200);
const STALL_EVERY: u64 = 100;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(2000, 5)?;

    let server = Server::start(one_in(STALL_EVERY, STALL)).await?;
    let channel = server.channel().await?;
    let policy = Policy::builder()
        .max_copies(2)
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = ServiceBuilder::new()
        .layer(GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo"]))
        .map_request(|r: http::Request<ReplayBody<Body>>| r.map(Body::new))
        .service(channel.clone());

    // Warm up the connection and both paths.
    for _ in 0..20 {
        say(channel.clone(), request("", b"row-7"), SAY).await?;
        say(hedged.clone(), request("", b"row-7"), SAY).await?;
    }
    policy.reset_stats();

    let unhedged = latencies(calls, || async {
        say(channel.clone(), request("", b"row-7"), SAY)
            .await
            .map(drop)
    })
    .await?;
    let before = server.requests();
    let latencies = latencies(calls, || async {
        say(hedged.clone(), request("", b"row-7"), SAY)
            .await
            .map(drop)
    })
    .await?;
    let runs = [
        Run {
            label: "without hedging".into(),
            latencies: unhedged,
            extra: None,
        },
        Run {
            label: format!("hedged after {} ms", delay.as_millis()),
            latencies,
            extra: Some(extra(server.requests() - before, calls)),
        },
    ];
    let what = format!(
        "{calls} sequential unary calls per run over one HTTP/2 connection; \
         the server stalls 1 request in {STALL_EVERY} for {} ms",
        STALL.as_millis()
    );
    let stats = policy.stats();
    report::print(&what, &runs, stats.hedges, stats.hedge_wins, server.held());
    Ok(())
}
