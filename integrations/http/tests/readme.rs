//! The README's snippets past its quick start (that one is `examples/quick_start_http.rs`),
//! each in a test that compiles and runs it with what it needs around it. `.ci/packages`
//! checks that each snippet stands here line for line, so each function keeps its
//! snippet's layout (`rustfmt::skip`).
#![cfg(all(feature = "tonic", feature = "service-config"))]

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::grpc::ServiceConfig;
use hedging_http::ReplayBody;
use http_body_util::Empty;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tonic::transport::{Channel, Endpoint};
use tower::{Layer, ServiceBuilder, ServiceExt};

fn policy() -> Policy<TokioTimer> {
    Policy::builder()
        .delay(Duration::from_millis(20))
        .timer(TokioTimer::new())
        .build()
}

/// A stand-in for a tonic-generated client.
struct CatalogClient<T>(T);

impl<T> CatalogClient<T> {
    fn new(channel: T) -> Self {
        CatalogClient(channel)
    }

    fn channel(&mut self) -> &mut T {
        &mut self.0
    }
}

fn channel(address: &'static str) -> Channel {
    Endpoint::from_static(address).connect_lazy()
}

#[rustfmt::skip]
#[tokio::test]
async fn grpc_for_tonic() {
    let policy = policy();
    use hedging_http::grpc::GrpcHedgeLayer;

    let channel = ServiceBuilder::new()
        .layer(GrpcHedgeLayer::new(policy).methods(["shop.Catalog", "shop.Cart/Get"]).for_tonic())
        .service(Endpoint::from_static("http://catalog.internal:50051").connect_lazy());
    let mut catalog = CatalogClient::new(channel); // any tonic-generated client

    let _ = catalog.channel();
}

#[rustfmt::skip]
#[tokio::test]
async fn is_hedging_on() {
    let policy = policy();
    let service = tower::service_fn(|_: http::Request<ReplayBody<Empty<Bytes>>>| async {
        Ok::<_, Infallible>(http::Response::new(()))
    });
    let hedged = hedging_http::HttpHedgeLayer::new(policy.clone()).layer(service);
    let request = http::Request::get("http://catalog.internal/items").body(Empty::new());
    hedged.oneshot(request.unwrap()).await.unwrap();

    let stats = policy.stats();
    assert!(stats.calls > 0, "no call hedged; {} passed through unhedged", stats.out_of_scope);
}

/// `service_config.json` of the README, in a folder of its own made the working
/// directory, as the snippet reads it from there.
fn in_a_folder_with_a_service_config() {
    let folder = std::env::temp_dir().join(format!("hedging-http-readme-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let json = r#"{"methodConfig": [{"name": [{"service": "shop.Cart", "method": "Get"}],
        "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.02s"}}]}"#;
    std::fs::write(folder.join("service_config.json"), json).unwrap();
    std::env::set_current_dir(&folder).unwrap();
}

#[rustfmt::skip]
#[test]
fn service_config() -> Result<(), Box<dyn std::error::Error>> {
    in_a_folder_with_a_service_config();
    use hedging_http::grpc::GrpcHedgeLayer;
    let config = ServiceConfig::from_json(&std::fs::read_to_string("service_config.json")?)?;
    let layer = GrpcHedgeLayer::from_service_config(&config, TokioTimer::new());
    // layer.policy_for("shop.Cart/Get") is the policy of that method: its stats, its budget.

    assert_eq!(layer.policy_for("shop.Cart/Get").unwrap().max_copies(), 3);
    Ok(())
}

#[rustfmt::skip]
#[tokio::test]
async fn copies_to_replicas() -> Result<(), Box<dyn std::error::Error>> {
    let policy = policy();
    let (channel_a, channel_b, channel_c) =
        (channel("http://10.0.0.1:50051"), channel("http://10.0.0.2:50051"), channel("http://10.0.0.3:50051"));
    let client = Client::builder(TokioExecutor::new()).build_http::<ReplayBody<Empty<Bytes>>>();
    use hedging_http::hedging::tower::Replicas;
    use hedging_http::{grpc::GrpcHedgeLayer, HttpHedgeLayer, Origin};

    // gRPC: one tonic Channel per replica.
    let channels = Replicas::new([channel_a, channel_b, channel_c]);
    let grpc = GrpcHedgeLayer::new(policy.clone()).methods(["shop.Catalog"]).for_tonic().layer(channels);
    // HTTP: one Origin of a hyper-util client per address; each request keeps its path and query.
    let http = HttpHedgeLayer::new(policy)
        .layer(Origin::replicas(client, ["http://10.0.0.1:8080", "http://10.0.0.2:8080"])?);

    let _ = (grpc, http);
    Ok(())
}
