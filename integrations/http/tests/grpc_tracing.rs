//! Feature `tracing`: a `GrpcHedgeLayer` names each method it passed through unhedged,
//! once, against a real tonic server on loopback.

mod grpc_scene;

use std::fmt;
use std::sync::{Arc, Mutex};

use grpc_scene::{echo, Scene, HEDGE_DELAY};
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::NoHedge;
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
