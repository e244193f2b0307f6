//! `PolicyBuilder::replace_failed`: every failed copy starts the next one at once, while
//! the others keep running.

mod common;

use std::time::Duration;

use common::{ms, Backend, Driver, Failure, Step};
use hedging::timer::ManualTimer;
use hedging::{Hedgeable, Policy};

/// Two copies at once, a third only by a failure (no timed third copy).
fn two_parallel_then_fallback(timer: &ManualTimer, replace_failed: bool) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(3)
        .delay_fn(|copy| (copy == 1).then_some(Duration::ZERO))
        .replace_failed(replace_failed)
        .timer(timer.clone())
        .build()
}

#[test]
fn replace_failed_starts_the_next_copy_the_moment_any_copy_fails() {
    let timer = ManualTimer::new();
    // Copy 1 fails at 5 ms while copy 0 runs on: copy 2 starts at 5 ms and wins.
    let backend = Backend::new(&timer, [Step::ok(100, 0), Step::err(5, 1), Step::ok(10, 2)]);
    let policy = two_parallel_then_fallback(&timer, true);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(0)), (2, ms(5))]);
    assert_eq!(timer.now(), ms(15));
}

#[test]
fn without_replace_failed_a_failure_waits_for_every_copy_in_flight() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(100, 0), Step::err(5, 1), Step::ok(10, 2)]);
    let policy = two_parallel_then_fallback(&timer, false);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(0))]);
}

#[test]
fn replace_failed_starts_one_copy_per_failure() {
    let timer = ManualTimer::new();
    // Copies 0 and 1 both fail at 5 ms: copies 2 and 3 start then, and no more.
    let backend = Backend::new(
        &timer,
        [
            Step::err(5, 0),
            Step::err(5, 1),
            Step::never(),
            Step::ok(1, 3),
            Step::ok(1, 4),
        ],
    );
    let policy = Policy::builder()
        .max_copies(5)
        .delay_fn(|copy| (copy == 1).then_some(Duration::ZERO))
        .replace_failed(true)
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(3));
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0)), (1, ms(0)), (2, ms(5)), (3, ms(5))]
    );
}

#[test]
fn replace_failed_replaces_a_timed_out_copy_too() {
    let timer = ManualTimer::new();
    // Copy 1 (started with copy 0) times out at 20 ms: copy 2 replaces it at once.
    let backend: Backend<Failure> =
        Backend::with_errors(&timer, [Step::ok(100, 0), Step::never(), Step::ok(1, 2)]);
    let policy = two_parallel_then_fallback(&timer, true);
    let mut call = Driver::new(backend.factory().hedged(&policy).attempt_timeout(ms(20)));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(0)), (2, ms(20))]);
}

#[test]
fn replace_failed_defaults_to_off() {
    let policy = Policy::builder().build();
    assert!(
        format!("{policy:?}").contains("replace_failed: false"),
        "{policy:?}"
    );
}
