//! What the integrations' keys tests share: a fast backend's and a slow one's latency,
//! a policy that learns each key's p95 from its first ten latencies, and the scenarios
//! of two hosts through one layer that `hedging-http` and `reqwest-hedging` both run
//! ([`SendGet`] is what each sends through).

use std::time::Duration;

use hedging::timer::ManualTimer;
use hedging::Policy;
use http::StatusCode;
use tokio::task::JoinHandle;

use crate::http::scripted;
use crate::{Server, VirtualClock};

/// The fast backend's latency.
pub const FAST: Duration = Duration::from_millis(2);
/// The slow backend's latency.
pub const SLOW: Duration = Duration::from_millis(40);
/// The fixed delay, a key's until its window holds enough latencies: far above both.
pub const FIXED: Duration = Duration::from_secs(1);
/// The latencies a key's window holds before its own estimate is used.
pub const SAMPLES: u32 = 10;
/// Places for keys. Loopback ports, and so the keys that name them, change from run to
/// run: with 256 places, a second key finds both its places held by the first once in
/// 65,536.
pub const KEYS: usize = 256;
/// A quarter of the default adaptive window: each estimate is recomputed when one ends.
pub const QUARTER: Duration = Duration::from_millis(2500);

/// A policy of two copies learning the p95 of each of up to `keys` keys (none: `0`)
/// from its first [`SAMPLES`] latencies, [`FIXED`] until then, on `clock`.
pub fn keyed_policy(clock: &VirtualClock, keys: usize) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(FIXED)
        .adaptive_delay(0.95)
        .adaptive_min_samples(SAMPLES)
        .adaptive_keys(keys)
        .timer(clock.timer())
        .build()
}

/// Whether `delay` is within 5% of `latency`: a p95 learnt from latencies of `latency`.
pub fn near(delay: Option<Duration>, latency: Duration) -> bool {
    let delay = delay.expect("a delay").as_secs_f64();
    (delay / latency.as_secs_f64() - 1.0).abs() < 0.05
}

/// The integration under test, as the shared key scenarios send through it: a GET of
/// `path` on `server`, answering as `script` says, sent on a task of its own; the task
/// gives the answer's status and body.
pub trait SendGet {
    /// Sends the GET.
    fn get(&self, server: &Server, path: &str, script: &str) -> JoinHandle<(StatusCode, String)>;
}

/// Two servers stamping arrivals with `clock`: the fast host and the slow one.
pub async fn hosts(clock: &VirtualClock) -> (Server, Server) {
    let fast = Server::http(scripted(), clock.clock()).await.unwrap();
    let slow = Server::http(scripted(), clock.clock()).await.unwrap();
    (fast, slow)
}

/// The delay `policy` has now for the default key of a call to `server`, its target
/// `("http", "127.0.0.1:port")`.
pub fn delay_for(policy: &Policy<ManualTimer>, server: &Server) -> Option<Duration> {
    let uri = server.uri("/");
    let authority = uri.authority().expect("an authority").as_str();
    policy.delay_for(&("http", authority))
}

/// Sends ten GETs through `via` to `server`, one after another, each held by the server
/// until the clock moved by `latency`: ten latencies of `latency`, none hedged.
pub async fn learn(clock: &VirtualClock, via: &impl SendGet, server: &Server, latency: Duration) {
    for i in 0..SAMPLES {
        let path = format!("/learn/{i}");
        let call = via.get(server, &path, "hold");
        server.until_arrived(&path, 1).await;
        clock.advance(latency);
        server.release(&path);
        let (status, _) = call.await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(server.arrivals(&path).len(), 1, "not hedged");
    }
}

/// Ten latencies of [`FAST`] from `fast`, then ten of [`SLOW`] from `slow`, and a
/// quarter window for the estimates to turn.
async fn learn_both(clock: &VirtualClock, via: &impl SendGet, fast: &Server, slow: &Server) {
    learn(clock, via, fast, FAST).await;
    learn(clock, via, slow, SLOW).await;
    clock.advance(QUARTER);
}

/// Sends a GET to `server` whose original is held, and returns the delay its hedge was
/// armed at, then lets that delay pass: the hedge answers.
pub async fn hedged_after(clock: &VirtualClock, via: &impl SendGet, server: &Server) -> Duration {
    let call = via.get(server, "/hot", "hold | ok");
    server.until_arrived("/hot", 1).await;
    let armed = clock.timer().next_deadline().expect("a hedge armed") - clock.now();
    clock.hedge(server, "/hot", 1, armed).await;
    let (status, body) = call.await.unwrap();
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, "copy 1 of /hot"),
        "the hedge answered"
    );
    let seen = server.arrivals("/hot");
    assert_eq!(
        seen[1].at - seen[0].at,
        armed,
        "the hedge went out at its delay"
    );
    armed
}

/// Two hosts through one layer on `policy` (with keys, on `clock`): each learns a delay of
/// its own, and the fast one hedges at its own, not at the mixture's.
pub async fn two_hosts_learn_two_delays(
    clock: &VirtualClock,
    policy: &Policy<ManualTimer>,
    via: &impl SendGet,
) {
    let (fast, slow) = hosts(clock).await;
    assert_eq!(delay_for(policy, &fast), Some(FIXED), "no latency yet");

    learn_both(clock, via, &fast, &slow).await;

    let (fast_delay, slow_delay) = (delay_for(policy, &fast), delay_for(policy, &slow));
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
    assert_eq!(hedged_after(clock, via, &fast).await, fast_delay.unwrap());
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (21, 1, 1));
}

/// Two hosts through one layer whose `key_by` gives every call the key `"every host"`:
/// one estimate, as without keys, and the fast host hedges at it.
pub async fn key_by_replaces_the_target(
    clock: &VirtualClock,
    policy: &Policy<ManualTimer>,
    via: &impl SendGet,
) {
    let (fast, slow) = hosts(clock).await;
    learn_both(clock, via, &fast, &slow).await;

    let shared = policy.delay_for("every host").unwrap();
    assert!(
        shared >= SLOW.mul_f64(0.95),
        "the mixture's p95: {shared:?}"
    );
    // No call had the fast host's key: it has the fixed delay (or, without a place free
    // for it, the policy-wide one), not its own.
    let fast_key = delay_for(policy, &fast).unwrap();
    assert!(fast_key >= SLOW.mul_f64(0.95), "{fast_key:?}");
    assert_eq!(hedged_after(clock, via, &fast).await, shared);
}

/// Two hosts through one layer on a `policy` without keys: one delay for both.
pub async fn one_delay_without_keys(
    clock: &VirtualClock,
    policy: &Policy<ManualTimer>,
    via: &impl SendGet,
) {
    let (fast, slow) = hosts(clock).await;
    learn_both(clock, via, &fast, &slow).await;

    let one = policy.delay();
    assert!(
        one.unwrap() >= SLOW.mul_f64(0.95),
        "the mixture's p95: {one:?}"
    );
    assert_eq!(delay_for(policy, &fast), one);
    assert_eq!(delay_for(policy, &slow), one);
    assert_eq!(hedged_after(clock, via, &fast).await, one.unwrap());
}
