//! `Budget`: `max_outstanding`, the cap on extra copies in flight across calls, and how
//! refusals leave the copies running: slots are held exactly while their copies live.

mod budget_support;
mod common;

use std::task::Poll;

use budget_support::{copy, factory, policy, slow_call, three_calls_past_the_delay, Copy};
use common::{ms, Driver};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Budget, Hedgeable, Policy};

#[test]
fn max_outstanding_caps_extra_copies_in_flight_across_calls() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = policy(&timer, &budget);

    let mut first = Driver::new(factory(&timer, ms(100), ms(50)).hedged(&policy));
    let mut second = Driver::new(factory(&timer, ms(100), ms(50)).hedged(&policy));
    assert!(first.poll().is_pending() && second.poll().is_pending());
    timer.advance(ms(10));
    assert!(first.poll().is_pending() && second.poll().is_pending());
    assert_eq!(budget.outstanding(), 1);
    assert_eq!(
        (policy.stats().hedges, policy.stats().budget_denied),
        (1, 1)
    );

    // The hedge answers at 60 ms and gives its slot back.
    timer.advance(ms(50));
    assert_eq!(first.poll(), Poll::Ready(Ok(1)));
    assert_eq!(budget.outstanding(), 0);
    timer.advance(ms(40));
    assert_eq!(second.poll(), Poll::Ready(Ok(0)));
}

#[test]
fn a_refusal_for_want_of_a_token_takes_no_slot() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0).max_outstanding(5);
    let policy = policy(&timer, &budget);
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    let mut call = Driver::new(factory(&timer, ms(100), ms(1)).hedged(&policy));
    assert!(call.poll().is_pending());
    timer.advance(ms(10));
    assert!(call.poll().is_pending());
    assert_eq!(policy.stats().budget_denied, 1);
    // The slot taken before the token check was given back.
    assert_eq!(budget.outstanding(), 0);
    assert_eq!(call.run(&timer), Ok(0));
}

#[test]
fn a_zero_max_outstanding_is_clamped_to_one() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(0);
    let policy = policy(&timer, &budget);
    let _calls = three_calls_past_the_delay(&timer, &policy, ms(50));
    assert_eq!(budget.outstanding(), 1);
    assert_eq!(
        (policy.stats().hedges, policy.stats().budget_denied),
        (1, 2)
    );
}

#[test]
fn each_hedge_in_flight_holds_its_own_slot() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(5);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(factory(&timer, ms(100), ms(100)).hedged(&policy));
    assert!(call.poll().is_pending());
    timer.advance(ms(10));
    assert!(call.poll().is_pending());
    assert_eq!(budget.outstanding(), 1);
    // The second hedge is admitted while the first still holds its slot.
    timer.advance(ms(10));
    assert!(call.poll().is_pending());
    assert_eq!((budget.outstanding(), policy.stats().hedges), (2, 2));
    drop(call);
    assert_eq!(budget.outstanding(), 0);
}

#[test]
fn a_failed_hedge_gives_its_slot_back_while_its_call_goes_on() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = policy(&timer, &budget);
    // Call A: the original runs 100 ms; its hedge (sent at 10 ms) fails at 11 ms.
    let failing_hedge = {
        let timer = timer.clone();
        move |a: Attempt| {
            copy(
                &timer,
                a.index(),
                if a.index() == 0 { ms(100) } else { ms(1) },
                a.index() > 0,
            )
        }
    };
    let mut a = Driver::new(failing_hedge.hedged(&policy));
    assert!(a.poll().is_pending());
    timer.advance(ms(5));
    // Call B starts at 5 ms; its hedge is due at 15 ms.
    let mut b = Driver::new(factory(&timer, ms(100), ms(1)).hedged(&policy));
    assert!(b.poll().is_pending());
    timer.advance(ms(5));
    assert!(a.poll().is_pending());
    assert_eq!(budget.outstanding(), 1);
    timer.advance(ms(1));
    assert!(a.poll().is_pending(), "the original goes on");
    assert_eq!(
        budget.outstanding(),
        0,
        "the failed hedge's slot is free again"
    );
    timer.advance(ms(4));
    assert!(b.poll().is_pending());
    assert_eq!(
        budget.outstanding(),
        1,
        "call B's hedge took the freed slot"
    );
    assert_eq!(policy.stats().budget_denied, 0);
    assert_eq!(b.run(&timer), Ok(1));
    assert_eq!(a.run(&timer), Ok(0));
    assert_eq!(budget.outstanding(), 0);
}

#[test]
fn a_hedge_that_fails_on_its_launching_poll_gives_its_slot_back_on_that_poll() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = policy(&timer, &budget);
    // Call A: the original runs 1 s; its hedge fails on the very poll that starts it.
    let failing_at_once = {
        let timer = timer.clone();
        move |a: Attempt| -> Copy {
            if a.index() == 0 {
                copy(&timer, 0, ms(1000), false)
            } else {
                Box::pin(async move { Err(a.index()) })
            }
        }
    };
    let mut a = Driver::new(failing_at_once.hedged(&policy));
    assert!(a.poll().is_pending());
    timer.advance(ms(5));
    let mut b = Driver::new(factory(&timer, ms(1000), ms(1)).hedged(&policy));
    assert!(b.poll().is_pending());
    timer.advance(ms(5));
    assert!(a.poll().is_pending(), "A's original goes on");
    assert_eq!(budget.outstanding(), 0, "the failed hedge's slot came back");

    // Call B's hedge, due at 15 ms, takes the slot.
    timer.advance(ms(5));
    assert!(b.poll().is_pending());
    assert_eq!((budget.outstanding(), policy.stats().budget_denied), (1, 0));
    assert_eq!(b.run(&timer), Ok(1));
}

#[test]
fn a_cancelled_call_gives_its_slots_back() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(4);
    let policy = policy(&timer, &budget);
    let mut call = Driver::new(factory(&timer, ms(100), ms(100)).hedged(&policy));
    assert!(call.poll().is_pending());
    timer.advance(ms(10));
    assert!(call.poll().is_pending());
    assert_eq!(budget.outstanding(), 1);
    drop(call);
    assert_eq!(budget.outstanding(), 0);
    assert_eq!(policy.stats().cancelled, 1);
}

#[test]
fn a_losing_original_does_not_hold_a_slot() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = policy(&timer, &budget);
    // The original wins at 20 ms; the hedge (sent at 10 ms) is dropped and its slot freed.
    let answer = Driver::new(factory(&timer, ms(20), ms(100)).hedged(&policy)).run(&timer);
    assert_eq!(answer, Ok(0));
    assert_eq!(budget.outstanding(), 0);
}

#[test]
fn a_loser_is_dropped_before_its_slot_is_given_back() {
    use std::sync::{Arc, Mutex};

    /// Records the budget's outstanding count when the copy holding it is dropped.
    struct Witness(Budget, Arc<Mutex<Vec<usize>>>);
    impl Drop for Witness {
        fn drop(&mut self) {
            self.1.lock().unwrap().push(self.0.outstanding());
        }
    }

    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = policy(&timer, &budget);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let factory = {
        let (timer, budget, seen) = (timer.clone(), budget.clone(), Arc::clone(&seen));
        move |a: Attempt| -> Copy {
            let witness = Witness(budget.clone(), Arc::clone(&seen));
            // The original wins at 20 ms; the hedge, sent at 10 ms, loses.
            let copy = copy(
                &timer,
                a.index(),
                ms(if a.is_hedge() { 100 } else { 20 }),
                false,
            );
            Box::pin(async move {
                let _witness = witness;
                copy.await
            })
        }
    };
    assert_eq!(Driver::new(factory.hedged(&policy)).run(&timer), Ok(0));
    // The original finished first (the hedge held the slot); then the losing hedge was
    // dropped, still holding its slot until it was gone.
    assert_eq!(*seen.lock().unwrap(), vec![1, 1]);
    assert_eq!(budget.outstanding(), 0);
}

#[test]
fn a_copy_refused_twice_counts_one_denial() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0);
    let policy = policy(&timer, &budget);
    assert_eq!(slow_call(&timer, &policy), Ok(1), "spends the only token");

    // The hedge is refused when due at 10 ms, and again when the original fails at 20 ms.
    let failing = {
        let timer = timer.clone();
        move |a: Attempt| copy(&timer, a.index(), ms(20), true)
    };
    assert_eq!(Driver::new(failing.hedged(&policy)).run(&timer), Err(0));
    assert_eq!(policy.stats().budget_denied, 1, "one copy was refused");
}

#[test]
fn a_refusal_never_cancels_a_copy_in_flight() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    // The first hedge takes the only token; the second is refused at 20 ms. The original
    // and the first hedge run on, and the hedge wins at 60 ms.
    let mut call = Driver::new(factory(&timer, ms(100), ms(50)).hedged(&policy));
    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(60));
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.budget_denied), (1, 1));
}

#[test]
fn min_per_second_never_lifts_max_outstanding() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0)
        .burst(1.0)
        .max_outstanding(1)
        .min_per_second(100);
    let policy = policy(&timer, &budget);
    let calls = three_calls_past_the_delay(&timer, &policy, ms(50));
    assert_eq!(budget.outstanding(), 1);
    assert_eq!(
        (policy.stats().hedges, policy.stats().budget_denied),
        (1, 2)
    );
    drop(calls);
    assert_eq!(budget.outstanding(), 0);
}

#[test]
fn a_declining_factory_that_panics_gives_back_no_other_copy_s_slot() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = Policy::builder()
        .max_copies(4)
        .parallel()
        .catch_unwind(true)
        .budget(&budget)
        .timer(timer.clone())
        .build();
    // Copies 0 and 1 never answer; copy 2's factory panics before it asks the budget;
    // copy 3 would answer at once, if the budget let it start.
    let factory = |a: Attempt| -> Option<Copy> {
        match a.index() {
            2 => panic!("the factory of copy 2 fails"),
            3 => Some(Box::pin(async { Ok(3) })),
            _ => Some(Box::pin(std::future::pending())),
        }
    };
    let mut call = Driver::new(factory.hedged(&policy));
    assert_eq!(call.poll(), Poll::Pending, "copy 1 holds the only slot");
    assert_eq!(budget.outstanding(), 1);
    assert_eq!(
        policy.stats().hedges,
        2,
        "copies 1 and 2 started; 3 was refused"
    );
    drop(call);
    assert_eq!(budget.outstanding(), 0);
}
