//! `Budget` shared: every policy given a budget funds it with the calls that asked for no
//! copy, whichever policy asks next, across threads; and a `parallel()` policy, whose
//! every call asks at its start, still hedges about `ratio` of its calls. On `ManualTimer`.

mod budget_support;
mod common;

use std::thread;

use budget_support::{calls_past_the_delay, factory, instant_call, policy, slow_call};
use common::{ms, Driver};
use hedging::timer::ManualTimer;
use hedging::{Budget, Hedgeable, Policy};

#[test]
fn two_policies_on_one_budget_across_threads_the_earner_s_calls_fund_the_other_s_hedges() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let (earner, hedger) = (policy(&timer, &budget), policy(&timer, &budget));
    thread::scope(|scope| {
        // A thousand calls that need no copy, on a thread of their own: 100 tokens.
        scope.spawn(|| (0..1_000).for_each(|_| instant_call(&earner)));
    });
    let stats = thread::scope(|scope| {
        scope
            .spawn(|| {
                // 150 calls ask at once: the 10 tokens the bucket starts with, then the
                // earner's 100, credited when the bucket runs short.
                let _calls = calls_past_the_delay(&timer, &hedger, 150);
                hedger.stats()
            })
            .join()
            .expect("the hedging thread")
    });
    assert_eq!((stats.hedges, stats.budget_denied), (110, 40));
    assert_eq!(earner.stats().hedges, 0, "the earner never asked");
    assert_eq!(budget.tokens(), 0.0);
}

#[test]
fn an_earner_and_a_hedger_running_at_once_on_two_threads_fund_and_spend_one_budget() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let (earner, hedger) = (policy(&timer, &budget), policy(&timer, &budget));
    // Ten calls ask at once, 10 ms apart: the clock stays within a second throughout,
    // so nothing the bucket saves expires.
    let ask = |batches: usize| {
        for _ in 0..batches {
            drop(calls_past_the_delay(&timer, &hedger, 10));
        }
    };
    thread::scope(|scope| {
        scope.spawn(|| (0..2_000).for_each(|_| instant_call(&earner)));
        scope.spawn(|| ask(25));
    });
    // Once the earner is done, enough asks to spend whatever it earned.
    ask(25);
    // 10 tokens to start with, 200 earned; the start's 10 may be capped away when the
    // first 200 land on them, and less than a token may be left.
    let hedges = hedger.stats().hedges;
    assert!((199..=210).contains(&hedges), "{hedges} hedges");
    assert_eq!(hedger.stats().budget_denied, 500 - hedges);
    assert_eq!(earner.stats().calls, 2_000);
}

#[test]
fn a_policy_that_hedges_rarely_has_its_savings_spent_before_its_next_ask() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let (rare, hedger) = (policy(&timer, &budget), policy(&timer, &budget));
    // The rare hedger asks once, then a thousand of its calls need no copy.
    assert_eq!(slow_call(&timer, &rare), Ok(1));
    (0..1_000).for_each(|_| instant_call(&rare));
    // The other policy spends the 9 tokens left, then the rare one's 100, which it never
    // asked to credit.
    let _calls = calls_past_the_delay(&timer, &hedger, 150);
    let stats = hedger.stats();
    assert_eq!((stats.hedges, stats.budget_denied), (109, 41));
    assert_eq!(rare.stats().hedges, 1);
}

#[test]
fn calls_of_a_policy_dropped_before_they_were_credited_still_fund_the_budget() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let hedger = policy(&timer, &budget);
    let earner = policy(&timer, &budget);
    (0..1_000).for_each(|_| instant_call(&earner));
    drop(earner);
    let _calls = calls_past_the_delay(&timer, &hedger, 150);
    let stats = hedger.stats();
    assert_eq!((stats.hedges, stats.budget_denied), (110, 40));
}

#[test]
fn a_policy_given_a_dropped_policy_s_place_starts_its_stats_at_zero() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1).burst(1.0);
    let first = policy(&timer, &budget);
    (0..10).for_each(|_| instant_call(&first));
    assert_eq!(slow_call(&timer, &first), Ok(1));
    drop(first);
    // The next policy counts on in the cells the first one left: its own stats are its own.
    let second = policy(&timer, &budget);
    assert_eq!(second.stats(), hedging::Stats::default());
    (0..3).for_each(|_| instant_call(&second));
    assert_eq!(second.stats().calls, 3);
    // The first policy's ten earners were credited at its ask: its one call that asked
    // earns nothing now, the second's three earn 0.3.
    assert_eq!(budget.tokens(), 0.0);
    assert_eq!(slow_call(&timer, &second), Ok(0), "0.3 tokens: refused");
    assert_eq!(second.stats().budget_denied, 1);
}

/// `calls` calls of a `parallel()` policy on `budget`, one after the other, each answered
/// after 5 ms by both copies; returns the policy, to read its stats.
fn parallel_calls(timer: &ManualTimer, budget: &Budget, calls: usize) -> Policy<ManualTimer> {
    let policy = Policy::builder()
        .max_copies(2)
        .parallel()
        .budget(budget)
        .timer(timer.clone())
        .build();
    for _ in 0..calls {
        let answer = Driver::new(factory(timer, ms(5), ms(5)).hedged(&policy)).run(timer);
        assert!(answer.is_ok());
    }
    policy
}

/// Asserts that `policy` hedged `ratio` of its `calls`, give or take the 10 tokens the
/// bucket starts with and one.
fn assert_hedged_about(policy: &Policy<ManualTimer>, calls: u64, ratio: f64) {
    let stats = policy.stats();
    let expected = ratio * calls as f64;
    assert!(
        (expected..=expected + 11.0).contains(&(stats.hedges as f64)),
        "{} hedges for {calls} calls at {ratio}",
        stats.hedges
    );
    assert_eq!(
        (stats.calls, stats.budget_denied),
        (calls, calls - stats.hedges)
    );
}

#[test]
fn a_parallel_policy_with_a_half_budget_hedges_about_half_its_calls() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.5);
    let policy = parallel_calls(&timer, &budget, 1_000);
    assert_hedged_about(&policy, 1_000, 0.5);
}

#[test]
fn a_parallel_policy_with_a_fifth_budget_hedges_about_a_fifth_of_its_calls() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.2);
    let policy = parallel_calls(&timer, &budget, 2_000);
    assert_hedged_about(&policy, 2_000, 0.2);
}

#[test]
fn a_parallel_policy_whose_every_call_is_slow_still_hedges_only_ratio_of_them() {
    // A brownout changes nothing for a policy that asks at every call's start: the bucket
    // still lets through `ratio` of its calls, no more.
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let policy = Policy::builder()
        .max_copies(2)
        .parallel()
        .budget(&budget)
        .timer(timer.clone())
        .build();
    for _ in 0..1_000 {
        let answer = Driver::new(factory(&timer, ms(500), ms(500)).hedged(&policy)).run(&timer);
        assert!(answer.is_ok());
    }
    assert_hedged_about(&policy, 1_000, 0.1);
}

#[test]
fn a_delayed_policy_sharing_a_parallel_one_s_budget_still_earns_nothing_when_it_asks() {
    // The parallel policy's calls earn; the delayed policy's slow calls, which asked after
    // waiting, do not: 20 parallel calls earn 10 tokens, 20 slow calls none.
    let timer = ManualTimer::new();
    let budget = Budget::new(0.5).burst(1.0);
    let delayed = policy(&timer, &budget);
    let parallel = parallel_calls(&timer, &budget, 20);
    // Each parallel call found the half token its predecessor earned: 1, then every
    // second one.
    assert_eq!(parallel.stats().hedges, 10);
    let winners: Vec<_> = (0..4).map(|_| slow_call(&timer, &delayed)).collect();
    assert_eq!(winners, [Ok(1), Ok(0), Ok(0), Ok(0)]);
}
