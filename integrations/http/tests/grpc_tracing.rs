//! Feature `tracing`: a `GrpcHedgeLayer` names each method it passed through unhedged,
//! once, and an `HttpHedgeLayer` in front of a gRPC channel says it hedges nothing, against
//! a real tonic server on loopback.

mod grpc_scene;

use std::fmt;
use std::sync::{Arc, Mutex};

use grpc_scene::{echo, Scene, HEDGE_DELAY};
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::{NoHedge, ReplayBody};
use hedging_test_server::grpc::{OTHER, SAY};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Records this crate's events as `LEVEL message field=value ...`; the server's and the
/// transport's are not its to check.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.0 += &format!(" {value:?}"), // a message's Debug is its text
            name => self.0 += &format!(" {name}={value:?}"),
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target().starts_with("hedging_http")
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line(event.metadata().level().to_string());
        event.record(&mut line);
        self.0.lock().unwrap().push(line.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[tokio::test]
async fn each_method_outside_the_layers_scope_is_named_once() {
    let recorder = Recorder::default();
    // The test's runtime has one thread: every call is made on it.
    let _recording = tracing::subscriber::set_default(recorder.clone());
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = GrpcHedgeLayer::new(scene.policy.clone()).methods(["test.Echo/Say"]);

    // Each call its own script, so the server keys them apart.
    for script in ["ok", "ok; ok"] {
        scene
            .call(layer.clone(), echo(script), OTHER)
            .await
            .unwrap()
            .unwrap();
    }
    let mut opted_out = echo("ok; ok; ok");
    opted_out.extensions_mut().insert(NoHedge);
    scene
        .call(layer.clone(), opted_out, SAY)
        .await
        .unwrap()
        .unwrap();

    let message = "gRPC method outside the layer's scope: its calls are sent once, unhedged, \
                   and counted in out_of_scope";
    let recorded = recorder.0.lock().unwrap().clone();
    assert_eq!(
        recorded,
        [
            format!(
                "{} {message} method=\"/test.Echo/Other\" reason=\"no name the layer was \
                 given matches the method\"",
                Level::INFO
            ),
            format!(
                "{} {message} method=\"/test.Echo/Say\" reason=\"the request carries NoHedge\"",
                Level::INFO
            ),
        ]
    );
    assert_eq!(
        scene.policy.stats().out_of_scope,
        3,
        "every call is counted"
    );
}

/// A layer from a service config whose only name is misspelt: `Say` is `Sai`.
#[cfg(feature = "service-config")]
fn misspelt_config(scene: &Scene) -> GrpcHedgeLayer<hedging::timer::ManualTimer> {
    let config = hedging_http::grpc::ServiceConfig::from_json(
        r#"{"methodConfig": [{"name": [{"service": "test.Echo", "method": "Sai"}],
            "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.02s"}}]}"#,
    )
    .unwrap();
    GrpcHedgeLayer::from_service_config(&config, scene.clock.timer())
}

#[cfg(feature = "service-config")]
#[tokio::test]
async fn a_method_the_service_config_does_not_match_is_a_warning_the_first_time() {
    let recorder = Recorder::default();
    let _recording = tracing::subscriber::set_default(recorder.clone());
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = misspelt_config(&scene);

    for (script, path) in [("ok", SAY), ("ok; ok", SAY), ("ok; ok; ok", OTHER)] {
        let reply = scene.call(layer.clone(), echo(script), path);
        reply.await.unwrap().unwrap();
    }

    let warning = |method: &str| {
        format!(
            "{} gRPC method that no name of the service config matches: its calls are sent \
             once, unhedged, and counted in out_of_scope (GrpcHedgeLayer::unmatched lists such \
             methods; is a name misspelt?) policy=\"out of scope\" method=\"{method}\"",
            Level::WARN
        )
    };
    let recorded = recorder.0.lock().unwrap().clone();
    assert_eq!(
        recorded,
        [warning("/test.Echo/Say"), warning("/test.Echo/Other")],
        "once per method, however often it is called"
    );
}

#[tokio::test]
async fn a_grpc_call_through_http_hedge_layer_is_a_warning_naming_grpc_hedge_layer() {
    let recorder = Recorder::default();
    let _recording = tracing::subscriber::set_default(recorder.clone());
    let scene = Scene::new(2, HEDGE_DELAY).await;
    // The mistake: the HTTP layer in front of a tonic Channel.
    let layer = hedging_http::HttpHedgeLayer::new(scene.policy.clone());
    for (script, path) in [("ok", SAY), ("ok; ok", OTHER), ("ok; ok; ok", SAY)] {
        let stack = tower::ServiceBuilder::new()
            .layer(layer.clone())
            .map_request(|request: http::Request<ReplayBody<tonic::body::Body>>| {
                request.map(tonic::body::Body::new)
            })
            .service(scene.channel.clone());
        hedging_test_server::grpc::say(stack, echo(script), path)
            .await
            .unwrap();
    }

    let recorded = recorder.0.lock().unwrap().clone();
    assert_eq!(
        recorded,
        [format!(
            "{} gRPC call through HttpHedgeLayer: gRPC calls are POSTs, which it never hedges, \
             so every call is sent once; hedge gRPC with hedging_http::grpc::GrpcHedgeLayer \
             method=\"/test.Echo/Say\"",
            Level::WARN
        )],
        "once per layer, its clones included"
    );
    let stats = scene.policy.stats();
    assert_eq!((stats.calls, stats.out_of_scope), (0, 3), "nothing hedged");
}
