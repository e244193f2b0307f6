//! Server pushback as verdicts: `Verdict::RetryAfter(d)` holds the next copy until `d`
//! from now; `Verdict::Stop` starts no further copy.

mod common;

use std::time::Duration;

use common::{ms, policy, run_both, Backend, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Hedgeable, Policy, Verdict};

/// Errors 429 say "retry after 30 ms", 1 "retry at once", 2 "stop"; other errors retry.
fn pushback(result: &Result<u32, u32>) -> Verdict {
    match result {
        Ok(_) => Verdict::Win,
        Err(429) => Verdict::RetryAfter(ms(30)),
        Err(1) => Verdict::RetryAfter(Duration::ZERO),
        Err(2) => Verdict::Stop,
        Err(_) => Verdict::Retry,
    }
}

#[test]
fn retry_after_holds_the_next_copy_until_its_time() {
    let timer = ManualTimer::new();
    // The original is pushed back at 5 ms: the hedge waits until 35 ms, not 5 or 10.
    let backend = Backend::new(&timer, [Step::err(5, 429), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));

    assert_eq!(call.run_until(&timer, ms(34)), None);
    assert_eq!(
        backend.started(),
        1,
        "held: neither the schedule nor the failure starts it"
    );
    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(35))]);
}

#[test]
fn retry_after_brings_the_next_copy_forward_too() {
    let timer = ManualTimer::new();
    // A copy in flight pushes back for 30 ms while the schedule said 100 ms.
    let backend = Backend::new(
        &timer,
        [
            Step::never(),
            Step::err(5, 429),
            Step::ok(1, 2),
            Step::ok(1, 3),
        ],
    );
    let policy = Policy::builder()
        .max_copies(4)
        .delay_fn(|copy| Some(if copy == 1 { Duration::ZERO } else { ms(100) }))
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(0)), (2, ms(35))]);
}

#[test]
fn later_copies_follow_the_schedule_from_the_pushed_copy() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(5, 429), Step::never(), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(35)), (2, ms(45))]);
}

#[test]
fn retry_after_zero_starts_the_next_copy_at_once_while_others_run() {
    let timer = ManualTimer::new();
    // Copy 1 (sent at 10 ms) answers "retry at once" at 12 ms; copy 0 still runs.
    let backend = Backend::new(&timer, [Step::ok(100, 0), Step::err(2, 1), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10)), (2, ms(12))]);
}

#[test]
fn retry_after_with_no_copy_left_ends_like_retry() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(5, 429)]);
    let policy = policy(&timer, 1, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));
    assert_eq!(call.run(&timer), Err(429));
    assert_eq!(timer.now(), ms(5), "nothing to wait for");
}

#[test]
fn retry_after_on_the_last_copy_under_the_calls_own_cap_ends_at_once() {
    let timer = ManualTimer::new();
    // Copy 1 is pushed back at 15 ms, copy 0 at 20 ms: the call's cap of 2 is reached.
    let backend = Backend::new(&timer, [Step::err(20, 429), Step::err(5, 429)]);
    let policy = policy(&timer, 5, 10);
    let call = backend.factory().hedged(&policy).classify(pushback);
    let mut call = Driver::new(call.max_copies(2));

    assert_eq!(call.run(&timer), Err(429));
    assert_eq!(timer.now(), ms(20), "nothing to wait for");
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
}

#[test]
fn retry_after_beats_replace_failed() {
    let timer = ManualTimer::new();
    let backend = Backend::new(
        &timer,
        [Step::ok(100, 0), Step::err(2, 429), Step::ok(1, 2)],
    );
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .replace_failed(true)
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10)), (2, ms(42))]);
}

#[test]
fn stop_starts_no_further_copy_while_those_in_flight_race_on() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::err(2, 2), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(policy.stats().hedges, 1);
}

#[test]
fn stop_with_nothing_in_flight_returns_the_lowest_failure() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(5, 2), Step::ok(1, 1)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(pushback));

    assert_eq!(call.run(&timer), Err(2));
    assert_eq!(timer.now(), ms(5));
    assert_eq!(backend.started(), 1);
}

#[test]
fn a_pushback_to_the_end_of_time_is_never_waited_for() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(5, 429), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let call = backend
        .factory()
        .hedged(&policy)
        .classify(|r: &Result<u32, u32>| match r {
            Ok(_) => Verdict::Win,
            Err(_) => Verdict::RetryAfter(Duration::MAX),
        });
    assert_eq!(Driver::new(call).run(&timer), Err(429));
    assert_eq!(timer.now(), ms(5));
}

#[test]
fn a_pushback_copy_is_sent_even_where_min_win_rate_withholds_hedges() {
    let timer = ManualTimer::new();
    // One timed copy at 10 ms; copy 2 can start only by a pushback.
    let policy = Policy::builder()
        .max_copies(3)
        .delay_fn(|copy| (copy == 1).then_some(ms(10)))
        .min_win_rate(1.0)
        .timer(timer.clone())
        .build();
    // Call B: its original wins at 15 ms over its hedge, so hedges are withheld from then.
    let b = Backend::new(&timer, [Step::ok(15, 0), Step::never()]);
    // Call A: its hedge (10 ms) is pushed back at 18 ms for 30 ms; copy 2 is due at 48 ms
    // by the server's word, which `min_win_rate` does not overrule.
    let a = Backend::new(&timer, [Step::never(), Step::err(8, 429), Step::ok(1, 2)]);
    let call_a = a.factory().hedged(&policy).classify(pushback);
    let call_b = b.factory().hedged(&policy);

    let (out_a, out_b) = run_both(&timer, call_a, call_b);
    assert_eq!(out_b, Some(Ok(0)));
    assert_eq!(out_a, Some(Ok(2)));
    assert_eq!(a.starts(), vec![(0, ms(0)), (1, ms(10)), (2, ms(48))]);
    assert_eq!(
        policy.stats().withheld,
        0,
        "the pushback copy is not a withheld hedge"
    );
}
