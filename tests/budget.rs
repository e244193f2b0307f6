//! `Budget`: a shared token bucket bounds the extra copies, driven on `ManualTimer`: calls
//! that need no copy earn, what it saves follows the traffic of the last second.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use common::{ms, Driver};
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Budget, Hedgeable, Policy};

type Copy = Pin<Box<dyn Future<Output = Result<usize, usize>> + Send>>;

/// A copy that ends after `latency`: `Ok(index)`, or `Err(index)` if `fails`.
fn copy(timer: &ManualTimer, index: usize, latency: Duration, fails: bool) -> Copy {
    let sleep = timer.sleep(latency);
    Box::pin(async move {
        sleep.await;
        if fails {
            Err(index)
        } else {
            Ok(index)
        }
    })
}

/// A factory whose original takes `original` and whose hedges take `hedge`.
fn factory(
    timer: &ManualTimer,
    original: Duration,
    hedge: Duration,
) -> impl FnMut(Attempt) -> Copy {
    let timer = timer.clone();
    move |a: Attempt| {
        copy(
            &timer,
            a.index(),
            if a.index() == 0 { original } else { hedge },
            false,
        )
    }
}

fn policy(timer: &ManualTimer, budget: &Budget) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(budget)
        .timer(timer.clone())
        .build()
}

/// Starts three calls whose originals take 100 ms and whose hedges take `hedge`, then
/// moves the clock to the 10 ms delay, when each asks the budget for its hedge. Every
/// call is still pending; they stay alive, holding their slots, until dropped.
fn three_calls_past_the_delay<'p>(
    timer: &ManualTimer,
    policy: &'p Policy<ManualTimer>,
    hedge: Duration,
) -> Vec<Driver<impl Future<Output = Result<usize, usize>> + 'p>> {
    let mut calls: Vec<_> = (0..3)
        .map(|_| Driver::new(factory(timer, ms(100), hedge).hedged(policy)))
        .collect();
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    timer.advance(ms(10));
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    calls
}

/// One call whose original takes 100 ms and whose hedge takes 1 ms: `Ok(1)` after 11 ms
/// when the hedge is allowed, `Ok(0)` after 100 ms when it is refused.
fn slow_call(timer: &ManualTimer, policy: &Policy<ManualTimer>) -> Result<usize, usize> {
    Driver::new(factory(timer, ms(100), ms(1)).hedged(policy)).run(timer)
}

#[test]
fn a_hedge_without_a_token_is_not_started() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0);
    let policy = policy(&timer, &budget);

    assert_eq!(
        slow_call(&timer, &policy),
        Ok(1),
        "the burst pays for one hedge"
    );
    let start = timer.now();
    assert_eq!(
        slow_call(&timer, &policy),
        Ok(0),
        "no token: the original runs alone"
    );
    assert_eq!(timer.now() - start, ms(100));
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.budget_denied), (1, 1));
    assert_eq!(budget.tokens(), 0.0);
}

/// One call answered at once: it asks the budget nothing and earns.
fn instant_call(policy: &Policy<ManualTimer>) {
    let answer: Result<u8, ()> = futures::executor::block_on((|| async { Ok(0) }).hedged(policy));
    assert_eq!(answer, Ok(0));
}

#[test]
fn each_call_that_needs_no_copy_deposits_the_ratio() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.5).burst(1.0);
    let policy = policy(&timer, &budget);

    // Full at the start: the first slow call hedges.
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    // Two calls answered at once earn a whole token between them...
    instant_call(&policy);
    instant_call(&policy);
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    // ...while slow calls, hedged or refused, earn nothing.
    let winners: Vec<_> = (0..4)
        .map(|_| slow_call(&timer, &policy).unwrap())
        .collect();
    assert_eq!(winners, [0, 0, 0, 0]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.budget_denied), (8, 2, 4));
}

/// Starts `count` calls whose originals and hedges take 100 ms, moves the clock 10 ms to
/// their delay, when each asks the budget at the same instant, and keeps them alive.
fn calls_past_the_delay<'p>(
    timer: &ManualTimer,
    policy: &'p Policy<ManualTimer>,
    count: usize,
) -> Vec<Driver<impl Future<Output = Result<usize, usize>> + 'p>> {
    let mut calls: Vec<_> = (0..count)
        .map(|_| Driver::new(factory(timer, ms(100), ms(100)).hedged(policy)))
        .collect();
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    timer.advance(ms(10));
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    calls
}

#[test]
fn a_brownout_spends_the_savings_then_holds_to_the_floor() {
    // Every call asks for a copy: nothing is earned, so after the 10 tokens the bucket
    // starts with only the floor lets copies through, 2 a second.
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1).min_per_second(2);
    let policy = policy(&timer, &budget);
    let mut alive = Vec::new();
    alive.push(calls_past_the_delay(&timer, &policy, 10));
    assert_eq!(policy.stats().hedges, 10);
    for second in 1..=3 {
        alive.push(calls_past_the_delay(&timer, &policy, 5));
        assert_eq!(policy.stats().hedges, 10 + 2 * second, "second {second}");
        timer.advance(Duration::from_secs(1));
    }
    assert_eq!(policy.stats().budget_denied, 3 * 3);
    drop(alive);
}

#[test]
fn the_savings_follow_the_traffic_of_the_last_second() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let policy = policy(&timer, &budget);
    // A thousand calls within a second earn 100 tokens, and the bucket may save 100.
    for _ in 0..1_000 {
        instant_call(&policy);
    }
    let _calls = calls_past_the_delay(&timer, &policy, 150);
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.budget_denied), (100, 50));
}

#[test]
fn a_quiet_spell_saves_no_more_than_a_second_of_its_calls() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let policy = policy(&timer, &budget);
    // A thousand calls credited ten seconds later count as a tenth toward the last
    // second's traffic: 100 calls may save 10 tokens, the least the bucket saves.
    for _ in 0..1_000 {
        instant_call(&policy);
    }
    timer.advance(Duration::from_secs(10));
    let _calls = calls_past_the_delay(&timer, &policy, 23);
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.budget_denied), (10, 13));
}

#[test]
fn savings_expire_when_the_traffic_falls() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let policy = policy(&timer, &budget);
    for _ in 0..1_000 {
        instant_call(&policy);
    }
    // One slow call credits the thousand: the bucket holds 100, spends one.
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(budget.tokens(), 99.0);
    // Two seconds later the last second saw no calls: the savings fall to the least kept.
    timer.advance(Duration::from_secs(2));
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(budget.tokens(), 9.0);
}

#[test]
fn deposits_are_capped_at_the_burst() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).burst(2.0);
    let policy = policy(&timer, &budget);

    // Ten instant calls would deposit 10 tokens; the bucket holds 2.
    for _ in 0..10 {
        let answer: Result<u8, ()> =
            futures::executor::block_on((|| async { Ok(0) }).hedged(&policy));
        assert_eq!(answer, Ok(0));
    }
    // Three concurrent slow calls: 13 calls' worth of deposits are credited...
    let _calls = three_calls_past_the_delay(&timer, &policy, ms(100));
    // ...but the bucket holds 2: the first two hedge, the third is refused.
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.budget_denied), (2, 1));
}

#[test]
fn calls_that_need_no_hedge_do_no_work_for_the_budget() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.25).burst(1.0);
    let policy = policy(&timer, &budget);
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(budget.tokens(), 0.0);

    for _ in 0..4 {
        let answer: Result<u8, ()> =
            futures::executor::block_on((|| async { Ok(0) }).hedged(&policy));
        assert_eq!(answer, Ok(0));
    }
    assert_eq!(budget.tokens(), 0.0, "the instant calls are credited later");
    // The next hedge credits the four calls (and itself): a token is there.
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(policy.stats().budget_denied, 0);
}

#[test]
fn a_copy_started_by_a_failure_draws_a_token_too() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0);
    let policy = policy(&timer, &budget);
    let failing = |timer: &ManualTimer| {
        let timer = timer.clone();
        move |a: Attempt| copy(&timer, a.index(), ms(1), a.index() == 0)
    };

    // The original fails at 1 ms; the next copy starts at once, on the burst's token.
    assert_eq!(
        Driver::new(failing(&timer).hedged(&policy)).run(&timer),
        Ok(1)
    );
    // Again: no token, so the original's error is returned without another copy.
    assert_eq!(
        Driver::new(failing(&timer).hedged(&policy)).run(&timer),
        Err(0)
    );
    let stats = policy.stats();
    assert_eq!(
        (stats.hedges, stats.budget_denied, stats.failures),
        (1, 1, 1)
    );
}

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
fn one_budget_is_shared_by_every_policy_given_it() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0);
    let reads = policy(&timer, &budget);
    let writes = policy(&timer, &budget.clone());

    assert_eq!(slow_call(&timer, &reads), Ok(1));
    assert_eq!(
        slow_call(&timer, &writes),
        Ok(0),
        "the other policy spent the token"
    );
    assert_eq!(reads.stats().budget_denied, 0);
    assert_eq!(writes.stats().budget_denied, 1);
}

#[test]
fn a_policy_without_a_budget_is_unbounded() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .timer(timer.clone())
        .build();
    for _ in 0..20 {
        assert_eq!(slow_call(&timer, &policy), Ok(1));
    }
    assert_eq!(policy.stats().budget_denied, 0);
    assert!(policy.budget().is_none());
}

// --- Clamps ---------------------------------------------------------------------------

#[test]
fn a_negative_ratio_is_clamped_to_zero() {
    let timer = ManualTimer::new();
    let budget = Budget::new(-3.0).burst(1.0);
    assert_eq!(budget.ratio(), 0.0);
    let policy = policy(&timer, &budget);
    // Only the initial burst can be spent; a negative deposit never drains it below.
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(slow_call(&timer, &policy), Ok(0));
    assert_eq!(budget.tokens(), 0.0);
}

#[test]
fn a_nan_ratio_is_clamped_to_zero() {
    let timer = ManualTimer::new();
    let budget = Budget::new(f64::NAN).burst(1.0);
    assert_eq!(budget.ratio(), 0.0);
    let policy = policy(&timer, &budget);
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(slow_call(&timer, &policy), Ok(0));
}

#[test]
fn an_infinite_ratio_fills_the_bucket_on_every_earning_call() {
    let timer = ManualTimer::new();
    let budget = Budget::new(f64::INFINITY).burst(1.0);
    let policy = policy(&timer, &budget);
    for _ in 0..5 {
        assert_eq!(slow_call(&timer, &policy), Ok(1));
        instant_call(&policy);
    }
    assert_eq!(
        budget.tokens(),
        0.0,
        "the last call is credited at the next ask"
    );
}

#[test]
fn huge_calls_and_ratios_saturate_the_savings() {
    let timer = ManualTimer::new();
    let budget = Budget::new(f64::MAX);
    let policy = policy(&timer, &budget);
    for _ in 0..3 {
        instant_call(&policy);
    }
    // Three calls earn u64::MAX units each; the bucket saturates and still counts.
    let _calls = three_calls_past_the_delay(&timer, &policy, ms(100));
    assert_eq!(policy.stats().hedges, 3);
    assert!(budget.tokens() > 1e12, "{}", budget.tokens());
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
fn a_burst_below_one_token_is_clamped_to_one() {
    let timer = ManualTimer::new();
    for burst in [0.0, -1.0, 0.5] {
        let budget = Budget::new(0.0).burst(burst);
        assert_eq!(budget.tokens(), 1.0, "burst {burst}");
        let policy = policy(&timer, &budget);
        assert_eq!(slow_call(&timer, &policy), Ok(1));
        assert_eq!(slow_call(&timer, &policy), Ok(0));
    }
    assert_eq!(
        Budget::new(0.0).burst(f64::NAN).tokens(),
        10.0,
        "NaN is the default"
    );
}

#[test]
fn the_budget_debug_shows_its_state() {
    let budget = Budget::new(0.05).max_outstanding(3);
    let shown = format!("{budget:?}");
    assert!(
        shown.contains("ratio: 0.05") && shown.contains("max_outstanding: 3"),
        "{shown}"
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

// --- Throttling (gRPC A6) ---------------------------------------------------------------

/// A call whose every copy fails at 1 ms (`Err(index)`), under `policy`.
fn failing_call(timer: &ManualTimer, policy: &Policy<ManualTimer>) -> Result<usize, usize> {
    let failing = {
        let timer = timer.clone();
        move |a: Attempt| copy(&timer, a.index(), ms(1), true)
    };
    Driver::new(failing.hedged(policy)).run(timer)
}

#[test]
fn throttling_starts_full_and_stops_hedging_at_half_its_tokens() {
    let timer = ManualTimer::new();
    let budget = Budget::throttling(10.0, 0.1);
    let policy = policy(&timer, &budget);
    assert_eq!(budget.tokens(), 10.0);

    // Each call: the original fails (one token), then its hedge fails (another).
    assert_eq!(failing_call(&timer, &policy), Err(0));
    assert_eq!(failing_call(&timer, &policy), Err(0));
    assert_eq!(budget.tokens(), 6.0);
    assert_eq!(policy.stats().hedges, 2);
    // The third call's original fails: 5 tokens left, at half: no hedge.
    assert_eq!(failing_call(&timer, &policy), Err(0));
    assert_eq!(budget.tokens(), 5.0);
    assert_eq!(
        (policy.stats().hedges, policy.stats().budget_denied),
        (2, 1)
    );
}

#[test]
fn throttling_earns_token_ratio_back_per_winning_copy_up_to_max() {
    let timer = ManualTimer::new();
    let budget = Budget::throttling(10.0, 0.5);
    let policy = policy(&timer, &budget);
    assert_eq!(failing_call(&timer, &policy), Err(0));
    assert_eq!(budget.tokens(), 8.0);
    for _ in 0..3 {
        let answer: Result<u8, ()> =
            futures::executor::block_on((|| async { Ok(1) }).hedged(&policy));
        assert_eq!(answer, Ok(1));
    }
    assert_eq!(budget.tokens(), 9.5);
    for _ in 0..3 {
        let _ = futures::executor::block_on((|| async { Ok::<_, ()>(1) }).hedged(&policy));
    }
    assert_eq!(budget.tokens(), 10.0, "capped at max_tokens");
}

#[test]
fn throttling_counts_neither_fatal_nor_withdrawn_copies() {
    let timer = ManualTimer::new();
    let budget = Budget::throttling(10.0, 1.0);
    let policy = policy(&timer, &budget);
    let fatal = (|| async { Err::<u8, u8>(1) })
        .hedged(&policy)
        .when(|_| false);
    assert_eq!(futures::executor::block_on(fatal), Err(1));
    let withdrawn = (|| async { Ok::<u8, u8>(1) })
        .hedged(&policy)
        .max_copies(1)
        .classify(|_: &Result<u8, u8>| hedging::Verdict::Withdraw);
    assert_eq!(futures::executor::block_on(withdrawn), Ok(1));
    assert_eq!(budget.tokens(), 10.0);
}

#[test]
fn throttling_settings_are_clamped_to_grpc_ranges() {
    assert_eq!(Budget::throttling(5000.0, 0.1).tokens(), 1000.0);
    assert_eq!(Budget::throttling(0.0, 0.1).tokens(), 0.001);
    assert_eq!(Budget::throttling(f64::NAN, 0.1).tokens(), 0.001);
    assert_eq!(Budget::throttling(10.0, -1.0).ratio(), 0.001);
    assert_eq!(Budget::throttling(10.0, f64::NAN).ratio(), 0.001);
    assert!(format!("{:?}", Budget::throttling(10.0, 0.1)).contains("max_tokens: 10.0"));
}

// --- min_per_second ---------------------------------------------------------------------

#[test]
fn min_per_second_lets_hedges_through_an_empty_bucket() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0).min_per_second(2);
    let policy = policy(&timer, &budget);
    // The burst's token, then the floor's two for this second, then a refusal.
    for _ in 0..3 {
        assert_eq!(slow_call(&timer, &policy), Ok(1));
    }
    assert_eq!(
        slow_call(&timer, &policy),
        Ok(0),
        "the floor is spent for now"
    );
    assert_eq!(policy.stats().budget_denied, 1);
    // A quiet second later, two more.
    timer.advance(Duration::from_secs(1));
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(slow_call(&timer, &policy), Ok(0));
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

#[test]
fn a_call_whose_copy_1_started_without_asking_earns_nothing_once_it_asks() {
    // A declining factory that panics making copy 1, under catch_unwind, starts no copy
    // and asks the budget nothing; copy 2 then asks, and from then on the call earns
    // nothing, whichever copy it first asked for.
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).burst(10.0);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .catch_unwind(true)
        .budget(&budget)
        .timer(timer.clone())
        .build();
    let factory = |attempt: Attempt| -> Option<Copy> {
        match attempt.index() {
            0 => Some(Box::pin(std::future::pending())),
            1 => panic!("the factory of copy 1 fails"),
            _ => Some(Box::pin(async { Ok(2) })),
        }
    };
    assert_eq!(Driver::new(factory.hedged(&policy)).run(&timer), Ok(2));
    assert_eq!(budget.tokens(), 9.0);
    // The next ask credits the ended call: it asked, so it earned nothing.
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(budget.tokens(), 8.0);
}
