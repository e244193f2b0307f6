//! Hedged GETs through a hyper-util client with `HttpHedgeLayer`, against a loopback
//! HTTP/1 server (hyper) that stalls 1 request in 100 for 200 ms. Prints the latency
//! table without and with hedging.
//!
//! ```sh
//! cargo run --release -p hedging-http --example hyper [-- CALLS DELAY_MS]
//! ```

use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::{HttpHedgeLayer, ReplayBody};
use hedging_test_server::http::{client, full, RequestBody, Server};
use hedging_test_server::report::{self, args, extra, latencies, Run};
use hedging_test_server::{one_in, Error};
use http::Uri;
use http_body_util::BodyExt;
use tower::{Service, ServiceBuilder, ServiceExt};

const STALL: Duration = Duration::from_millis(200);
const STALL_EVERY: u64 = 100;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(2000, 5)?;

    let server = Server::start(one_in(STALL_EVERY, STALL)).await?;
    let uri = server.uri("/item");
    // Unhedged: the client alone; hedged: the same client behind the layer.
    let plain = client::<RequestBody>();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client::<ReplayBody<RequestBody>>());

    // Warm up: open pooled connections.
    get_many(plain.clone(), &uri, 20).await?;
    get_many(hedged.clone(), &uri, 20).await?;
    policy.reset_stats();

    let unhedged = get_many(plain, &uri, calls).await?;
    let before = server.requests();
    let latencies = get_many(hedged, &uri, calls).await?;
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
        "{calls} sequential GETs per run over pooled HTTP/1 connections; \
         the server stalls 1 request in {STALL_EVERY} for {} ms",
        STALL.as_millis()
    );
    let stats = policy.stats();
    report::print(&what, &runs, stats.hedges, stats.hedge_wins, server.held());
    Ok(())
}

/// `calls` GETs one after another, each body read to the end; their latencies, sorted.
async fn get_many<S>(service: S, uri: &Uri, calls: usize) -> Result<Vec<Duration>, Error>
where
    S: Service<http::Request<RequestBody>, Response = http::Response<hyper::body::Incoming>>
        + Clone,
    S::Error: Into<Error>,
{
    latencies(calls, || {
        let get = http::Request::get(uri.clone()).body(full(""));
        let service = service.clone();
        async move {
            let response = service.oneshot(get?).await.map_err(Into::into)?;
            response.into_body().collect().await?;
            Ok::<_, Error>(())
        }
    })
    .await
}
