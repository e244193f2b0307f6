//! Hedged unary gRPC calls through a tonic `Channel` with `GrpcHedgeLayer`, against a
//! loopback tonic server that stalls 1 request in 100 for 200 ms. Prints the latency
//! table without and with hedging.
//!
//! ```sh
//! cargo run --release -p hedging-http --example grpc [-- CALLS DELAY_MS]
//! ```

mod loopback;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::ReplayBody;
use loopback::grpc::{say, Action, EchoRequest, Error, Server, SAY};
use loopback::{args, print_table, Run};
use tonic::body::Body;
use tower::ServiceBuilder;

const STALL: Duration = Duration::from_millis(200);
const STALL_EVERY: u64 = 100;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(2000, 5)?;

    let served = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&served);
    let server = Server::start(Arc::new(move |_: &EchoRequest, _| {
        let n = counter.fetch_add(1, Relaxed);
        Action {
            stall: if n % STALL_EVERY == STALL_EVERY - 1 {
                STALL
            } else {
                Duration::ZERO
            },
            ..Action::default()
        }
    }))
    .await?;
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
        say(channel.clone(), request(), SAY).await?;
        say(hedged.clone(), request(), SAY).await?;
    }

    println!(
        "{calls} sequential unary calls per run over one HTTP/2 connection; \
         the server stalls 1 request in {STALL_EVERY} for {} ms",
        STALL.as_millis()
    );
    let before = served.load(Relaxed);
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        say(channel.clone(), request(), SAY).await?;
        latencies.push(started.elapsed());
    }
    let plain = Run::new(
        "without hedging",
        latencies,
        served.load(Relaxed) - before - calls as u64,
    );

    policy.reset_stats();
    let before = served.load(Relaxed);
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        say(hedged.clone(), request(), SAY).await?;
        latencies.push(started.elapsed());
    }
    let extra = served.load(Relaxed) - before - calls as u64;
    let name = format!("hedged after {} ms", delay.as_millis());
    print_table(&[plain, Run::new(name, latencies, extra)]);

    let stats = policy.stats();
    println!(
        "hedges sent: {}, won by a hedge: {} (a hedge dropped before it reached the server is not an extra request)",
        stats.hedges, stats.hedge_wins
    );
    Ok(())
}

fn request() -> tonic::Request<EchoRequest> {
    tonic::Request::new(EchoRequest {
        script: String::new(),
        payload: b"row-7".to_vec(),
    })
}
