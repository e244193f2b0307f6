//! What `HedgeMiddleware` counts, in a real `reqwest_middleware` client against the
//! shared loopback server, on the policy's virtual clock: a request the middleware was
//! asked to hedge goes through the race and is one of the policy's `calls`, even when it
//! is sent once; a request outside its scope (a method it does not hedge, a `NoHedge`
//! request) passes on to the rest of the chain as if the middleware were not there, and
//! is counted in `out_of_scope` instead. The rule is `hedging-http-rules`' "Which
//! requests are counted".

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{send_held, text};
use futures::stream;
use hedging_test_server::counts::{
    assert_one_hedged_call_beside, assert_only_out_of_scope, assert_passed_by, one_call,
};
use hedging_test_server::http::scripted;
use hedging_test_server::{Server, VirtualClock, SCRIPT};
use reqwest::Method;
use reqwest_hedging::{HedgeMiddleware, NoHedge};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

const DELAY: Duration = Duration::from_millis(20);

/// A virtual clock, and a scripted server stamping arrivals with it.
async fn server() -> (VirtualClock, Server) {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    (clock, server)
}

/// A client whose requests go through `hedge`.
fn client(hedge: HedgeMiddleware<hedging::timer::ManualTimer>) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(hedge)
        .build()
}

#[tokio::test]
async fn a_post_is_out_of_scope_not_a_call() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()));

    let post = client.post(server.url("/stall/post")).body("order");
    let (_, body) = send_held(&clock, &server, "/stall/post", post).await;
    assert_eq!(
        body, "copy 0 of /stall/post",
        "the stalled original answered"
    );
    let put = client.put(server.url("/stall/put")).body("state");
    let (_, body) = send_held(&clock, &server, "/stall/put", put).await;
    assert_eq!(body, "copy 0 of /stall/put");

    assert_eq!(server.arrivals("/stall/post").len(), 1);
    assert_eq!(server.arrivals("/stall/put").len(), 1);
    assert_only_out_of_scope(&clock, &policy, 2);
}

#[tokio::test]
async fn a_no_hedge_request_is_out_of_scope() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()));

    let request = client
        .get(server.url("/stall/opted-out"))
        .with_extension(NoHedge);
    let path = "/stall/opted-out";
    let (_, body) = send_held(&clock, &server, path, request).await;
    assert_passed_by(&clock, &server, &policy, path, body.as_bytes());
}

#[tokio::test]
async fn a_method_dropped_from_the_list_is_out_of_scope() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()).methods([Method::POST]));

    let get = client.get(server.url("/stall/get"));
    let (_, body) = send_held(&clock, &server, "/stall/get", get).await;
    assert_passed_by(&clock, &server, &policy, "/stall/get", body.as_bytes());
}

#[tokio::test]
async fn an_unreplayable_body_is_a_call_sent_once() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()).methods([Method::POST]));

    let chunks = stream::iter(["st", "re", "am"].map(Ok::<_, std::io::Error>));
    let request = client
        .post(server.url("/stall/stream"))
        .body(reqwest::Body::wrap_stream(chunks));
    let (_, body) = send_held(&clock, &server, "/stall/stream", request).await;
    assert_eq!(
        body, "copy 0 of /stall/stream",
        "no copy raced the stalled original"
    );

    let arrivals = server.arrivals("/stall/stream");
    assert_eq!(arrivals.len(), 1);
    assert_eq!(arrivals[0].body, Bytes::from_static(b"stream"));
    assert_eq!(
        policy.stats(),
        one_call(),
        "a call, sent once, not out of scope"
    );
    assert_eq!(
        clock.sleeps_created(),
        0,
        "a call of one copy arms no timer"
    );
}

#[tokio::test]
async fn hedges_per_call_leaves_out_of_scope_requests_out() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()));

    let get = client.get(server.url("/stall/item"));
    let call = tokio::spawn(get.header(SCRIPT, "hold | ok").send());
    clock.hedge(&server, "/stall/item", 1, DELAY).await;
    assert_eq!(text(call.await.unwrap()).await.1, "copy 1 of /stall/item");
    for path in ["/a", "/b", "/c"] {
        client.post(server.url(path)).send().await.unwrap();
    }

    assert_one_hedged_call_beside(&policy, 3);
}
