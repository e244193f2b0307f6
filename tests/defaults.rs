//! The `Default` impls, the policy's timer accessor and `ManualSleep`'s `Debug`: the small
//! surface the behaviour tests do not reach.

use std::future::Future;
use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Hedgeable, Policy, PolicyBuilder, Stats};

#[test]
fn a_default_policy_is_what_the_builder_defaults_describe() {
    let policy = Policy::<ManualTimer>::default();
    assert_eq!(policy.max_copies(), 2);
    let debug = format!("{policy:?}");
    assert!(debug.contains("Fixed(10ms)"), "{debug}");
    assert!(debug.contains("hedge_probability: 1.0"), "{debug}");

    // The original never answers; the hedge goes out at the default 10 ms.
    let timer = policy.timer().clone();
    let mut call = Box::pin((|| std::future::pending::<Result<(), ()>>()).hedged(&policy));
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(call.as_mut().poll(&mut cx).is_pending());
    assert_eq!(timer.next_deadline(), Some(Duration::from_millis(10)));
    timer.advance(Duration::from_millis(10));
    assert!(call.as_mut().poll(&mut cx).is_pending());
    assert_eq!(policy.stats().hedges, 1);
}

#[test]
fn the_default_builder_is_the_new_builder() {
    let debug = |builder: PolicyBuilder| format!("{builder:?}");
    assert_eq!(debug(PolicyBuilder::default()), debug(PolicyBuilder::new()));
    assert_eq!(debug(PolicyBuilder::default()), debug(Policy::builder()));
}

#[test]
fn policy_timer_is_the_timer_it_was_built_with() {
    let timer = ManualTimer::new();
    let policy = Policy::builder().timer(timer.clone()).build();
    timer.advance(Duration::from_millis(3));
    assert_eq!(
        policy.timer().now(),
        Duration::from_millis(3),
        "clones share one clock"
    );
    assert_eq!(policy.stats(), Stats::default());
}

#[test]
fn manual_sleep_debug_shows_its_deadline_while_alive() {
    let timer = ManualTimer::new();
    let sleep = timer.sleep(Duration::from_millis(5));
    assert_eq!(format!("{sleep:?}"), "ManualSleep { deadline: Some(5ms) }");
}
