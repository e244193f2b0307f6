//! `min_win_rate`: hedges that stop winning are withheld, but for probes, and resume when
//! a probe wins; driven call by call on `ManualTimer`.

mod common;

use std::future::Future;
use std::time::Duration;

use common::{ms, Driver};
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy, PolicyBuilder, Stats};

/// How the copies of a call answer: the original after `original` (an error with
/// `fails`), every other copy after `hedge`.
#[derive(Clone, Copy)]
struct Script {
    original: Duration,
    hedge: Duration,
    fails: bool,
}

/// Every copy is slow: the slowness is the request's own, and a hedge never wins.
const HEAVY: Script = Script {
    original: Duration::from_millis(50),
    hedge: Duration::from_millis(100),
    fails: false,
};

/// The original stalls and a hedge answers at once: hedges win.
const STALL: Script = Script {
    original: Duration::from_millis(500),
    hedge: Duration::from_millis(1),
    fails: false,
};

fn copy(
    timer: &ManualTimer,
    latency: Duration,
    answer: Result<usize, usize>,
) -> impl Future<Output = Result<usize, usize>> {
    let sleep = timer.sleep(latency);
    async move {
        sleep.await;
        answer
    }
}

/// Runs one call (keyed if `key` is given) to its end; returns the winner's index.
fn call(policy: &Policy<ManualTimer>, key: Option<&str>, script: Script) -> Result<usize, usize> {
    let timer = policy.timer().clone();
    let factory = {
        let timer = timer.clone();
        move |a: Attempt| match a.index() {
            0 if script.fails => copy(&timer, script.original, Err(0)),
            0 => copy(&timer, script.original, Ok(0)),
            index => copy(&timer, script.hedge, Ok(index)),
        }
    };
    match key {
        Some(key) => Driver::new(factory.hedged(policy).key(key)).run(&timer),
        None => Driver::new(factory.hedged(policy)).run(&timer),
    }
}

fn calls(policy: &Policy<ManualTimer>, key: Option<&str>, script: Script, count: usize) {
    for _ in 0..count {
        call(policy, key, script).expect("a copy answers");
    }
}

fn withholding(timer: &ManualTimer) -> PolicyBuilder<ManualTimer> {
    Policy::builder()
        .delay(ms(10))
        .min_win_rate(0.1)
        .timer(timer.clone())
}

/// Runs losing hedges until the first is withheld (at most 1,000 calls); returns the
/// stats then.
fn until_withheld(policy: &Policy<ManualTimer>, key: Option<&str>) -> Stats {
    for _ in 0..1000 {
        call(policy, key, HEAVY).expect("the original answers");
        if policy.stats().withheld > 0 {
            return policy.stats();
        }
    }
    panic!("never withheld: {:?}", policy.stats());
}

fn delta(after: Stats, before: Stats) -> (u64, u64, u64) {
    (
        after.calls - before.calls,
        after.hedges - before.hedges,
        after.withheld - before.withheld,
    )
}

#[test]
fn hedges_that_never_win_are_withheld_but_one_in_twenty_probes() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer).build();
    let start = until_withheld(&policy, None);
    assert_eq!(start.hedge_wins, 0);
    assert_eq!(
        start.hedges + start.withheld,
        start.calls,
        "every call's hedge was due"
    );
    assert!(
        start.hedges <= 200,
        "withheld within a few dozen losers: {start:?}"
    );
    calls(&policy, None, HEAVY, 400);
    let (calls, probes, withheld) = delta(policy.stats(), start);
    assert_eq!((calls, probes + withheld), (400, 400));
    assert!(probes >= 1, "probes keep asking");
    assert!(probes <= 400 / 20, "at most one in 20: {probes}");
}

#[test]
fn a_probe_that_wins_resumes_hedging() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer).build();
    until_withheld(&policy, None);
    // The backend's slowness turns into stalls that a hedge beats: the first probe wins.
    let mut waited = 0;
    while policy.stats().hedge_wins == 0 {
        // Withheld, the stalled original answers; probed, the hedge does.
        assert!(call(&policy, None, STALL).is_ok());
        waited += 1;
        assert!(waited <= 20, "a probe within 20 calls that would hedge");
    }
    let before = policy.stats();
    calls(&policy, None, STALL, 10);
    let (_, hedges, withheld) = delta(policy.stats(), before);
    assert_eq!((hedges, withheld), (10, 0), "hedging resumed");
    assert_eq!(policy.stats().hedge_wins, before.hedge_wins + 10);
}

#[test]
fn withholding_is_per_key() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer).adaptive_keys(8).build();
    until_withheld(&policy, Some("heavy"));
    let before = policy.stats();
    calls(&policy, Some("stalls"), STALL, 50);
    let (_, hedges, withheld) = delta(policy.stats(), before);
    assert_eq!((hedges, withheld), (50, 0), "the other key still hedges");
    let before = policy.stats();
    calls(&policy, Some("heavy"), HEAVY, 40);
    let (_, hedges, withheld) = delta(policy.stats(), before);
    assert!(
        withheld >= 38 && hedges + withheld == 40,
        "{hedges} {withheld}"
    );
}

#[test]
fn without_a_kept_key_calls_share_the_policy_wide_rate() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer).adaptive_keys(8).build();
    until_withheld(&policy, None);
    let before = policy.stats();
    calls(&policy, Some("fresh"), STALL, 10);
    let (_, hedges, _) = delta(policy.stats(), before);
    assert_eq!(hedges, 10, "a key of its own starts hedging");
    let before = policy.stats();
    calls(&policy, None, HEAVY, 19);
    let (_, hedges, withheld) = delta(policy.stats(), before);
    // The key's winning hedges did not lift the policy-wide rate: all but a probe (the
    // twentieth withheld call) are withheld.
    assert!(
        hedges <= 1 && hedges + withheld == 19,
        "keyless calls are still withheld: {hedges} {withheld}"
    );
}

#[test]
fn a_copy_after_a_failure_is_never_withheld() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer).build();
    let start = until_withheld(&policy, None);
    let failing = Script {
        original: ms(1),
        hedge: ms(1),
        fails: true,
    };
    assert_eq!(call(&policy, None, failing), Ok(1), "the retry answers");
    let (_, hedges, withheld) = delta(policy.stats(), start);
    assert_eq!((hedges, withheld), (1, 0));
}

/// A delay mode, set on a builder.
type Mode = fn(PolicyBuilder<ManualTimer>) -> PolicyBuilder<ManualTimer>;

#[test]
fn withholding_works_with_every_delay_mode() {
    let modes: [(&str, Mode); 4] = [
        ("fixed", |b| b.delay(ms(10))),
        ("adaptive", |b| {
            b.adaptive_delay(0.5)
                .delay(ms(10))
                .min_delay(ms(10))
                .max_delay(ms(10))
        }),
        ("delay_fn", |b| b.delay_fn(|_| Some(ms(10)))),
        ("parallel", |b| b.parallel()),
    ];
    for (mode, with_mode) in modes {
        let timer = ManualTimer::new();
        let policy = with_mode(withholding(&timer)).build();
        let start = until_withheld(&policy, None);
        calls(&policy, None, HEAVY, 100);
        let (_, probes, withheld) = delta(policy.stats(), start);
        assert!(probes <= 5 && withheld >= 95, "{mode}: {probes} {withheld}");
    }
}

#[test]
fn a_zero_min_win_rate_never_withholds() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer).min_win_rate(0.0).build();
    calls(&policy, None, HEAVY, 300);
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.withheld), (300, 0));
}

#[test]
fn a_key_in_use_keeps_its_place_and_its_rate_with_a_fixed_delay() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer)
        .adaptive_keys(1)
        .adaptive_window(ms(1000))
        .build();
    until_withheld(&policy, Some("busy"));
    // "busy" is called without a gap for two windows (a call ends every 50 ms).
    calls(&policy, Some("busy"), HEAVY, 40);
    assert_busy_kept_its_place(&policy);
}

#[test]
fn a_call_is_counted_withheld_once_however_many_of_its_copies_are_due() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer).max_copies(3).build();
    until_withheld(&policy, None);
    let before = policy.stats();
    // Copy 1 is due at 10 ms and withheld; the original fails at 20 ms, so copy 1 starts
    // as a retry and answers at 70 ms; copy 2 is due meanwhile, and withheld as well.
    let fails = Script {
        original: ms(20),
        hedge: ms(50),
        fails: true,
    };
    assert_eq!(call(&policy, None, fails), Ok(1));
    assert_eq!(delta(policy.stats(), before), (1, 1, 1));
}

#[test]
fn a_winning_probe_resumes_hedging_at_a_high_or_full_minimum() {
    for min in [0.6, 1.0] {
        let timer = ManualTimer::new();
        let policy = withholding(&timer).min_win_rate(min).build();
        until_withheld(&policy, None);
        calls(&policy, None, HEAVY, 100); // five losing probes
        let mut waited = 0;
        while policy.stats().hedge_wins == 0 {
            call(&policy, None, STALL).expect("a copy answers");
            waited += 1;
            assert!(waited <= 20, "{min}: a probe within 20 calls");
        }
        let before = policy.stats();
        calls(&policy, None, STALL, 10);
        assert_eq!(
            delta(policy.stats(), before),
            (10, 10, 0),
            "{min}: a probe won, so hedging resumed"
        );
    }
}

#[test]
fn a_key_whose_calls_fail_before_their_delay_keeps_its_place_and_its_rate() {
    let timer = ManualTimer::new();
    let policy = withholding(&timer)
        .adaptive_delay(0.5)
        .min_delay(ms(10))
        .max_delay(ms(10))
        .adaptive_keys(1)
        .adaptive_window(ms(1000))
        .build();
    until_withheld(&policy, Some("busy"));
    // For two windows each of "busy"'s originals fails at 5 ms, before any hedge is due,
    // and its retry answers 45 ms later: no latency is recorded, no win rate asked.
    let fails_early = Script {
        original: ms(5),
        hedge: ms(45),
        fails: true,
    };
    for _ in 0..40 {
        assert_eq!(call(&policy, Some("busy"), fails_early), Ok(1));
    }
    assert_busy_kept_its_place(&policy);
}

/// Another key asks for the one place while "busy" is in use; then "busy"'s losing hedges
/// are still withheld, by the rate it kept with its place.
fn assert_busy_kept_its_place(policy: &Policy<ManualTimer>) {
    call(policy, Some("other"), HEAVY).expect("the original answers");
    let before = policy.stats();
    calls(policy, Some("busy"), HEAVY, 19);
    let (_, hedges, withheld) = delta(policy.stats(), before);
    assert!(
        withheld >= 18 && hedges <= 1,
        "busy kept its place: {hedges} hedges, {withheld} withheld"
    );
}
