//! One `HttpHedgeLayer` over two real hyper servers on loopback, a fast one and a slow
//! one, on a policy with keys: each call is keyed by its target, so each host learns a
//! delay of its own and the fast one hedges at its own. Time is virtual: a call's latency
//! is the time the test moves the clock by before the server answers it.

use std::time::Duration;

use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_http::{HttpHedge, HttpHedgeLayer, ReplayBody};
use hedging_test_server::http::{client, full, scripted, RequestBody};
use hedging_test_server::keys::{keyed_policy, near, FAST, FIXED, KEYS, QUARTER, SAMPLES, SLOW};
use hedging_test_server::{Server, VirtualClock};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use tower::{Layer, ServiceExt};

type Client = hyper_util::client::legacy::Client<HttpConnector, ReplayBody<RequestBody>>;
type Hedged = HttpHedge<Client, ManualTimer>;

/// Two servers stamping arrivals with `clock`: the fast host and the slow one.
async fn hosts(clock: &VirtualClock) -> (Server, Server) {
    let fast = Server::http(scripted(), clock.clock()).await.unwrap();
    let slow = Server::http(scripted(), clock.clock()).await.unwrap();
    (fast, slow)
}

/// The default key of a call to `server`: its `(scheme, authority)`.
fn target(server: &Server) -> (&'static str, String) {
    let uri = server.uri("/");
    ("http", uri.authority().unwrap().to_string())
}

fn delay_for(policy: &Policy<ManualTimer>, server: &Server) -> Option<Duration> {
    let (scheme, authority) = target(server);
    policy.delay_for(&(scheme, authority.as_str()))
}

/// Sends ten GETs through `hedged` to `server`, one after another, each held by the
/// server until the clock moved by `latency`: ten latencies of `latency`, none hedged.
async fn learn(clock: &VirtualClock, hedged: &Hedged, server: &Server, latency: Duration) {
    for i in 0..SAMPLES {
        let path = format!("/learn/{i}");
        let request = server.request(Method::GET, &path, "hold", full(""));
        let call = tokio::spawn(hedged.clone().oneshot(request));
        server.until_arrived(&path, 1).await;
        clock.advance(latency);
        server.release(&path);
        let response = call.await.unwrap().unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.into_body().collect().await.unwrap();
    }
}

/// Sends a GET to `server` whose original is held, and returns the delay its hedge was
/// armed at, then lets that delay pass: the hedge answers.
async fn hedged_after(clock: &VirtualClock, hedged: &Hedged, server: &Server) -> Duration {
    let request = server.request(Method::GET, "/hot", "hold | ok", full(""));
    let call = tokio::spawn(hedged.clone().oneshot(request));
    server.until_arrived("/hot", 1).await;
    let armed = clock.timer().next_deadline().expect("a hedge armed") - clock.now();
    clock.hedge(server, "/hot", 1, armed).await;
    let response = call.await.unwrap().unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, Bytes::from("copy 1 of /hot"), "the hedge answered");
    let seen = server.arrivals("/hot");
    assert_eq!(
        seen[1].at - seen[0].at,
        armed,
        "the hedge went out at its delay"
    );
    armed
}

#[tokio::test]
async fn two_hosts_through_one_layer_learn_two_delays() {
    let clock = VirtualClock::new();
    let (fast, slow) = hosts(&clock).await;
    let policy = keyed_policy(&clock, KEYS);
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(client());
    assert_eq!(delay_for(&policy, &fast), Some(FIXED), "no latency yet");

    learn(&clock, &hedged, &fast, FAST).await;
    learn(&clock, &hedged, &slow, SLOW).await;
    clock.advance(QUARTER);

    let (fast_delay, slow_delay) = (delay_for(&policy, &fast), delay_for(&policy, &slow));
    assert!(
        near(fast_delay, FAST),
        "the fast host's own p95: {fast_delay:?}"
    );
    assert!(
        near(slow_delay, SLOW),
        "the slow host's own p95: {slow_delay:?}"
    );
    // The policy-wide estimate, learnt from both, is the slow host's: the mixture's p95.
    assert!(near(policy.delay(), SLOW), "{:?}", policy.delay());

    // The fast host hedges at its own delay, not at the mixture's.
    assert_eq!(
        hedged_after(&clock, &hedged, &fast).await,
        fast_delay.unwrap()
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (21, 1, 1));
}

#[tokio::test]
async fn key_by_replaces_the_target() {
    let clock = VirtualClock::new();
    let (fast, slow) = hosts(&clock).await;
    let policy = keyed_policy(&clock, KEYS);
    // Both hosts under one key: one estimate, as without keys.
    let hedged = HttpHedgeLayer::new(policy.clone())
        .key_by(|_: &http::request::Parts| "every host")
        .layer(client());

    learn(&clock, &hedged, &fast, FAST).await;
    learn(&clock, &hedged, &slow, SLOW).await;
    clock.advance(QUARTER);

    let shared = policy.delay_for("every host").unwrap();
    assert!(
        shared >= SLOW.mul_f64(0.95),
        "the mixture's p95: {shared:?}"
    );
    // No call had the fast host's key: it has the fixed delay (or, without a place
    // free for it, the policy-wide one), not its own.
    let fast_key = delay_for(&policy, &fast).unwrap();
    assert!(fast_key >= SLOW.mul_f64(0.95), "{fast_key:?}");
    assert_eq!(hedged_after(&clock, &hedged, &fast).await, shared);
}

#[tokio::test]
async fn a_policy_without_keys_learns_one_delay_for_both_hosts() {
    let clock = VirtualClock::new();
    let (fast, slow) = hosts(&clock).await;
    let policy = keyed_policy(&clock, 0);
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(client());

    learn(&clock, &hedged, &fast, FAST).await;
    learn(&clock, &hedged, &slow, SLOW).await;
    clock.advance(QUARTER);

    let one = policy.delay();
    assert!(
        one.unwrap() >= SLOW.mul_f64(0.95),
        "the mixture's p95: {one:?}"
    );
    assert_eq!(delay_for(&policy, &fast), one);
    assert_eq!(delay_for(&policy, &slow), one);
    assert_eq!(hedged_after(&clock, &hedged, &fast).await, one.unwrap());
}
