//! What `HttpHedgeLayer` counts, against a real hyper server on loopback, on the policy's
//! virtual clock: a request the layer was asked to hedge goes through the race and is
//! one of the policy's `calls`, even when it is sent once; a request outside its scope
//! (a method it does not hedge, a `NoHedge` request) goes straight to the inner service,
//! its body not read, and is counted in `out_of_scope` instead. The rule is
//! `hedging-http-rules`' "Which requests are counted".

mod common;

use std::time::Duration;

use bytes::Bytes;
use hedging_http::{HttpHedgeLayer, NoHedge};
use hedging_test_server::counts::{
    assert_one_hedged_call_beside, assert_only_out_of_scope, assert_passed_by, one_call,
};
use hedging_test_server::http::{client, full, scripted};
use hedging_test_server::{Server, VirtualClock};
use http::{Method, StatusCode};
use tower::Layer;

use common::{recording_client, send, streaming, Replayable};

const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// A virtual clock, and a scripted server stamping arrivals with it.
async fn server() -> (VirtualClock, Server) {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    (clock, server)
}

fn bodies(server: &Server, path: &str) -> Vec<Bytes> {
    server
        .arrivals(path)
        .iter()
        .map(|a| a.body.clone())
        .collect()
}

#[tokio::test]
async fn a_post_is_out_of_scope_not_a_call() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, HEDGE_DELAY);
    let replayable = Replayable::default();
    let client = recording_client(&replayable);
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(client);

    let order = full("one order");
    let call = send(
        hedged,
        server.request(Method::POST, "/orders", "hold;echo", order),
    );
    clock.release(&server, "/orders").await;

    assert_eq!(
        call.await.unwrap(),
        (StatusCode::OK, Bytes::from("one order"))
    );
    assert_eq!(bodies(&server, "/orders"), ["one order"]);
    assert_eq!(
        *replayable.lock().unwrap(),
        [false],
        "its body was not read"
    );
    assert_only_out_of_scope(&clock, &policy, 1);
}

#[tokio::test]
async fn a_no_hedge_request_is_out_of_scope() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, HEDGE_DELAY);
    let replayable = Replayable::default();
    let client = recording_client(&replayable);
    let mut request = server.request(Method::GET, "/once", "hold | ok", full("query"));
    request.extensions_mut().insert(NoHedge);

    let call = send(HttpHedgeLayer::new(policy.clone()).layer(client), request);
    clock.release(&server, "/once").await;

    let body = call.await.unwrap().1;
    assert_passed_by(&clock, &server, &policy, "/once", &body);
    assert_eq!(
        *replayable.lock().unwrap(),
        [false],
        "its body was not read"
    );
}

#[tokio::test]
async fn an_unreplayable_body_is_a_call_sent_once() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, HEDGE_DELAY);
    let layer = HttpHedgeLayer::new(policy.clone()).methods([Method::POST]);

    let body = streaming(&["streamed ", "in ", "three parts"]);
    let call = send(
        layer.layer(client()),
        server.request(Method::POST, "/upload", "echo", body),
    );

    let expected = (StatusCode::OK, Bytes::from("streamed in three parts"));
    assert_eq!(call.await.unwrap(), expected, "every byte");
    assert_eq!(bodies(&server, "/upload"), ["streamed in three parts"]);
    assert_eq!(
        policy.stats(),
        one_call(),
        "a call, sent once, not out of scope"
    );
}

#[tokio::test]
async fn a_body_over_the_cap_is_a_call_sent_once() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, HEDGE_DELAY);
    let layer = HttpHedgeLayer::new(policy.clone())
        .methods([Method::PUT])
        .max_replay_bytes(8);

    let body = full("more than eight bytes");
    let call = send(
        layer.layer(client()),
        server.request(Method::PUT, "/big", "hold;echo", body),
    );
    clock.release(&server, "/big").await;

    let expected = (StatusCode::OK, Bytes::from("more than eight bytes"));
    assert_eq!(call.await.unwrap(), expected);
    assert_eq!(server.arrivals("/big").len(), 1);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.out_of_scope), (1, 0, 0));
}

#[tokio::test]
async fn a_policy_of_one_copy_makes_calls_sent_once() {
    let (clock, server) = server().await;
    let policy = clock.policy(1, HEDGE_DELAY);
    let replayable = Replayable::default();
    let client = recording_client(&replayable);

    let request = server.request(Method::GET, "/one", "hold | ok", full("query"));
    let call = send(HttpHedgeLayer::new(policy.clone()).layer(client), request);
    clock.release(&server, "/one").await;

    assert_eq!(call.await.unwrap().1, "copy 0 of /one");
    assert_eq!(
        *replayable.lock().unwrap(),
        [false],
        "no copy: nothing read"
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.out_of_scope), (1, 0, 0));
}

#[tokio::test]
async fn hedges_per_call_leaves_out_of_scope_requests_out() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, HEDGE_DELAY);
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(client());

    let get = send(
        hedged.clone(),
        server.request(Method::GET, "/item", "hold | ok", full("")),
    );
    clock.hedge(&server, "/item", 1, HEDGE_DELAY).await;
    assert_eq!(get.await.unwrap().1, "copy 1 of /item");
    for path in ["/a", "/b", "/c"] {
        let post = send(
            hedged.clone(),
            server.request(Method::POST, path, "", full("")),
        );
        post.await.unwrap();
    }

    assert_one_hedged_call_beside(&policy, 3);
}
