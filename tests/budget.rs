//! `Budget`: a shared token bucket bounds the extra copies, driven on `ManualTimer`: calls
//! that need no copy earn, what it saves follows the traffic of the last second.

mod budget_support;
mod common;

use std::time::Duration;

use budget_support::{
    calls_past_the_delay, copy, failing_call, instant_call, policy, slow_call,
    three_calls_past_the_delay, Copy,
};
use common::{ms, Driver};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Budget, Hedgeable, Policy};

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

// --- Throttling (gRPC A6) ---------------------------------------------------------------

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
