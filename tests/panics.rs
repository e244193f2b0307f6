//! Panics in a copy, in the factory and in the `on_hedge` hook, with `catch_unwind` on and
//! off: what comes out of `poll`, that no copy is left running, and that the policy, its
//! stats and the timer stay usable afterwards.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Once};
use std::task::Poll;

use common::{ms, Backend, CopyFuture, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Hedgeable, Policy, Stats};

/// Keeps the test output free of the panics these tests cause on purpose.
fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = panic_message(info.payload());
            if !message.starts_with("scripted") {
                previous(info);
            }
        }));
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match payload.downcast_ref::<&'static str>() {
        Some(message) => (*message).to_owned(),
        None => payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default(),
    }
}

fn policy(timer: &ManualTimer, max_copies: usize, catch: bool) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(ms(10))
        .catch_unwind(catch)
        .timer(timer.clone())
        .build()
}

/// Runs the call to its end; `Err` holds the message of a panic that came out of `poll`.
/// The call is dropped before this returns, as an unwinding caller would drop it.
fn run_catching<F>(timer: &ManualTimer, call: F) -> Result<F::Output, String>
where
    F: std::future::Future,
{
    quiet_expected_panics();
    let mut driver = Driver::new(call);
    let outcome = catch_unwind(AssertUnwindSafe(|| driver.run(timer)));
    drop(driver);
    outcome.map_err(|panic| panic_message(&*panic))
}

/// After a panic, the same policy and timer still run calls and count them.
fn assert_still_usable(timer: &ManualTimer, policy: &Policy<ManualTimer>) {
    let before = policy.stats();
    let backend = Backend::new(timer, [Step::never(), Step::ok(1, 42)]);
    let mut call = Driver::new(backend.factory().hedged(policy));
    assert_eq!(call.run(timer), Ok(42));
    let after = policy.stats();
    assert_eq!(after.calls, before.calls + 1);
    assert_eq!(after.wins, before.wins + 1);
    assert_eq!(after.calls, after.wins + after.failures + after.cancelled);
    drop(call);
    assert_eq!(backend.alive(), 0);
}

// --- A panicking copy -------------------------------------------------------------------

#[test]
fn a_panicking_copy_unwinds_through_poll_when_catch_unwind_is_off() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::panic(5), Step::ok(30, 2)]);
    let policy = policy(&timer, 3, false);

    let outcome = run_catching(&timer, backend.factory().hedged(&policy));

    assert_eq!(outcome, Err("scripted copy panicked".to_owned()));
    assert_eq!(backend.started(), 2, "copy 2 was not due yet");
    assert_eq!(
        backend.alive(),
        0,
        "the unwinding caller dropped the call and every copy"
    );
    assert_eq!(timer.live_sleeps(), 0);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            cancelled: 1,
            hedges: 1,
            ..Stats::default()
        },
        "a call that unwound mid-race counts as cancelled"
    );
    assert_still_usable(&timer, &policy);
}

#[test]
fn a_panicking_copy_is_a_failed_copy_when_catch_unwind_is_on() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(5), Step::ok(3, 1)]);
    let policy = policy(&timer, 2, true);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    quiet_expected_panics();

    assert_eq!(call.run(&timer), Ok(1));
    // The panic at 5 ms started copy 1 at once, not at its 10 ms due time.
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(5))]);
    assert_eq!(backend.alive(), 0);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            wins: 1,
            hedges: 1,
            hedge_wins: 1,
            ..Stats::default()
        }
    );
}

#[test]
fn an_error_is_returned_before_a_caught_panic() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(1), Step::err(1, 7)]);
    let policy = policy(&timer, 2, true);

    let outcome = run_catching(&timer, backend.factory().hedged(&policy));

    assert_eq!(
        outcome,
        Ok(Err(7)),
        "an error to return beats a panic to resume"
    );
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn when_every_copy_panics_the_lowest_index_panic_resumes_after_the_race() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(20), Step::panic(1)]);
    let policy = policy(&timer, 2, true);
    quiet_expected_panics();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    let outcome = catch_unwind(AssertUnwindSafe(|| call.run(&timer)));

    assert!(outcome.is_err(), "no copy won or failed: the panic resumes");
    assert_eq!(
        timer.now(),
        ms(20),
        "the race ran until the last copy finished"
    );
    assert_eq!(
        backend.alive(),
        0,
        "every copy was dropped before the panic resumed"
    );
    assert!(
        futures::future::FusedFuture::is_terminated(&*call.future),
        "the call is over"
    );
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            failures: 1,
            hedges: 1,
            ..Stats::default()
        }
    );
    drop(call);
    assert_eq!(
        policy.stats().cancelled,
        0,
        "a finished call is not cancelled by its drop"
    );
    assert_still_usable(&timer, &policy);
}

#[test]
fn a_caught_panic_of_an_original_running_alone_resumes_and_counts_a_failure() {
    // Hedging off: the original ran alone, with no race, until it panicked; the race
    // made then keeps the panic and, with nothing else to return, resumes it.
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(20), Step::ok(1, 1)]);
    let policy = policy(&timer, 1, true);
    quiet_expected_panics();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    let outcome = catch_unwind(AssertUnwindSafe(|| call.run(&timer)));

    assert!(outcome.is_err(), "the panic resumes");
    assert_eq!((backend.started(), backend.alive()), (1, 0));
    assert!(futures::future::FusedFuture::is_terminated(&*call.future));
    drop(call);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            failures: 1,
            ..Stats::default()
        },
        "counted once, as failed, and not cancelled by the drop"
    );
}

// --- A panicking factory ----------------------------------------------------------------

/// A factory that panics when asked for copy `panics_at` and defers to `backend` otherwise.
fn factory_panicking_at(backend: &Backend, panics_at: usize) -> impl FnMut(Attempt) -> CopyFuture {
    let mut make = backend.factory();
    move |attempt: Attempt| {
        if attempt.index() == panics_at {
            panic!("scripted factory panic");
        }
        make(attempt)
    }
}

#[test]
fn a_panicking_factory_unwinds_through_poll_when_catch_unwind_is_off() {
    for panics_at in [0, 1] {
        let timer = ManualTimer::new();
        let backend = Backend::new(&timer, [Step::never(), Step::never()]);
        let policy = policy(&timer, 2, false);

        let outcome = run_catching(
            &timer,
            factory_panicking_at(&backend, panics_at).hedged(&policy),
        );

        assert_eq!(outcome, Err("scripted factory panic".to_owned()));
        assert_eq!(backend.started(), panics_at, "copies made before the panic");
        assert_eq!(backend.alive(), 0, "and dropped with the call");
        assert_eq!(timer.live_sleeps(), 0);
        let stats = policy.stats();
        assert_eq!(
            (stats.calls, stats.cancelled, stats.hedges),
            (1, 1, 0),
            "copy {panics_at}"
        );
        assert_still_usable(&timer, &policy);
    }
}

#[test]
fn a_panicking_factory_is_a_failed_copy_when_catch_unwind_is_on() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::ok(2, 2)]);
    let policy = policy(&timer, 3, true);
    quiet_expected_panics();
    let mut call = Driver::new(factory_panicking_at(&backend, 0).hedged(&policy));

    // Copy 0 failed as it was made: copy 1 starts in the same poll.
    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(backend.starts(), vec![(1, ms(0))]);
    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(1, ms(0)), (2, ms(10))]);
    assert_eq!(backend.alive(), 0);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            wins: 1,
            hedges: 2,
            hedge_wins: 1,
            ..Stats::default()
        }
    );
}

#[test]
fn copies_after_a_caught_factory_panic_keep_their_index() {
    // Copy 1's factory panics; copy 3's error must still lose to copy 2's, by index.
    let timer = ManualTimer::new();
    let backend = Backend::new(
        &timer,
        [
            Step::err(50, 0),
            Step::never(),
            Step::err(40, 2),
            Step::err(5, 3),
        ],
    );
    let policy = Policy::builder()
        .max_copies(4)
        .parallel()
        .catch_unwind(true)
        .timer(timer.clone())
        .build();
    quiet_expected_panics();

    let outcome = run_catching(&timer, factory_panicking_at(&backend, 1).hedged(&policy));

    assert_eq!(outcome, Ok(Err(0)), "the lowest-index error is copy 0's");
    assert_eq!(backend.started(), 3);
    assert_eq!(backend.alive(), 0);
}

#[test]
fn when_every_factory_call_panics_the_panic_resumes() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 3, true);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let factory = move || -> std::future::Ready<Result<u32, u32>> {
        counted.fetch_add(1, SeqCst);
        panic!("scripted factory panic")
    };

    let outcome = run_catching(&timer, factory.hedged(&policy));

    assert_eq!(outcome, Err("scripted factory panic".to_owned()));
    assert_eq!(
        calls.load(SeqCst),
        3,
        "each failure started the next copy at once"
    );
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            failures: 1,
            hedges: 2,
            ..Stats::default()
        }
    );
}

// --- A panicking on_hedge hook -----------------------------------------------------------

#[test]
fn a_panicking_on_hedge_hook_unwinds_through_poll_whatever_catch_unwind_says() {
    for catch in [false, true] {
        let timer = ManualTimer::new();
        let backend = Backend::new(&timer, [Step::ok(30, 0), Step::ok(1, 1)]);
        let policy = Policy::builder()
            .max_copies(2)
            .delay(ms(10))
            .catch_unwind(catch)
            .on_hedge(|_| panic!("scripted hook panic"))
            .timer(timer.clone())
            .build();

        let outcome = run_catching(&timer, backend.factory().hedged(&policy));

        assert_eq!(
            outcome,
            Err("scripted hook panic".to_owned()),
            "catch_unwind({catch})"
        );
        assert_eq!(timer.now(), ms(10), "at the hedge's due time");
        assert_eq!(
            backend.started(),
            1,
            "the hook runs before the copy is made"
        );
        assert_eq!(backend.alive(), 0, "the original was dropped with the call");
        assert_eq!(timer.live_sleeps(), 0);
        let stats = policy.stats();
        assert_eq!((stats.calls, stats.cancelled, stats.hedges), (1, 1, 0));
    }
}

#[test]
fn a_hook_that_panicked_leaves_the_policy_usable_from_other_threads() {
    let timer = ManualTimer::new();
    let hook_calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hook_calls);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .on_hedge(move |_| {
            // Only the first hedge ever made through this policy panics.
            if counted.fetch_add(1, SeqCst) == 0 {
                panic!("scripted hook panic");
            }
        })
        .timer(timer.clone())
        .build();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(1, 1)]);
    assert!(run_catching(&timer, backend.factory().hedged(&policy)).is_err());

    let worker = {
        let (policy, timer) = (policy.clone(), timer.clone());
        std::thread::spawn(move || {
            let backend = Backend::new(&timer, [Step::never(), Step::ok(1, 1)]);
            let mut call = Driver::new(backend.factory().hedged(&policy));
            let answer = call.run(&timer);
            drop(call);
            (answer, backend.alive())
        })
    };
    assert_eq!(
        worker.join().expect("the worker does not panic"),
        (Ok(1), 0)
    );
    assert_eq!(hook_calls.load(SeqCst), 2);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 2,
            wins: 1,
            cancelled: 1,
            hedges: 1,
            hedge_wins: 1,
            ..Stats::default()
        }
    );
}
