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
use hedging_test_server::grpc::{request, say, SAY};
use hedging_test_server::report::{self, args};
use hedging_test_server::{one_in, real_clock, Error, Server};
use tonic::body::Body;
use tower::ServiceBuilder;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(2000, 5)?;

    let server = Server::grpc(one_in(100, Duration::from_millis(200)), real_clock()).await?;
    let channel = server.channel().await?;
    let policy = Policy::builder()
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = ServiceBuilder::new()
        .layer(GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo"]))
        .map_request(|r: http::Request<ReplayBody<Body>>| r.map(Body::new))
        .service(channel.clone());

    let what = format!(
        "{calls} sequential unary calls per run over one HTTP/2 connection; \
         the server stalls 1 request in 100 for 200 ms"
    );
    let label = format!("hedged after {} ms", delay.as_millis());
    let unhedged = ("without hedging", || say_row(channel.clone()));
    let hedged = (label.as_str(), || say_row(hedged.clone()));
    report::compare(&what, calls, &policy, &[&server], unhedged, hedged).await
}

/// One unary call through `service`.
async fn say_row<S>(service: S) -> Result<(), Error>
where
    S: tonic::client::GrpcService<Body>,
    S::Error: Into<Error>,
    S::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <S::ResponseBody as http_body::Body>::Error: Into<Error>,
{
    say(service, request("", b"row-7"), SAY).await?;
    Ok(())
}
