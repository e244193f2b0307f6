//! One `HedgeMiddleware` over two real hyper servers on loopback, a fast one and a slow
//! one, on a policy with keys: each call is keyed by its target, so each host learns a
//! delay of its own and the fast one hedges at its own. Time is virtual: a call's latency
//! is the time the test moves the clock by before the server answers it.

mod common;

use std::time::Duration;

use common::{send, text};
use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_test_server::http::scripted;
use hedging_test_server::keys::{keyed_policy, near, FAST, FIXED, KEYS, QUARTER, SAMPLES, SLOW};
use hedging_test_server::{Server, VirtualClock, SCRIPT};
use reqwest::StatusCode;
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

fn client(hedge: HedgeMiddleware<ManualTimer>) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new())
        .with(hedge)
        .build()
}

/// Two servers stamping arrivals with `clock`: the fast host and the slow one.
async fn hosts(clock: &VirtualClock) -> (Server, Server) {
    let fast = Server::http(scripted(), clock.clock()).await.unwrap();
    let slow = Server::http(scripted(), clock.clock()).await.unwrap();
    (fast, slow)
}

/// The default key of a call to `server`: `("http", "127.0.0.1:port")`.
fn delay_for(policy: &Policy<ManualTimer>, server: &Server) -> Option<Duration> {
    let url = reqwest::Url::parse(&server.url("/")).unwrap();
    let authority = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    policy.delay_for(&("http", authority.as_str()))
}

/// Sends ten GETs through `client` to `server`, one after another, each held by the
/// server until the clock moved by `latency`: ten latencies of `latency`, none hedged.
async fn learn(
    clock: &VirtualClock,
    client: &ClientWithMiddleware,
    server: &Server,
    latency: Duration,
) {
    for i in 0..SAMPLES {
        let path = format!("/learn/{i}");
        let call = send(client.get(server.url(&path)).header(SCRIPT, "hold"));
        server.until_arrived(&path, 1).await;
        clock.advance(latency);
        server.release(&path);
        let (status, _) = text(call.await.unwrap()).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(server.arrivals(&path).len(), 1, "not hedged");
    }
}

/// Sends a GET to `url` (served by `server`) whose original is held, and returns the
/// delay its hedge was armed at, then lets that delay pass: the hedge answers.
async fn hedged_after(
    clock: &VirtualClock,
    client: &ClientWithMiddleware,
    server: &Server,
    url: String,
) -> Duration {
    let call = send(client.get(url).header(SCRIPT, "hold | ok"));
    server.until_arrived("/hot", 1).await;
    let armed = clock.timer().next_deadline().expect("a hedge armed") - clock.now();
    clock.hedge(server, "/hot", 1, armed).await;
    let (status, body) = text(call.await.unwrap()).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "copy 1 of /hot"));
    let seen = server.arrivals("/hot");
    assert_eq!(
        seen[1].at - seen[0].at,
        armed,
        "the hedge went out at its delay"
    );
    armed
}

#[tokio::test]
async fn two_hosts_through_one_client_learn_two_delays() {
    let clock = VirtualClock::new();
    let (fast, slow) = hosts(&clock).await;
    let policy = keyed_policy(&clock, KEYS);
    let client = client(HedgeMiddleware::new(policy.clone()));
    assert_eq!(delay_for(&policy, &fast), Some(FIXED), "no latency yet");

    learn(&clock, &client, &fast, FAST).await;
    learn(&clock, &client, &slow, SLOW).await;
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
    let armed = hedged_after(&clock, &client, &fast, fast.url("/hot")).await;
    assert_eq!(armed, fast_delay.unwrap());
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (21, 1, 1));
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
    let (fast, slow) = hosts(&clock).await;
    let policy = keyed_policy(&clock, KEYS);
    // Both hosts under one key: one estimate, as without keys.
    let hedge = HedgeMiddleware::new(policy.clone()).key_by(|_: &reqwest::Request| "every host");
    let client = client(hedge);

    learn(&clock, &client, &fast, FAST).await;
    learn(&clock, &client, &slow, SLOW).await;
    clock.advance(QUARTER);

    let shared = policy.delay_for("every host").unwrap();
    assert!(
        shared >= SLOW.mul_f64(0.95),
        "the mixture's p95: {shared:?}"
    );
    // No call had the fast host's key: it has the fixed delay (or, without a place free
    // for it, the policy-wide one), not its own.
    let fast_key = delay_for(&policy, &fast).unwrap();
    assert!(fast_key >= SLOW.mul_f64(0.95), "{fast_key:?}");
    assert_eq!(
        hedged_after(&clock, &client, &fast, fast.url("/hot")).await,
        shared
    );
}

#[tokio::test]
async fn a_policy_without_keys_learns_one_delay_for_both_hosts() {
    let clock = VirtualClock::new();
    let (fast, slow) = hosts(&clock).await;
    let policy = keyed_policy(&clock, 0);
    let client = client(HedgeMiddleware::new(policy.clone()));

    learn(&clock, &client, &fast, FAST).await;
    learn(&clock, &client, &slow, SLOW).await;
    clock.advance(QUARTER);

    let one = policy.delay();
    assert!(
        one.unwrap() >= SLOW.mul_f64(0.95),
        "the mixture's p95: {one:?}"
    );
    assert_eq!(delay_for(&policy, &fast), one);
    assert_eq!(delay_for(&policy, &slow), one);
    assert_eq!(
        hedged_after(&clock, &client, &fast, fast.url("/hot")).await,
        one.unwrap()
    );
}
