//! How a call runs around its race: polled with the caller's waker, the hedge
//! probability, hooks, stats, `Send` futures, panics and wake-ups.

use std::sync::{Arc, Mutex};
use std::task::Poll;

use crate::common::{self, ms, policy, Backend, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Hedgeable, Policy};

// --- No spawn ------------------------------------------------------------------------

#[test]
fn copies_are_polled_with_the_callers_waker() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(7, 0)]);
    let policy = policy(&timer, 1, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(call.wakes(), 0);
    timer.advance(ms(7));
    // The copy's sleep woke the caller's waker itself: nothing in between.
    assert_eq!(call.wakes(), 1);
    assert_eq!(call.poll(), Poll::Ready(Ok(0)));
}

#[test]
fn nothing_runs_after_the_hedge_is_dropped() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::ok(50, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run_until(&timer, ms(20)), None);
    let polls = backend.polls();
    drop(call);

    timer.advance(ms(100));
    assert_eq!(backend.polls(), polls);
    assert_eq!(backend.started(), 2);
}

#[test]
fn a_call_says_how_many_copies_it_started() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::ok(5, 1), Step::ok(5, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.future.copies_started(), 0);
    assert_eq!(call.run(&timer), Ok(1));
    // The original and the hedge that won; the third copy was never due.
    assert_eq!(call.future.copies_started(), 2);
    assert_eq!(backend.started(), 2);
}

// --- Hedge probability ---------------------------------------------------------------

fn hedges_over(calls: u32, probability: f64) -> u64 {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(1))
        .hedge_probability(probability)
        .timer(timer.clone())
        .build();
    for _ in 0..calls {
        let backend = Backend::new(&timer, [Step::ok(2, 0), Step::ok(5, 1)]);
        let mut call = Driver::new(backend.factory().hedged(&policy));
        assert_eq!(call.run(&timer), Ok(0));
    }
    policy.stats().hedges
}

#[test]
fn hedge_probability_zero_never_hedges() {
    assert_eq!(hedges_over(200, 0.0), 0);
}

#[test]
fn hedge_probability_one_always_hedges() {
    assert_eq!(hedges_over(200, 1.0), 200);
}

#[test]
fn hedge_probability_is_rolled_once_per_call() {
    let hedges = hedges_over(2_000, 0.25);
    // 500 expected, standard deviation about 19: a wide band that still fails for 0 or 1.
    assert!(
        (350..=650).contains(&hedges),
        "{hedges} hedges for p = 0.25"
    );
}

#[test]
fn a_missed_roll_runs_the_original_alone_even_after_a_failure() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(1, 100), Step::ok(1, 1)]);
    let policy = Policy::builder()
        .max_copies(2)
        .hedge_probability(0.0)
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Err(100));
    assert_eq!(backend.started(), 1);
}

// --- Hooks ---------------------------------------------------------------------------

#[test]
fn on_hedge_runs_just_before_each_hedge_starts() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::err(1, 101), Step::ok(1, 2)]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook_backend = backend.clone();
    let hook_seen = Arc::clone(&seen);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .on_hedge(move |attempt: &Attempt| {
            // Runs before the copy exists: the backend has seen `index` copies so far.
            assert_eq!(hook_backend.started(), attempt.index());
            hook_seen.lock().unwrap().push(*attempt);
        })
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "once per hedge, never for the original");
    assert_eq!((seen[0].index(), seen[0].elapsed()), (1, ms(10)));
    assert_eq!((seen[1].index(), seen[1].elapsed()), (2, ms(20)));
    assert!(seen.iter().all(|a| a.is_hedge() && a.max_copies() == 3));
}

#[test]
fn attempt_describes_each_copy() {
    let timer = ManualTimer::new();
    // Copy 0 fails at 4 and copy 1 at 7: each failure starts the next copy at once.
    let backend = Backend::new(
        &timer,
        [Step::err(4, 100), Step::err(3, 101), Step::ok(1, 2)],
    );
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let policy = policy(&timer, 3, 10);
    let mut factory = backend.factory();
    let seen = Arc::clone(&attempts);
    let mut call = Driver::new(
        (move |attempt: Attempt| {
            seen.lock().unwrap().push(attempt);
            factory(attempt)
        })
        .hedged(&policy),
    );

    assert_eq!(call.run(&timer), Ok(2));
    let attempts = attempts.lock().unwrap();
    let summary: Vec<_> = attempts
        .iter()
        .map(|a| (a.index(), a.is_hedge(), a.elapsed()))
        .collect();
    assert_eq!(
        summary,
        vec![(0, false, ms(0)), (1, true, ms(4)), (2, true, ms(7))]
    );
}

// --- Stats ---------------------------------------------------------------------------

#[test]
fn stats_add_up_once_no_call_is_in_flight() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let scripts: [&[Step]; 4] = [
        &[Step::ok(1, 0)],
        &[Step::never(), Step::ok(1, 1)],
        &[Step::err(1, 100), Step::err(1, 101)],
        &[Step::never(), Step::never()],
    ];
    for steps in scripts {
        let backend = Backend::new(&timer, steps.iter().copied());
        let mut call = Driver::new(backend.factory().hedged(&policy));
        let _ = call.run_until(&timer, timer.now() + ms(30));
    }
    let stats = policy.stats();
    assert_eq!(stats.calls, 4);
    assert_eq!((stats.wins, stats.failures, stats.cancelled), (2, 1, 1));
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
    assert_eq!((stats.hedges, stats.hedge_wins), (3, 1));
}

#[test]
fn stats_are_shared_by_clones_and_reset_to_zero() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let clone = policy.clone();
    futures::executor::block_on((|| async { Ok::<_, ()>(()) }).hedged(&clone)).unwrap();
    futures::executor::block_on((|| async { Ok::<_, ()>(()) }).hedged(clone)).unwrap();
    assert_eq!(policy.stats().calls, 2);

    policy.reset_stats();
    assert_eq!(policy.stats(), hedging::Stats::default());
    futures::executor::block_on((|| async { Err::<(), _>(()) }).hedged(&policy)).unwrap_err();
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 1));
}

#[test]
fn a_call_dropped_before_its_first_poll_is_not_counted() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    drop((|| async { Ok::<_, ()>(()) }).hedged(&policy));
    assert_eq!(policy.stats(), hedging::Stats::default());
}

#[test]
fn reset_stats_mid_call_keeps_calls_equal_to_their_outcomes() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.poll(), Poll::Pending);
    policy.reset_stats();
    assert_eq!(call.run(&timer), Ok(0));
    let stats = policy.stats();
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
    assert_eq!(
        (stats.calls, stats.wins),
        (1, 1),
        "a call counts where it ends"
    );
}

#[test]
fn requests_out_of_a_layers_scope_are_counted_apart_from_calls() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    policy.count_out_of_scope();
    policy.clone().count_out_of_scope();
    let stats = policy.stats();
    assert_eq!((stats.out_of_scope, stats.calls), (2, 0), "not calls");
    futures::executor::block_on((|| async { Ok::<_, ()>(()) }).hedged(&policy)).unwrap();
    assert_eq!((policy.stats().out_of_scope, policy.stats().calls), (2, 1));
    policy.reset_stats();
    assert_eq!(policy.stats(), hedging::Stats::default());
}

// --- Send and 'static ----------------------------------------------------------------

#[test]
fn an_owned_policy_makes_a_send_static_future() {
    fn assert_send_static<F: std::future::Future + Send + 'static>(future: F) -> F {
        future
    }
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let call = assert_send_static(backend.factory().hedged(policy.clone()));
    let handle = std::thread::spawn(move || Driver::new(call).run(&timer));
    assert_eq!(handle.join().unwrap(), Ok(1));
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[test]
fn debug_output_names_the_state_without_requiring_debug_closures() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let call = (|| async { Ok::<_, ()>(()) })
        .hedged(&policy)
        .when(|_: &()| true);
    let text = format!("{call:?}");
    assert!(
        text.starts_with("Hedge {") && text.contains("phase: Idle"),
        "{text}"
    );
    let text = format!("{policy:?}");
    assert!(
        text.contains("max_copies: 2") && text.contains("Fixed(10ms)"),
        "{text}"
    );
    let text = format!("{:?}", Policy::builder().parallel());
    assert!(text.contains("Parallel"), "{text}");
}

// --- Panics --------------------------------------------------------------------------

fn catching_policy(timer: &ManualTimer, max_copies: usize) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(ms(10))
        .catch_unwind(true)
        .timer(timer.clone())
        .build()
}

#[test]
fn a_panicking_copy_propagates_by_default() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::panic(1)]);
    let policy = policy(&timer, 2, 10);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Driver::new(backend.factory().hedged(&policy)).run(&timer)
    }));

    let panic = outcome.expect_err("the copy's panic reaches the caller");
    assert_eq!(
        panic.downcast_ref::<&str>(),
        Some(&"scripted copy panicked")
    );
    assert_eq!(backend.alive(), 0, "unwinding dropped the other copy");
    assert_eq!(policy.stats().cancelled, 1);
}

#[test]
fn catch_unwind_turns_a_panicking_copy_into_a_failed_copy() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(1), Step::ok(2, 1)]);
    let policy = catching_policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(1));
    // The panic at 1 ms counted as a failure: the next copy started at once.
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(1))]);
}

#[test]
fn catch_unwind_prefers_an_error_to_a_panic() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(1), Step::err(1, 101)]);
    let policy = catching_policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Err(101));
}

#[test]
fn catch_unwind_resumes_the_lowest_index_panic_when_only_panics_are_left() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(5), Step::panic(1)]);
    let policy = catching_policy(&timer, 2);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Driver::new(backend.factory().hedged(&policy)).run(&timer)
    }));

    assert!(outcome.is_err(), "a panic, not a made-up error");
    assert_eq!(backend.alive(), 0);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.cancelled), (1, 1, 0));
}

// --- No lost wake-ups ----------------------------------------------------------------

#[test]
fn a_hedge_polled_only_when_woken_always_finishes() {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    for scenario in 0..500 {
        let timer = ManualTimer::new();
        let max_copies = rng.usize(1..=4);
        let steps: Vec<Step> = (0..max_copies)
            .map(|k| match rng.u8(0..3) {
                0 => Step::ok(rng.u64(0..40), k as u32),
                1 => Step::err(rng.u64(0..40), 100 + k as u32),
                _ => Step::ok(rng.u64(0..40) + 40, k as u32),
            })
            .collect();
        let builder = Policy::builder()
            .max_copies(max_copies)
            .timer(timer.clone());
        let policy = match rng.u8(0..4) {
            0 => builder.parallel(),
            1 => builder.fallback(),
            _ => builder
                .delay(ms(rng.u64(1..20)))
                .max_delay(ms(rng.u64(0..30))),
        }
        .build();
        let backend = Backend::new(&timer, steps.clone());
        let mut call = Driver::new(backend.factory().hedged(&policy));

        // `run` panics with "stalled" if the future is pending, not woken, and no timer is left.
        let output = call.run(&timer);
        assert!(
            backend.started() <= max_copies,
            "scenario {scenario}: {steps:?}"
        );
        assert_eq!(
            backend.alive(),
            0,
            "scenario {scenario}: a copy outlived the call"
        );
        assert_eq!(
            timer.live_sleeps(),
            0,
            "scenario {scenario}: the timer outlived the call"
        );
        let any_ok = steps[..backend.started()]
            .iter()
            .any(|s| matches!(s.end, common::End::Ok(_)));
        assert_eq!(
            output.is_ok(),
            any_ok,
            "scenario {scenario}: {steps:?} gave {output:?}"
        );
    }
}
