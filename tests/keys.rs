//! `adaptive_keys` and `Hedge::key`: a delay learnt per key, driven call by call on
//! `ManualTimer`.

mod common;

use std::time::Duration;

use common::{ms, Driver};
use futures::StreamExt;
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, HedgeableStream, Policy, PolicyBuilder};

const EDGE: u32 = 16; // bucket edges are at most 1/16 above the value

fn assert_near(delay: Option<Duration>, value: Duration) {
    let delay = delay.expect("an adaptive policy has a delay");
    assert!(
        delay >= value && delay <= value + value / EDGE,
        "delay {delay:?} is not the bucket of {value:?}"
    );
}

/// Runs one call with `key` (or none) whose original takes `original` and every hedge
/// `hedge`; returns the winner and how long the call took.
fn call(
    policy: &Policy<ManualTimer>,
    key: Option<&str>,
    original: Duration,
    hedge: Duration,
) -> (usize, Duration) {
    common::scripted_call(policy, key, original, hedge)
}

fn keyed(timer: &ManualTimer, keys: usize) -> PolicyBuilder<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .adaptive_delay(0.5)
        .adaptive_keys(keys)
        .delay(ms(50))
        .min_delay(Duration::ZERO)
        .adaptive_min_samples(5)
        .adaptive_window(ms(4000)) // quarters of a second
        .timer(timer.clone())
}

/// Moves the clock into the next quarter window, so the estimates are computed again
/// from the quarters that completed (between quarters, only a first estimate is published).
fn next_quarter(timer: &ManualTimer) {
    let quarter = ms(1000);
    let into = timer.now().as_nanos() % quarter.as_nanos();
    timer.advance(quarter - Duration::from_nanos(into as u64));
}

/// Records `calls` latencies of `latency` for `key`, none of them hedged.
fn train(policy: &Policy<ManualTimer>, key: Option<&str>, latency: Duration, calls: usize) {
    for _ in 0..calls {
        assert_eq!(call(policy, key, latency, latency).0, 0);
    }
}

#[test]
fn two_keys_of_different_speed_learn_two_delays() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 8).build();
    train(&policy, Some("fast"), ms(2), 5);
    train(&policy, Some("slow"), ms(20), 5);
    assert_near(policy.delay_for("fast"), ms(2));
    assert_near(policy.delay_for("slow"), ms(20));
}

#[test]
fn the_fast_key_hedges_at_its_own_delay() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 8).build();
    train(&policy, Some("fast"), ms(2), 5);
    train(&policy, Some("slow"), ms(20), 20);
    next_quarter(&timer);
    // The policy-wide median is the slow key's; the fast key hedges at its own 2 ms.
    assert_near(policy.delay(), ms(20));
    let (winner, took) = call(&policy, Some("fast"), ms(500), ms(1));
    assert_eq!(winner, 1, "the hedge wins");
    assert!(took <= ms(4), "hedged at the fast key's delay: {took:?}");
    let (winner, took) = call(&policy, None, ms(500), ms(1));
    assert_eq!(winner, 1);
    assert!(took >= ms(21), "no key: the policy-wide delay: {took:?}");
}

#[test]
fn a_new_key_uses_the_fixed_delay_until_its_window_holds_min_samples() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 8).build();
    train(&policy, Some("old"), ms(2), 10);
    assert_eq!(policy.delay_for("new"), Some(ms(50)), "the fixed delay");
    train(&policy, Some("new"), ms(8), 4);
    assert_eq!(
        policy.delay_for("new"),
        Some(ms(50)),
        "four latencies: still fixed"
    );
    let (_, took) = call(&policy, Some("new"), ms(500), ms(1));
    assert_eq!(took, ms(51), "hedged at the fixed delay");
    // Its fifth latency (51 ms, a lower bound) publishes the key's first estimate.
    assert_ne!(policy.delay_for("new"), Some(ms(50)));
    train(&policy, Some("new"), ms(8), 20);
    next_quarter(&timer);
    assert_near(policy.delay_for("new"), ms(8));
}

#[test]
fn the_policy_wide_estimate_learns_from_every_call_keyed_or_not() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 8).build();
    train(&policy, Some("a"), ms(4), 3);
    train(&policy, Some("b"), ms(4), 2);
    assert_near(policy.delay(), ms(4));
    assert_eq!(
        policy.delay_for("a"),
        Some(ms(50)),
        "three of a's own: too few"
    );
}

#[test]
fn a_key_that_is_not_kept_uses_the_policy_wide_estimate() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 1).build();
    train(&policy, Some("first"), ms(3), 5);
    assert_near(policy.delay_for("first"), ms(3));
    // The one place is held by a key in use: the second key is not kept.
    assert_near(policy.delay_for("second"), ms(3));
    train(&policy, Some("second"), ms(30), 20);
    next_quarter(&timer);
    assert_near(policy.delay_for("first"), ms(3));
    assert_near(policy.delay_for("second"), ms(30));
    assert_near(policy.delay(), ms(30));
}

#[test]
fn an_idle_key_gives_its_place_to_a_new_one_after_a_window() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 1).build();
    train(&policy, Some("first"), ms(3), 5);
    timer.advance(ms(4000));
    assert_eq!(
        policy.delay_for("second"),
        Some(ms(50)),
        "first went a window without a call: second may take its place"
    );
    train(&policy, Some("second"), ms(7), 5);
    assert_near(policy.delay_for("second"), ms(7));
    // first lost its place, and its place is in use: it reads the policy-wide estimate,
    // still the first estimate the policy published.
    assert_eq!(policy.delay_for("first"), policy.delay());
}

#[test]
fn key_on_a_policy_without_keys_changes_nothing() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 0).build();
    train(&policy, Some("fast"), ms(2), 5);
    train(&policy, Some("slow"), ms(20), 20);
    next_quarter(&timer);
    assert_eq!(policy.delay_for("fast"), policy.delay());
    let (_, took) = call(&policy, Some("fast"), ms(500), ms(1));
    assert!(took >= ms(21), "the one policy-wide delay: {took:?}");
}

#[test]
fn delay_for_without_an_adaptive_delay_is_the_policy_delay() {
    let policy = Policy::builder()
        .delay(ms(7))
        .adaptive_keys(4)
        .timer(ManualTimer::new())
        .build();
    assert_eq!(policy.delay_for("any"), Some(ms(7)));
    let fallback = Policy::builder().fallback().adaptive_keys(4).build();
    assert_eq!(fallback.delay_for("any"), None);
}

#[test]
fn a_keyed_stream_hedges_at_its_keys_delay() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 8).build();
    train(&policy, Some("fast"), ms(2), 5);
    train(&policy, Some("slow"), ms(20), 20);
    next_quarter(&timer);
    let start = timer.now();
    let factory = {
        let timer = timer.clone();
        move |a: Attempt| {
            let latency = if a.index() == 0 { ms(500) } else { ms(1) };
            let sleep = timer.sleep(latency);
            let index = a.index();
            futures::stream::once(async move {
                sleep.await;
                Ok::<_, ()>(index)
            })
        }
    };
    let stream = Box::pin(factory.hedged_stream(&policy).key("fast"));
    let mut driver = Driver::new(stream.into_future());
    let (first, _) = driver.run(&timer);
    assert_eq!(first, Some(Ok(1)), "the hedge's item");
    assert!(timer.now() - start <= ms(4), "{:?}", timer.now() - start);
}

#[test]
fn a_key_given_by_its_hash_is_the_same_key() {
    let timer = ManualTimer::new();
    let policy = keyed(&timer, 8).build();
    let factory = |latency: Duration| {
        let timer = timer.clone();
        move |a: Attempt| common::answer_after(&timer, a.index(), latency)
    };
    // Five calls learn the key by its hash (as middleware that moves its request into
    // the call gives it), read back by the key itself.
    for _ in 0..5 {
        let call = factory(ms(2))
            .hedged(&policy)
            .key_hash(policy.key_hash("fast"));
        assert_eq!(Driver::new(call).run(&timer), Ok(0));
    }
    train(&policy, Some("slow"), ms(20), 5);
    assert_near(policy.delay_for("fast"), ms(2));
    assert_near(policy.delay_for("slow"), ms(20));
}
