//! Hedged GETs through a hyper-util client with `HttpHedgeLayer`, against a loopback
//! HTTP/1 server (hyper) that stalls 1 request in 100 for 200 ms. Prints the latency
//! table without and with hedging.
//!
//! ```sh
//! cargo run --release -p hedging-http --example hyper [-- CALLS DELAY_MS]
//! ```

mod loopback;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::HttpHedgeLayer;
use http::{Method, Uri};
use http_body_util::BodyExt;
use loopback::grpc::Error;
use loopback::hyper::{client, full, plain_client, request, Answer, Server};
use loopback::{args, print_table, Run};
use tower::{Service, ServiceBuilder, ServiceExt};

const STALL: Duration = Duration::from_millis(200);
const STALL_EVERY: u64 = 100;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(2000, 5)?;

    let served = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&served);
    let server = Server::start(Arc::new(move |_, _| {
        let n = counter.fetch_add(1, Relaxed);
        Answer {
            stall: if n % STALL_EVERY == STALL_EVERY - 1 {
                STALL
            } else {
                Duration::ZERO
            },
            ..Answer::default()
        }
    }))
    .await?;
    let uri = server.uri("/item");
    // Unhedged: the client alone; hedged: the same client behind the layer.
    let plain = plain_client();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client());

    // Warm up: open pooled connections.
    get_many(plain.clone(), &uri, 20).await?;
    get_many(hedged.clone(), &uri, 20).await?;

    println!(
        "{calls} sequential GETs per run over pooled HTTP/1 connections; \
         the server stalls 1 request in {STALL_EVERY} for {} ms",
        STALL.as_millis()
    );
    let before = served.load(Relaxed);
    let latencies = get_many(plain, &uri, calls).await?;
    let plain = Run::new(
        "without hedging",
        latencies,
        served.load(Relaxed) - before - calls as u64,
    );

    policy.reset_stats();
    let before = served.load(Relaxed);
    let latencies = get_many(hedged, &uri, calls).await?;
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

/// `calls` GETs one after another, each body read to the end; their latencies.
async fn get_many<S>(mut service: S, uri: &Uri, calls: usize) -> Result<Vec<Duration>, Error>
where
    S: Service<
        http::Request<loopback::hyper::RequestBody>,
        Response = http::Response<hyper::body::Incoming>,
    >,
    S::Error: Into<Error>,
{
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let get = request(Method::GET, uri.clone(), full(""));
        let response = service
            .ready()
            .await
            .map_err(Into::into)?
            .call(get)
            .await
            .map_err(Into::into)?;
        response.into_body().collect().await?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}
