//! `Hedge::attempt_timeout` and `Hedge::timeout`, driven by `ManualTimer` and polled only
//! when woken.

mod common;

use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use common::{ms, policy, Backend, Driver, Failure, Step};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Hedgeable, Policy, Verdict};

fn backend(timer: &ManualTimer, steps: impl IntoIterator<Item = Step>) -> Backend<Failure> {
    Backend::with_errors(timer, steps)
}

// --- Attempt timeout --------------------------------------------------------------------

#[test]
fn attempt_timeout_drops_a_slow_copy_and_starts_the_next_at_once() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::ok(5, 1)]);
    let policy = policy(&timer, 2, 100);
    let mut call = Driver::new(backend.factory().hedged(&policy).attempt_timeout(ms(20)));

    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(25));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(20))]);
    assert_eq!(backend.dropped(), 2, "the timed-out original is gone");
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.hedge_wins), (1, 1));
}

#[test]
fn attempt_timeout_returns_elapsed_when_every_copy_times_out() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::never()]);
    let policy = policy(&timer, 2, 100);
    let mut call = Driver::new(backend.factory().hedged(&policy).attempt_timeout(ms(20)));

    assert_eq!(call.run(&timer), Err(Failure::Elapsed));
    assert_eq!(timer.now(), ms(40));
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn a_timed_out_copy_is_kept_like_any_failure_and_the_lowest_index_wins() {
    let timer = ManualTimer::new();
    // The original times out at 20 ms; the hedge it starts fails for real at 25 ms.
    let backend = backend(&timer, [Step::never(), Step::err(5, 7)]);
    let policy = policy(&timer, 2, 100);
    let mut call = Driver::new(backend.factory().hedged(&policy).attempt_timeout(ms(20)));
    assert_eq!(call.run(&timer), Err(Failure::Elapsed), "copy 0's failure");
}

#[test]
fn a_timed_out_copy_is_not_shown_to_the_classifier() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::ok(5, 1)]);
    let policy = policy(&timer, 2, 100);
    let judged = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&judged);
    let call = backend
        .factory()
        .hedged(&policy)
        .classify(move |r: &Result<u32, Failure>| {
            seen.lock().unwrap().push(*r);
            Verdict::Win
        })
        .attempt_timeout(ms(20));
    assert_eq!(Driver::new(call).run(&timer), Ok(1));
    assert_eq!(*judged.lock().unwrap(), vec![Ok(1)]);
}

#[test]
fn each_copy_gets_its_own_attempt_timeout_from_its_start() {
    let timer = ManualTimer::new();
    // Copy 0 at 0 (times out at 30), copy 1 at 10 (would time out at 40, answers at 35).
    let backend = backend(&timer, [Step::never(), Step::ok(25, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).attempt_timeout(ms(30)));

    assert_eq!(call.run_until(&timer, ms(30)), None);
    assert_eq!(
        backend.dropped(),
        1,
        "copy 0 timed out at 30 ms, copy 1 runs on"
    );
    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(35));
}

#[test]
fn an_answer_at_the_attempt_deadline_wins() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::ok(20, 0)]);
    let policy = policy(&timer, 2, 100);
    let mut call = Driver::new(backend.factory().hedged(&policy).attempt_timeout(ms(20)));
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(backend.started(), 1);
}

#[test]
fn a_zero_attempt_timeout_gives_each_copy_its_first_poll_only() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::ok(0, 1), Step::never()]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(
        backend
            .factory()
            .hedged(&policy)
            .attempt_timeout(Duration::ZERO),
    );
    // Copy 0 times out in its first poll; copy 1 starts at once and is ready at once.
    assert_eq!(call.poll(), Poll::Ready(Ok(1)));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(0))]);

    let backend = backend_all_pending(&timer);
    let mut call = Driver::new(
        backend
            .factory()
            .hedged(&policy)
            .attempt_timeout(Duration::ZERO),
    );
    assert_eq!(call.poll(), Poll::Ready(Err(Failure::Elapsed)));
    assert_eq!(
        backend.started(),
        3,
        "each copy polled once, then timed out"
    );
    assert_eq!(backend.polls(), 3);
}

fn backend_all_pending(timer: &ManualTimer) -> Backend<Failure> {
    backend(timer, [Step::never(), Step::never(), Step::never()])
}

#[test]
fn fallback_with_attempt_timeout_never_runs_two_copies_at_once() {
    let timer = ManualTimer::new();
    let backend = backend(
        &timer,
        [
            Step::never(),
            Step::err(5, 3),
            Step::never(),
            Step::ok(1, 3),
        ],
    );
    let policy = Policy::builder()
        .max_copies(4)
        .fallback()
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy).attempt_timeout(ms(20)));

    assert_eq!(call.run(&timer), Ok(3));
    // Copy 0 times out at 20, copy 1 fails at 25, copy 2 times out at 45, copy 3 wins.
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0)), (1, ms(20)), (2, ms(25)), (3, ms(45))]
    );
    assert_eq!(backend.most_alive(), 1, "never two copies in flight");
}

#[test]
fn a_huge_attempt_timeout_never_fires() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let call = backend
        .factory()
        .hedged(&policy)
        .attempt_timeout(Duration::MAX)
        .timeout(Duration::MAX);
    assert_eq!(Driver::new(call).run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(11));
}

// --- Total timeout ----------------------------------------------------------------------

#[test]
fn timeout_returns_elapsed_when_no_copy_failed() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::never()]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(ms(30)));

    assert_eq!(call.run(&timer), Err(Failure::Elapsed));
    assert_eq!(timer.now(), ms(30));
    assert_eq!(backend.dropped(), 2, "every copy dropped at the deadline");
    assert_eq!(timer.live_sleeps(), 0);
}

#[test]
fn timeout_returns_the_lowest_index_failure_so_far() {
    let timer = ManualTimer::new();
    // Copy 0 fails at 5 (copy 1 starts at once, copy 2 at 15); then nothing answers.
    let backend = backend(&timer, [Step::err(5, 9), Step::never(), Step::never()]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(ms(30)));

    assert_eq!(call.run(&timer), Err(Failure::Code(9)));
    assert_eq!(timer.now(), ms(30));
}

#[test]
fn timeout_returns_real_failures_only_not_withdrawn_results() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::ok(5, 0), Step::never()]);
    let policy = policy(&timer, 2, 10);
    let call = backend
        .factory()
        .hedged(&policy)
        .classify(|r: &Result<u32, Failure>| match r {
            Ok(0) => Verdict::Withdraw,
            _ => Verdict::Win,
        })
        .timeout(ms(30));
    assert_eq!(Driver::new(call).run(&timer), Err(Failure::Elapsed));
}

#[test]
fn an_answer_at_the_total_deadline_wins() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::ok(30, 0)]);
    let policy = policy(&timer, 2, 100);
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(ms(30)));
    assert_eq!(call.run(&timer), Ok(0));
}

#[test]
fn a_zero_timeout_lets_a_ready_original_win() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::ok(0, 0)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(Duration::ZERO));
    assert_eq!(call.poll(), Poll::Ready(Ok(0)));
}

#[test]
fn a_zero_timeout_returns_elapsed_at_the_first_poll_without_starting_a_copy() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::ok(0, 1)]);
    let policy = Policy::builder()
        .max_copies(2)
        .parallel()
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(Duration::ZERO));
    assert_eq!(call.poll(), Poll::Ready(Err(Failure::Elapsed)));
    assert_eq!(backend.started(), 1, "no hedge after the deadline");
    assert_eq!(policy.stats().hedges, 0);
}

#[test]
fn timeouts_and_the_schedule_share_the_one_timer() {
    let timer = ManualTimer::new();
    let backend = backend(&timer, [Step::never(), Step::never(), Step::never()]);
    let policy = policy(&timer, 3, 10);
    let call = backend
        .factory()
        .hedged(&policy)
        .attempt_timeout(ms(25))
        .timeout(ms(60));
    let mut call = Driver::new(call);
    assert_eq!(call.run(&timer), Err(Failure::Elapsed));
    // Copies start at 0, 10 and 20 by the schedule and time out at 25, 35 and 45: the
    // call ends then, before its 60 ms deadline, with copy 0's failure.
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10)), (2, ms(20))]);
    assert_eq!(timer.now(), ms(45));
    // The backend's copies make one sleep each; the call made exactly one more.
    assert_eq!(timer.sleeps_created(), 3 + 1);
}

// --- The call's clock and deadline ------------------------------------------------------

/// The call's clock starts once its original said `Pending`: the time the factory and
/// that first poll take (30 ms here, say to sign a request) is not counted.
#[test]
fn the_total_timeout_counts_from_the_originals_first_pending() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(100))
        .timer(timer.clone())
        .build();
    let slow = timer.clone();
    let factory = move |_: Attempt| {
        slow.advance(ms(30)); // the factory takes 30 ms of the call's time
        std::future::pending::<Result<u32, Failure>>()
    };
    let mut call = Driver::new(factory.hedged(&policy).timeout(ms(20)));
    assert_eq!(call.run(&timer), Err(Failure::Elapsed));
    assert_eq!(
        timer.now(),
        ms(50),
        "20 ms after the clock started at 30 ms"
    );
}

/// Three copies 20 ms apart.
fn deadline_policy(timer: &ManualTimer, replace_failed: bool) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(3)
        .delay(ms(20))
        .replace_failed(replace_failed)
        .timer(timer.clone())
        .build()
}

#[test]
fn a_copy_due_by_the_schedule_at_the_total_deadline_is_not_started() {
    // The control: copy 1 is due at 20 ms, the deadline is 20 ms.
    let timer = ManualTimer::new();
    let policy = deadline_policy(&timer, false);
    let backend = backend(&timer, [Step::never(), Step::ok(1, 1)]);
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(ms(20)));
    assert_eq!(call.run(&timer), Err(Failure::Elapsed));
    assert_eq!(backend.started(), 1);
    assert_eq!(policy.stats().hedges, 0);
}

/// A copy a failure would start at the deadline is not started either: it would take a
/// token, run `on_hedge`, count as a hedge and send its request, only to be dropped in
/// the same poll.
#[test]
fn a_failure_at_the_total_deadline_starts_no_copy() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(100))
        .timer(timer.clone())
        .build();
    // The original fails at 20 ms, the call's deadline.
    let backend = backend(&timer, [Step::err(20, 7), Step::ok(1, 1)]);
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(ms(20)));
    assert_eq!(call.run(&timer), Err(Failure::Code(7)));
    assert_eq!(
        (backend.started(), policy.stats().hedges),
        (1, 0),
        "no copy starts at the deadline: {:?}",
        backend.starts()
    );
}

#[test]
fn a_failure_replaced_at_the_total_deadline_starts_no_copy() {
    let timer = ManualTimer::new();
    let policy = deadline_policy(&timer, true);
    // Copy 1 starts at 20 ms and fails at 30 ms, the deadline, while the original still
    // runs: `replace_failed` owes a copy at the deadline.
    let backend = backend(&timer, [Step::never(), Step::err(10, 7), Step::ok(1, 2)]);
    let mut call = Driver::new(backend.factory().hedged(&policy).timeout(ms(30)));
    assert_eq!(call.run(&timer), Err(Failure::Code(7)));
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0)), (1, ms(20))],
        "no replacement starts at the deadline"
    );
}
