//! One `HedgeMiddleware` over two real hyper servers on loopback, a fast one and a slow
//! one, on a policy with keys: each call is keyed by its target, so each host learns a
//! delay of its own and the fast one hedges at its own. Time is virtual: a call's latency
//! is the time the test moves the clock by before the server answers it. The scenarios
//! of two hosts are the test server's (`hedging_test_server::keys`), shared with
//! `hedging-http`; replicas are the middleware's own.

mod common;

use common::{send, text};
use hedging::timer::ManualTimer;
use hedging_test_server::keys::{
    self, delay_for, hosts, keyed_policy, near, SendGet, FAST, FIXED, KEYS, QUARTER, SAMPLES,
};
use hedging_test_server::{Server, VirtualClock, SCRIPT};
use reqwest::StatusCode;
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::task::JoinHandle;

fn client(hedge: HedgeMiddleware<ManualTimer>) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(hedge)
        .build()
}

/// The middleware's client, as the shared scenarios send through it.
struct Through(ClientWithMiddleware);

impl SendGet for Through {
    fn get(&self, server: &Server, path: &str, script: &str) -> JoinHandle<(StatusCode, String)> {
        let call = send(self.0.get(server.url(path)).header(SCRIPT, script));
        tokio::spawn(async move { text(call.await.unwrap()).await })
    }
}

#[tokio::test]
async fn two_hosts_through_one_client_learn_two_delays() {
    let clock = VirtualClock::new();
    let policy = keyed_policy(&clock, KEYS);
    let through = Through(client(HedgeMiddleware::new(policy.clone())));
    keys::two_hosts_learn_two_delays(&clock, &policy, &through).await;
}

#[tokio::test]
async fn replicas_of_one_target_share_its_delay() {
    let clock = VirtualClock::new();
    let (one, other) = hosts(&clock).await;
    let policy = keyed_policy(&clock, KEYS);
    // Every call names `catalog`; its copies go to the two replicas in turn.
    let hedge = HedgeMiddleware::new(policy.clone())
        .replicas([one.origin(), other.origin()])
        .unwrap();
    let client = client(hedge);
    for i in 0..SAMPLES {
        let path = format!("/learn/{i}");
        let call = send(
            client
                .get(format!("http://catalog{path}"))
                .header(SCRIPT, "hold"),
        );
        // Call i goes to replica i mod 2.
        let replica = if i % 2 == 0 { &one } else { &other };
        replica.until_arrived(&path, 1).await;
        clock.advance(FAST);
        replica.release(&path);
        assert_eq!(text(call.await.unwrap()).await.0, StatusCode::OK);
    }
    clock.advance(QUARTER);

    let catalog = policy.delay_for(&("http", "catalog"));
    assert!(near(catalog, FAST), "the target's own p95: {catalog:?}");
    // No call was keyed by a replica's own address.
    assert_eq!(delay_for(&policy, &one), Some(FIXED));
    assert_eq!(delay_for(&policy, &other), Some(FIXED));

    // The next call starts at the first replica; its hedge goes to the other, at the
    // target's delay.
    let call = send(client.get("http://catalog/hot").header(SCRIPT, "hold"));
    one.until_arrived("/hot", 1).await;
    let armed = clock.timer().next_deadline().expect("a hedge armed") - clock.now();
    assert_eq!(armed, catalog.unwrap());
    clock.advance(armed);
    other.until_arrived("/hot", 1).await;
    other.release("/hot");
    let (status, body) = text(call.await.unwrap()).await;
    // The other replica's first request of `/hot`: the hedge.
    assert_eq!((status, body.as_str()), (StatusCode::OK, "copy 0 of /hot"));
    assert_eq!(
        other.arrivals("/hot")[0].at - one.arrivals("/hot")[0].at,
        armed
    );
}

#[tokio::test]
async fn key_by_replaces_the_target() {
    let clock = VirtualClock::new();
    let policy = keyed_policy(&clock, KEYS);
    // Both hosts under one key: one estimate, as without keys.
    let hedge = HedgeMiddleware::new(policy.clone()).key_by(|_: &reqwest::Request| "every host");
    keys::key_by_replaces_the_target(&clock, &policy, &Through(client(hedge))).await;
}

#[tokio::test]
async fn a_policy_without_keys_learns_one_delay_for_both_hosts() {
    let clock = VirtualClock::new();
    let policy = keyed_policy(&clock, 0);
    let through = Through(client(HedgeMiddleware::new(policy.clone())));
    keys::one_delay_without_keys(&clock, &policy, &through).await;
}
