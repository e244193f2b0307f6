//! One `GrpcHedgeLayer` over a real tonic server on loopback whose two methods answer
//! at different speeds, on a policy with keys: each call is keyed by its method, so each
//! method learns a delay of its own and the fast one hedges at its own. Time is virtual:
//! a call's latency is the time the test moves the clock by before the server answers.

mod grpc_scene;

use std::time::Duration;

use grpc_scene::{echo, Scene};
use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_test_server::grpc::{OTHER, SAY};

const FAST: Duration = Duration::from_millis(2);
const SLOW: Duration = Duration::from_millis(40);
/// The fixed delay, a key's until its window holds enough latencies: far above both.
const FIXED: Duration = Duration::from_secs(1);
const SAMPLES: u32 = 10;
/// A quarter of the default adaptive window: each estimate is recomputed when one ends.
const QUARTER: Duration = Duration::from_millis(2500);

/// A scene whose policy learns the p95 of each key from its first ten latencies.
async fn scene(keys: usize) -> Scene {
    let mut scene = Scene::new(2, FIXED).await;
    scene.policy = Policy::builder()
        .max_copies(2)
        .delay(FIXED)
        .adaptive_delay(0.95)
        .adaptive_min_samples(SAMPLES)
        .adaptive_keys(keys)
        .timer(scene.clock.timer())
        .build();
    scene
}

/// A script holding the original of call `n` until released, its own so that releasing
/// it releases no other call: `hold` and `n` tokens that change nothing.
fn held(n: u32) -> String {
    format!("hold{}", ";ok".repeat(n as usize))
}

/// Ten calls of `method` through `layer`, one after another, each held by the server
/// until the clock moved by `latency`: ten latencies of `latency`, none hedged. The
/// calls are numbered from `first`.
async fn learn(
    scene: &Scene,
    layer: &GrpcHedgeLayer<ManualTimer>,
    (method, first): (&'static str, u32),
    latency: Duration,
) {
    for n in first..first + SAMPLES {
        let script = held(n);
        let reply = scene.call(layer.clone(), echo(&script), method);
        scene.server.until_arrived(&script, 1).await;
        scene.clock.advance(latency);
        scene.server.release(&script);
        assert_eq!(reply.await.unwrap().unwrap().attempt, 0);
    }
}

/// Calls `method` with its original held, and returns the delay its hedge was armed at,
/// then lets that delay pass: the hedge answers.
async fn hedged_after(
    scene: &Scene,
    layer: &GrpcHedgeLayer<ManualTimer>,
    method: &'static str,
) -> Duration {
    let Scene { clock, server, .. } = scene;
    let script = "hold | ok";
    let reply = scene.call(layer.clone(), echo(script), method);
    server.until_arrived(script, 1).await;
    let armed = clock.timer().next_deadline().expect("a hedge armed") - clock.now();
    clock.hedge(server, script, 1, armed).await;
    assert_eq!(
        reply.await.unwrap().unwrap().attempt,
        1,
        "the hedge answered"
    );
    let seen = server.arrivals(script);
    assert_eq!(
        seen[1].at - seen[0].at,
        armed,
        "the hedge went out at its delay"
    );
    armed
}

fn near(delay: Option<Duration>, latency: Duration) -> bool {
    (delay.unwrap().as_secs_f64() / latency.as_secs_f64() - 1.0).abs() < 0.05
}

#[tokio::test]
async fn two_methods_through_one_layer_learn_two_delays() {
    let scene = scene(8).await;
    let policy = &scene.policy;
    let layer = GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo"]);
    assert_eq!(policy.delay_for(SAY), Some(FIXED), "no latency yet");

    learn(&scene, &layer, (SAY, 0), FAST).await;
    learn(&scene, &layer, (OTHER, SAMPLES), SLOW).await;
    scene.clock.advance(QUARTER);

    let (fast, slow) = (policy.delay_for(SAY), policy.delay_for(OTHER));
    assert!(near(fast, FAST), "the fast method's own p95: {fast:?}");
    assert!(near(slow, SLOW), "the slow method's own p95: {slow:?}");
    assert!(
        near(policy.delay(), SLOW),
        "the mixture's: {:?}",
        policy.delay()
    );
    assert_eq!(
        policy.delay_for("test.Echo/Say"),
        Some(FIXED),
        "the key is the path"
    );

    // The fast method hedges at its own delay, not at the mixture's.
    assert_eq!(hedged_after(&scene, &layer, SAY).await, fast.unwrap());
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (21, 1, 1));
}

#[tokio::test]
async fn key_by_replaces_the_method() {
    let scene = scene(8).await;
    let policy = &scene.policy;
    let layer = GrpcHedgeLayer::new(policy.clone())
        .all_methods()
        .key_by(|_: &http::request::Parts| 7_u64);

    learn(&scene, &layer, (SAY, 0), FAST).await;
    learn(&scene, &layer, (OTHER, SAMPLES), SLOW).await;
    scene.clock.advance(QUARTER);

    let shared = policy.delay_for(&7_u64).unwrap();
    assert!(
        shared >= SLOW.mul_f64(0.95),
        "the mixture's p95: {shared:?}"
    );
    assert_eq!(
        policy.delay_for(SAY),
        Some(FIXED),
        "no call had its method key"
    );
    assert_eq!(hedged_after(&scene, &layer, SAY).await, shared);
}

#[tokio::test]
async fn a_policy_without_keys_learns_one_delay_for_both_methods() {
    let scene = scene(0).await;
    let policy = &scene.policy;
    let layer = scene.every_method();

    learn(&scene, &layer, (SAY, 0), FAST).await;
    learn(&scene, &layer, (OTHER, SAMPLES), SLOW).await;
    scene.clock.advance(QUARTER);

    let one = policy.delay();
    assert!(
        one.unwrap() >= SLOW.mul_f64(0.95),
        "the mixture's p95: {one:?}"
    );
    assert_eq!((policy.delay_for(SAY), policy.delay_for(OTHER)), (one, one));
    assert_eq!(hedged_after(&scene, &layer, SAY).await, one.unwrap());
}
