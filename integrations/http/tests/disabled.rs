//! `set_enabled(false)` on the policy of `HttpHedgeLayer` and `GrpcHedgeLayer`, against a
//! real hyper server on loopback: a request the layer hedges while enabled is sent as it
//! was given, as without the layer (its body not read, the request not copied), and is
//! still one of the policy's `calls`, not `out_of_scope`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging::{Policy, Stats};
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::HttpHedgeLayer;
use hedging_test_server::http::{full, scripted, RequestBody};
use hedging_test_server::{Server, VirtualClock};
use http::{Method, StatusCode};
use tower::Layer;

use common::{recording_client, send, Replayable};

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

/// A request extension that counts its clones: a request copied is one more.
#[derive(Debug)]
struct CountsClones(Arc<AtomicUsize>);

impl Clone for CountsClones {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, SeqCst);
        CountsClones(Arc::clone(&self.0))
    }
}

/// A request to `path` whose copies the server holds until released, echoing its body,
/// with an extension counting its clones in `clones`.
fn held_request(
    server: &Server,
    method: Method,
    path: &str,
    clones: &Arc<AtomicUsize>,
) -> http::Request<RequestBody> {
    let mut request = server.request(method, path, "hold;echo", full("the body"));
    request
        .extensions_mut()
        .insert(CountsClones(Arc::clone(clones)));
    request
}

/// What a call sent once and answered counts: one call, one win, nothing else.
fn one_call() -> Stats {
    Stats {
        calls: 1,
        wins: 1,
        ..Stats::default()
    }
}

#[tokio::test]
async fn a_disabled_layer_sends_the_request_unbuffered_and_uncopied() {
    let (clock, server, policy) = disabled().await;
    let replayable = Replayable::default();
    let clones = Arc::new(AtomicUsize::new(0));
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(recording_client(&replayable));

    let request = held_request(&server, Method::GET, "/disabled", &clones);
    let call = send(hedged, request);
    clock.release(&server, "/disabled").await;

    assert_eq!(
        call.await.unwrap(),
        (StatusCode::OK, Bytes::from("the body"))
    );
    assert_eq!(server.arrivals("/disabled").len(), 1, "sent once");
    assert_eq!(
        *replayable.lock().unwrap(),
        [false],
        "its body was handed on unread"
    );
    assert_eq!(clones.load(SeqCst), 0, "the request was not copied");
    assert_eq!(clock.sleeps_created(), 0, "no timer");
    assert_eq!(policy.stats(), one_call(), "a call, not out of scope");
}

#[tokio::test]
async fn a_disabled_grpc_layer_sends_the_request_unbuffered_and_uncopied() {
    let (clock, server, policy) = disabled().await;
    let replayable = Replayable::default();
    let clones = Arc::new(AtomicUsize::new(0));
    let hedged = GrpcHedgeLayer::new(policy.clone())
        .methods(["kv.Store"])
        .layer(recording_client(&replayable));

    let request = held_request(&server, Method::POST, "/kv.Store/Get", &clones);
    let call = send(hedged, request);
    clock.release(&server, "/kv.Store/Get").await;

    assert_eq!(
        call.await.unwrap(),
        (StatusCode::OK, Bytes::from("the body"))
    );
    assert_eq!(server.arrivals("/kv.Store/Get").len(), 1, "sent once");
    assert_eq!(
        *replayable.lock().unwrap(),
        [false],
        "its body was handed on unread"
    );
    assert_eq!(clones.load(SeqCst), 0, "the request was not copied");
    assert_eq!(clock.sleeps_created(), 0, "no timer");
    assert_eq!(policy.stats(), one_call(), "a call, not out of scope");
}
