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
use hedging_test_server::http::{client, full, RequestBody};
use hedging_test_server::report::{self, args};
use hedging_test_server::{one_in, real_clock, Error, Server};
use http::Uri;
use http_body_util::BodyExt;
use tower::{Service, ServiceBuilder, ServiceExt};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(2000, 5)?;

    let server = Server::http(one_in(100, Duration::from_millis(200)), real_clock()).await?;
    let uri = server.uri("/item");
    // Unhedged: the client alone; hedged: the same client behind the layer.
    let plain = client::<RequestBody>();
    let policy = Policy::builder()
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client::<ReplayBody<RequestBody>>());

    let what = format!(
        "{calls} sequential GETs per run over pooled HTTP/1 connections; \
         the server stalls 1 request in 100 for 200 ms"
    );
    let label = format!("hedged after {} ms", delay.as_millis());
    let unhedged = ("without hedging", || get(plain.clone(), &uri));
    let hedged = (label.as_str(), || get(hedged.clone(), &uri));
    report::compare(&what, calls, &policy, &[&server], unhedged, hedged).await
}

/// One GET through `service`, its body read to the end.
async fn get<S>(service: S, uri: &Uri) -> Result<(), Error>
where
    S: Service<http::Request<RequestBody>, Response = http::Response<hyper::body::Incoming>>,
    S::Error: Into<Error>,
{
    let get = http::Request::get(uri.clone()).body(full(""))?;
    let response = service.oneshot(get).await.map_err(Into::into)?;
    response.into_body().collect().await?;
    Ok(())
}
