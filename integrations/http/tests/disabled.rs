//! `set_enabled(false)` on the policy of `HttpHedgeLayer` and `GrpcHedgeLayer`, against a
//! real hyper server on loopback: a request the layer hedges while enabled is sent as it
//! was given, as without the layer (its body not read, the request not copied), and is
//! still one of the policy's `calls`, not `out_of_scope`.

mod common;

use std::time::Duration;

use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::HttpHedgeLayer;
use hedging_test_server::http::{full, scripted, RequestBody};
use hedging_test_server::{Server, VirtualClock};
use http::{Method, StatusCode};
use tower::{Layer, Service};

use common::{recording_client, send, Replayable, Response};
use hedging_test_server::counts::{one_call, CountsClones};

const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// A virtual clock, a scripted server stamping arrivals with it, and a disabled policy of
/// three copies on the clock.
async fn disabled() -> (VirtualClock, Server, Policy<ManualTimer>) {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    let policy = clock.policy(3, HEDGE_DELAY);
    policy.set_enabled(false);
    (clock, server, policy)
}

/// Sends a request to `path` through `hedged` (a disabled layer over a client recording
/// in `replayable`), the server holding it until released and echoing its body, with an
/// extension counting its clones; asserts it went as it was given, as one call.
async fn assert_sent_as_given<S>(
    (clock, server, policy): (VirtualClock, Server, Policy<ManualTimer>),
    hedged: S,
    replayable: &Replayable,
    (method, path): (Method, &str),
) where
    S: Service<http::Request<RequestBody>, Response = Response> + Send + 'static,
    S::Error: std::fmt::Debug,
    S::Future: Send + 'static,
{
    let clones = CountsClones::default();
    let mut request = server.request(method, path, "hold;echo", full("the body"));
    request.extensions_mut().insert(clones.handle());
    let call = send(hedged, request);
    clock.release(&server, path).await;

    assert_eq!(
        call.await.unwrap(),
        (StatusCode::OK, Bytes::from("the body"))
    );
    assert_eq!(server.arrivals(path).len(), 1, "sent once");
    assert_eq!(
        *replayable.lock().unwrap(),
        [false],
        "its body was handed on unread"
    );
    assert_eq!(clones.clones(), 0, "the request was not copied");
    assert_eq!(clock.sleeps_created(), 0, "no timer");
    assert_eq!(policy.stats(), one_call(), "a call, not out of scope");
}

#[tokio::test]
async fn a_disabled_layer_sends_the_request_unbuffered_and_uncopied() {
    let (clock, server, policy) = disabled().await;
    let replayable = Replayable::default();
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(recording_client(&replayable));
    let call = (Method::GET, "/disabled");
    assert_sent_as_given((clock, server, policy), hedged, &replayable, call).await;
}

#[tokio::test]
async fn a_disabled_grpc_layer_sends_the_request_unbuffered_and_uncopied() {
    let (clock, server, policy) = disabled().await;
    let replayable = Replayable::default();
    let hedged = GrpcHedgeLayer::new(policy.clone())
        .methods(["kv.Store"])
        .layer(recording_client(&replayable));
    let call = (Method::POST, "/kv.Store/Get");
    assert_sent_as_given((clock, server, policy), hedged, &replayable, call).await;
}
