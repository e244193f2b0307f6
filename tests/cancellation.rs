//! Dropping a `Hedge` drops every copy and the timer, at every point of the race.

mod common;

use std::task::Poll;

use common::{ms, Backend, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Hedgeable, Policy};

fn policy(timer: &ManualTimer, max_copies: usize) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(ms(10))
        .timer(timer.clone())
        .build()
}

#[test]
fn dropping_the_hedge_drops_every_copy_and_the_timer() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::never()]);
    let policy = policy(&timer, 4);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run_until(&timer, ms(25)), None);
    assert_eq!((backend.started(), backend.alive()), (3, 3));
    assert_eq!(
        timer.live_sleeps(),
        3 + 1,
        "three copy sleeps and the hedge timer"
    );

    drop(call);
    assert_eq!(backend.alive(), 0);
    assert_eq!(timer.live_sleeps(), 0);
}

#[test]
fn dropping_before_the_first_hedge_drops_the_original_and_the_timer() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(1, 1)]);
    let policy = policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(
        timer.sleeps_created(),
        2,
        "the original's sleep and the hedge timer"
    );
    drop(call);
    assert_eq!((backend.started(), backend.alive()), (1, 0));
    assert_eq!(timer.live_sleeps(), 0);
    timer.advance(ms(100));
    assert_eq!(backend.started(), 1, "no hedge starts after the drop");
}

#[test]
fn a_dropped_call_counts_as_cancelled() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never()]);
    let policy = policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run_until(&timer, ms(15)), None);
    drop(call);

    let stats = policy.stats();
    assert_eq!((stats.calls, stats.cancelled, stats.hedges), (1, 1, 1));
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
}

#[test]
fn dropping_a_finished_hedge_is_not_a_cancellation() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(1, 0)]);
    let policy = policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Ok(0));
    drop(call);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.cancelled), (1, 1, 0));
}

#[test]
fn finished_copies_are_dropped_when_they_finish_not_when_the_call_ends() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::err(1, 101), Step::never()]);
    let policy = policy(&timer, 3);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run_until(&timer, ms(12)), None);
    assert_eq!(backend.started(), 2);
    assert_eq!(
        backend.dropped(),
        1,
        "copy 1 failed at 11 and is gone already"
    );
    drop(call);
    assert_eq!(backend.alive(), 0);
}

#[test]
fn dropping_the_policy_while_a_call_with_an_owned_clone_runs_is_fine() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(1, 1)]);
    let policy = policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(policy.clone()));
    let stats_view = policy.clone();
    drop(policy);
    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(stats_view.stats().hedge_wins, 1);
}

/// A copy that never answers; the one made with `panics` panics when it is dropped.
struct NeverAnswers {
    panics: bool,
}

impl std::future::Future for NeverAnswers {
    type Output = Result<u32, ()>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> Poll<Result<u32, ()>> {
        Poll::Pending
    }
}

impl Drop for NeverAnswers {
    fn drop(&mut self) {
        if self.panics {
            panic!("a copy's drop panicked");
        }
    }
}

#[test]
fn a_copy_whose_drop_panics_still_gives_back_every_slot_and_counts_the_cancel() {
    let timer = ManualTimer::new();
    let budget = hedging::Budget::new(1.0).burst(10.0).max_outstanding(4);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    let factory = |attempt: hedging::Attempt| NeverAnswers {
        panics: attempt.index() == 0,
    };
    let mut call = Driver::new(factory.hedged(&policy));
    assert_eq!(call.run_until(&timer, ms(25)), None);
    assert_eq!(policy.stats().hedges, 2);
    assert_eq!(budget.outstanding(), 2, "both hedges hold a slot");

    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(call)));
    assert!(dropped.is_err(), "the copy's panic reaches the caller");
    assert_eq!(budget.outstanding(), 0, "no slot leaks");
    assert_eq!(policy.stats().cancelled, 1);
}

#[test]
fn dropping_a_call_whose_original_runs_alone_drops_it_and_counts_the_cancel() {
    // Hedging off: the original runs with no race and no timer behind it.
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never()]);
    let policy = policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy).max_copies(1));
    assert_eq!(call.run_until(&timer, ms(50)), None);
    assert_eq!(
        timer.sleeps_created(),
        1,
        "the original's own sleep, and no hedge timer"
    );
    assert_eq!((backend.started(), backend.alive()), (1, 1));

    drop(call);
    assert_eq!(backend.alive(), 0);
    assert_eq!(timer.live_sleeps(), 0);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.cancelled, stats.hedges), (1, 1, 0));
}

#[test]
fn an_original_running_alone_whose_drop_panics_still_counts_the_cancel() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 1);
    let factory = || NeverAnswers { panics: true };
    let mut call = Driver::new(factory.hedged(&policy));
    assert_eq!(call.run_until(&timer, ms(50)), None);

    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(call)));
    assert!(dropped.is_err(), "the copy's panic reaches the caller");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.cancelled), (1, 1));
}

#[test]
fn an_original_that_fails_after_running_alone_ends_the_call_with_its_error() {
    // Its race is made only when it fails: the error is kept and returned, and the call
    // counts as failed, with no hedge.
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(30, 7), Step::ok(1, 1)]);
    let policy = policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy).max_copies(1));
    assert_eq!(call.run(&timer), Err(7));
    assert_eq!((backend.started(), backend.alive()), (1, 0));
    assert_eq!(
        timer.now(),
        ms(30),
        "no timer moved the clock past the answer"
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 0));
}
