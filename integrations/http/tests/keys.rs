//! One `HttpHedgeLayer` over two real hyper servers on loopback, a fast one and a slow
//! one, on a policy with keys: each call is keyed by its target, so each host learns a
//! delay of its own and the fast one hedges at its own. Time is virtual: a call's latency
//! is the time the test moves the clock by before the server answers it. The scenarios
//! are the test server's (`hedging_test_server::keys`), shared with `reqwest-hedging`.

use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging_http::{HttpHedge, HttpHedgeLayer, ReplayBody};
use hedging_test_server::http::{client, full, RequestBody};
use hedging_test_server::keys::{self, keyed_policy, SendGet, KEYS};
use hedging_test_server::{Server, VirtualClock};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::task::JoinHandle;
use tower::{Layer, ServiceExt};

type Client = hyper_util::client::legacy::Client<HttpConnector, ReplayBody<RequestBody>>;

/// The layer over a hyper client, as the shared scenarios send through it.
struct Layered(HttpHedge<Client, ManualTimer>);

impl SendGet for Layered {
    fn get(&self, server: &Server, path: &str, script: &str) -> JoinHandle<(StatusCode, String)> {
        let request = server.request(Method::GET, path, script, full(""));
        let call = tokio::spawn(self.0.clone().oneshot(request));
        tokio::spawn(async move {
            let response = call.await.unwrap().unwrap();
            let status = response.status();
            let body: Bytes = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(body.to_vec()).unwrap())
        })
    }
}

#[tokio::test]
async fn two_hosts_through_one_layer_learn_two_delays() {
    let clock = VirtualClock::new();
    let policy = keyed_policy(&clock, KEYS);
    let layered = Layered(HttpHedgeLayer::new(policy.clone()).layer(client()));
    keys::two_hosts_learn_two_delays(&clock, &policy, &layered).await;
}

#[tokio::test]
async fn key_by_replaces_the_target() {
    let clock = VirtualClock::new();
    let policy = keyed_policy(&clock, KEYS);
    // Both hosts under one key: one estimate, as without keys.
    let layer = HttpHedgeLayer::new(policy.clone()).key_by(|_: &http::request::Parts| "every host");
    keys::key_by_replaces_the_target(&clock, &policy, &Layered(layer.layer(client()))).await;
}

#[tokio::test]
async fn a_policy_without_keys_learns_one_delay_for_both_hosts() {
    let clock = VirtualClock::new();
    let policy = keyed_policy(&clock, 0);
    let layered = Layered(HttpHedgeLayer::new(policy.clone()).layer(client()));
    keys::one_delay_without_keys(&clock, &policy, &layered).await;
}
