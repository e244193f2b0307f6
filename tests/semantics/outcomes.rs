//! What a call returns: the first win, the copies' own output type, the lowest-index
//! failure when all failed, what the classifier decides, and polling after the end.

use std::sync::{Arc, Mutex};
use std::task::Poll;

use crate::common::{ms, policy, Backend, Driver, Step};
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy, Verdict};

// --- First win returns ---------------------------------------------------------------

#[test]
fn hedge_orig_completes_first() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(timer.now(), ms(5));
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0))],
        "no hedge before its delay"
    );
    assert_eq!(policy.stats().hedges, 0);
}

#[test]
fn hedge_completes_first() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(2, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(12));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.hedge_wins, stats.wins), (1, 1, 1));
}

#[test]
fn hedge_orig_completes_after_hedge_started() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(15, 0), Step::ok(20, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(timer.now(), ms(15));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(policy.stats().hedge_wins, 0);
}

#[test]
fn completes_before_hedge_arms_one_timer_and_drops_it() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    // The copy's own sleep plus the hedge timer.
    assert_eq!(timer.live_sleeps(), 2);
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(
        timer.live_sleeps(),
        0,
        "the hedge timer is dropped with the call's end"
    );
}

#[test]
fn losers_are_dropped_before_poll_returns() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    // The Hedge is still alive, yet both losers are gone.
    assert_eq!(backend.started(), 3);
    assert_eq!(backend.dropped(), 3);
    assert_eq!(timer.live_sleeps(), 0);
}

#[test]
fn the_first_win_in_index_order_wins_a_tie() {
    let timer = ManualTimer::new();
    // Copy 1 starts at 10 and finishes at 20, with copy 0.
    let backend = Backend::new(&timer, [Step::ok(20, 0), Step::ok(10, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Ok(0));
}

#[test]
fn a_kept_failure_is_dropped_before_poll_returns_the_win() {
    /// An error holding a resource: counts its drops.
    #[derive(Debug)]
    struct Held(Arc<Mutex<usize>>);
    impl Drop for Held {
        fn drop(&mut self) {
            if let Ok(mut dropped) = self.0.lock() {
                *dropped += 1;
            }
        }
    }

    let timer = ManualTimer::new();
    let dropped = Arc::new(Mutex::new(0));
    let policy = policy(&timer, 2, 10);
    let factory = {
        let (timer, dropped) = (timer.clone(), Arc::clone(&dropped));
        move |a: Attempt| {
            let sleep = timer.sleep(ms(5));
            let held = Held(Arc::clone(&dropped));
            async move {
                sleep.await;
                // The original fails (its error is kept); the hedge it starts wins.
                if a.is_hedge() {
                    drop(held);
                    Ok(a.index())
                } else {
                    Err(held)
                }
            }
        }
    };
    let mut call = Driver::new(factory.hedged(&policy));
    assert_eq!(call.run(&timer).map_err(drop), Ok(1));
    // The `Hedge` is still alive; the kept failure is not.
    assert_eq!(*dropped.lock().unwrap(), 2);
}

// --- Output type ---------------------------------------------------------------------

#[test]
fn output_type_is_the_copies_result() {
    #[derive(Debug, PartialEq)]
    struct NotFound(&'static str);

    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let answer: Result<Vec<u8>, NotFound> = futures::executor::block_on(
        (|| async { Err(NotFound("key")) })
            .hedged(&policy)
            .when(|_| false),
    );
    assert_eq!(answer, Err(NotFound("key")));
}

// --- All failed ----------------------------------------------------------------------

#[test]
fn all_failed_returns_lowest_index_error() {
    let timer = ManualTimer::new();
    // Copy 0 fails last, copy 2 first: the error of copy 0 still comes back.
    let backend = Backend::new(
        &timer,
        [Step::err(35, 100), Step::err(20, 101), Step::err(5, 102)],
    );
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Err(100));
    assert_eq!(backend.started(), 3);
    let stats = policy.stats();
    assert_eq!((stats.failures, stats.wins), (1, 0));
}

#[test]
fn a_later_win_beats_earlier_failures() {
    let timer = ManualTimer::new();
    let backend = Backend::new(
        &timer,
        [Step::err(1, 100), Step::err(1, 101), Step::ok(1, 2)],
    );
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Ok(2));
}

// --- Classification ------------------------------------------------------------------

#[test]
fn a_non_retryable_error_ends_the_race() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::err(1, 404), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).when(|e: &u32| *e != 404));

    assert_eq!(call.run(&timer), Err(404));
    assert_eq!(timer.now(), ms(11));
    assert_eq!(backend.started(), 2);
    assert_eq!(
        backend.alive(),
        0,
        "the original was dropped with the fatal error"
    );
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn a_retryable_error_keeps_racing() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(1, 503), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).when(|e: &u32| *e == 503));
    assert_eq!(call.run(&timer), Ok(1));
}

#[test]
fn classify_can_retry_an_ok_and_win_an_err() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(1, 0), Step::err(1, 7)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(
        |r: &Result<u32, u32>| match r {
            Ok(0) => Verdict::Retry,
            _ => Verdict::Win,
        },
    ));
    assert_eq!(call.run(&timer), Err(7));
    assert_eq!(policy.stats().wins, 1);
}

#[test]
fn withdrawn_copies_are_neither_wins_nor_failures() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(1, 0), Step::err(1, 101), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(
        |r: &Result<u32, u32>| match r {
            Ok(0) => Verdict::Withdraw,
            Ok(_) => Verdict::Win,
            Err(_) => Verdict::Retry,
        },
    ));
    // Copy 0 withdraws, which starts copy 1 at once; copy 1 fails, copy 2 wins.
    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(1)), (2, ms(2))]);
}

#[test]
fn a_race_of_withdrawals_returns_the_lowest_index_one_and_a_failure_beats_them() {
    let timer = ManualTimer::new();
    let withdraw_all = |r: &Result<u32, u32>| match r {
        Err(101) => Verdict::Retry,
        _ => Verdict::Withdraw,
    };

    let backend = Backend::new(&timer, [Step::ok(5, 0), Step::ok(1, 1)]);
    let policy = Policy::builder()
        .max_copies(2)
        .parallel()
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(withdraw_all));
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(policy.stats().failures, 1);

    let backend = Backend::new(&timer, [Step::ok(1, 0), Step::err(5, 101)]);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(withdraw_all));
    assert_eq!(call.run(&timer), Err(101));
}

// --- Poll after completion -----------------------------------------------------------

#[test]
#[should_panic(expected = "`Hedge` polled after completion")]
fn polling_after_completion_panics() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new((|| async { Ok::<_, ()>(()) }).hedged(&policy));
    assert!(call.poll().is_ready());
    let _ = call.poll();
}

#[test]
fn is_terminated_once_ready() {
    use futures::future::FusedFuture;
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(1, 0)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert!(!call.future.is_terminated());
    assert_eq!(call.poll(), Poll::Pending);
    assert!(!call.future.is_terminated());
    assert_eq!(call.run(&timer), Ok(0));
    assert!(call.future.is_terminated());
}
