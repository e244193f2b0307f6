//! Live switches: `Policy::set_enabled` turns hedging off and on for the calls that begin
//! afterwards, and `Budget::set_ratio` changes what a budget earns from now on; both keep
//! the stats, and both are driven on `ManualTimer`.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use common::{ms, Backend, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Budget, Hedgeable, Policy, Stats};

/// Three copies, 10 ms apart, on `timer`.
fn three_copies(timer: &ManualTimer) -> Policy<ManualTimer> {
    common::policy(timer, 3, 10)
}

/// An original that answers `Ok(0)` at 100 ms, hedges that answer 1 ms after they start.
fn slow_original(timer: &ManualTimer) -> Backend {
    Backend::new(timer, [Step::ok(100, 0), Step::ok(1, 1), Step::ok(1, 2)])
}

// --- Policy::set_enabled ----------------------------------------------------------------

#[test]
fn a_disabled_policy_runs_each_call_s_original_alone() {
    let timer = ManualTimer::new();
    let policy = three_copies(&timer);
    policy.set_enabled(false);
    let backend = slow_original(&timer);

    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert!(call.poll().is_pending());
    assert_eq!(
        timer.live_sleeps(),
        1,
        "the original's own sleep: the call armed none"
    );
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(timer.now(), ms(100), "no hedge at 10 ms");
    assert_eq!(backend.started(), 1);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.hedges), (1, 1, 0));
}

#[test]
fn a_disabled_call_is_a_call_of_one_copy() {
    let timer = ManualTimer::new();
    let policy = three_copies(&timer);
    policy.set_enabled(false);
    let backend = Backend::new(&timer, [Step::err(5, 7), Step::ok(1, 1)]);
    let mut made = Vec::new();
    let factory = {
        let mut make = backend.factory();
        move |a: Attempt| {
            made.push(a.index());
            // The switch is read once the original is pending, so that a call answered
            // at once pays nothing for it: the original still sees the policy's cap.
            assert_eq!((made.as_slice(), a.max_copies()), (&[0][..], 3));
            make(a)
        }
    };

    // As with `max_copies(1)`: a failing original is the call's answer, no copy follows.
    assert_eq!(Driver::new(factory.hedged(&policy)).run(&timer), Err(7));
    assert_eq!(timer.now(), ms(5));
    assert_eq!(backend.started(), 1);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 0));
}

#[test]
fn set_enabled_true_brings_hedging_back() {
    let timer = ManualTimer::new();
    let policy = three_copies(&timer);
    policy.set_enabled(false);
    policy.set_enabled(true);
    assert!(policy.is_enabled());

    let backend = slow_original(&timer);
    assert_eq!(
        Driver::new(backend.factory().hedged(&policy)).run(&timer),
        Ok(1)
    );
    assert_eq!(
        timer.now(),
        ms(11),
        "the first hedge went out at 10 ms and won"
    );
    assert_eq!(policy.stats().hedges, 1);
}

#[test]
fn is_enabled_follows_the_switch_and_every_clone_shares_it() {
    let timer = ManualTimer::new();
    let policy = three_copies(&timer);
    let clone = policy.clone();
    assert!(policy.is_enabled(), "enabled by default");
    clone.set_enabled(false);
    assert!(!policy.is_enabled());
    clone.set_enabled(false);
    assert!(!policy.is_enabled(), "switching off twice stays off");
    policy.set_enabled(true);
    assert!(clone.is_enabled());
    assert!(format!("{policy:?}").contains("enabled: true"));
}

#[test]
fn enabled_false_in_the_builder_starts_the_policy_switched_off() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .enabled(false)
        .timer(timer.clone())
        .build();
    assert!(!policy.is_enabled());
    let backend = slow_original(&timer);
    assert_eq!(
        Driver::new(backend.factory().hedged(&policy)).run(&timer),
        Ok(0)
    );
    assert_eq!(backend.started(), 1);

    policy.set_enabled(true);
    let backend = slow_original(&timer);
    assert_eq!(
        Driver::new(backend.factory().hedged(&policy)).run(&timer),
        Ok(1)
    );
}

#[test]
fn a_call_begun_before_the_switch_goes_on_as_it_began() {
    let timer = ManualTimer::new();
    let policy = three_copies(&timer);

    // Begun enabled, switched off mid-call: its hedge still goes out at 10 ms.
    let backend = slow_original(&timer);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert!(call.poll().is_pending());
    policy.set_enabled(false);
    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(backend.started(), 2);

    // Begun disabled, switched on mid-call: its failing original starts no copy.
    let backend = Backend::new(&timer, [Step::err(50, 7), Step::ok(1, 1)]);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert!(call.poll().is_pending());
    policy.set_enabled(true);
    assert_eq!(call.run(&timer), Err(7));
    assert_eq!(backend.started(), 1);
}

#[test]
fn switching_keeps_the_stats_and_counts_disabled_calls_as_usual() {
    let timer = ManualTimer::new();
    let policy = three_copies(&timer);
    let backend = slow_original(&timer);
    assert_eq!(
        Driver::new(backend.factory().hedged(&policy)).run(&timer),
        Ok(1)
    );

    policy.set_enabled(false);
    let backend = Backend::new(&timer, [Step::ok(20, 0)]);
    assert_eq!(
        Driver::new(backend.factory().hedged(&policy)).run(&timer),
        Ok(0)
    );
    let backend = Backend::new(&timer, [Step::err(20, 3)]);
    assert_eq!(
        Driver::new(backend.factory().hedged(&policy)).run(&timer),
        Err(3)
    );
    let backend = Backend::new(&timer, [Step::never()]);
    let mut dropped = Driver::new(backend.factory().hedged(&policy));
    assert!(dropped.poll().is_pending());
    drop(dropped);
    policy.set_enabled(true);

    let expected = Stats {
        calls: 4,
        wins: 2,
        failures: 1,
        cancelled: 1,
        hedges: 1,
        hedge_wins: 1,
        budget_denied: 0,
        out_of_scope: 0,
        withheld: 0,
    };
    assert_eq!(policy.stats(), expected);
}

#[test]
fn a_disabled_policy_runs_a_stream_s_original_alone() {
    use futures::StreamExt;
    use hedging::HedgeableStream;

    let timer = ManualTimer::new();
    let policy = three_copies(&timer);
    policy.set_enabled(false);
    let mut made = Vec::new();
    let clock = timer.clone();
    let factory = |a: Attempt| {
        made.push(a.index());
        let sleep = hedging::timer::Timer::sleep(&clock, ms(100));
        futures::stream::once(async move {
            sleep.await;
            Ok::<_, u32>(a.index())
        })
    };
    let mut stream = Box::pin(factory.hedged_stream(&policy));
    assert_eq!(Driver::new(stream.next()).run(&timer), Some(Ok(0)));
    assert_eq!(timer.now(), ms(100), "no hedge at 10 ms");
    drop(stream);
    assert_eq!(made, [0]);
    assert_eq!((policy.stats().calls, policy.stats().hedges), (1, 0));
}

#[test]
fn a_disabled_call_with_a_timeout_times_out_alone() {
    let timer = ManualTimer::new();
    let policy = three_copies(&timer);
    policy.set_enabled(false);
    let backend = Backend::<common::Failure>::with_errors(&timer, [Step::never(), Step::ok(1, 1)]);
    let call = backend.factory().hedged(&policy).timeout(ms(50));
    assert_eq!(Driver::new(call).run(&timer), Err(common::Failure::Elapsed));
    assert_eq!(timer.now(), ms(50));
    assert_eq!(backend.started(), 1, "the timeout's race has one copy");
}

#[test]
fn a_disabled_policy_asks_its_budget_nothing() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(1.0).max_outstanding(1);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    policy.set_enabled(false);
    for _ in 0..3 {
        let backend = slow_original(&timer);
        assert_eq!(
            Driver::new(backend.factory().hedged(&policy)).run(&timer),
            Ok(0)
        );
    }
    assert_eq!(budget.tokens(), 1.0, "no token taken");
    assert_eq!(budget.outstanding(), 0);
    assert_eq!(
        policy.stats().budget_denied,
        0,
        "nothing asked, nothing refused"
    );
}

#[test]
fn a_policy_switched_back_on_keeps_its_hedge_probability() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .hedge_probability(0.0)
        .timer(timer.clone())
        .build();
    policy.set_enabled(false);
    policy.set_enabled(true);
    for _ in 0..20 {
        let backend = slow_original(&timer);
        assert_eq!(
            Driver::new(backend.factory().hedged(&policy)).run(&timer),
            Ok(0)
        );
    }
    assert_eq!(
        policy.stats().hedges,
        0,
        "a probability of 0 still never hedges"
    );
}

/// A copy that is pending at its first poll (waking its task) and answers its index at
/// the second.
struct PendingOnce {
    index: usize,
    polled: bool,
}

impl Future for PendingOnce {
    type Output = Result<usize, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if std::mem::replace(&mut self.polled, true) {
            Poll::Ready(Ok(self.index))
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Calls made by one thread of the switch test, and the copies they started, by whether
/// the policy was enabled when each began.
#[derive(Default)]
struct Tally {
    enabled_calls: u64,
    enabled_copies: u64,
    disabled_calls: u64,
    disabled_copies: u64,
}

#[test]
fn flipping_the_switch_while_8_threads_make_calls_is_seen_by_every_call_begun_after_it() {
    const THREADS: usize = 8;
    const FLIPS: u64 = 40;
    let timer = ManualTimer::new();
    // Both copies at once: a call that may hedge starts its second copy in its first poll.
    let policy = Policy::builder()
        .max_copies(2)
        .parallel()
        .timer(timer.clone())
        .build();
    // The switch's state as the flipper last set it. The flipper holds it for writing
    // while it flips; each call takes it for reading over its first poll, where it begins,
    // so every call begins wholly before or wholly after each flip, and knows which.
    let switch = Arc::new(RwLock::new(true));
    let done = Arc::new(AtomicBool::new(false));
    let calls_made = Arc::new(AtomicU64::new(0));

    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (policy, switch) = (policy.clone(), Arc::clone(&switch));
            let (done, calls_made) = (Arc::clone(&done), Arc::clone(&calls_made));
            std::thread::spawn(move || {
                let mut tally = Tally::default();
                while !done.load(SeqCst) {
                    let mut copies = 0;
                    let factory = |a: Attempt| {
                        copies += 1;
                        PendingOnce {
                            index: a.index(),
                            polled: false,
                        }
                    };
                    let mut call = Driver::new(factory.hedged(&policy));
                    let enabled = {
                        let enabled = switch.read().unwrap();
                        assert!(call.poll().is_pending());
                        *enabled
                    };
                    // The rest of the call runs while the switch may flip.
                    let answer = loop {
                        if let Poll::Ready(answer) = call.poll() {
                            break answer;
                        }
                    };
                    assert_eq!(answer, Ok(0), "the original answers first");
                    drop(call);
                    if enabled {
                        tally.enabled_calls += 1;
                        tally.enabled_copies += copies;
                    } else {
                        tally.disabled_calls += 1;
                        tally.disabled_copies += copies;
                    }
                    calls_made.fetch_add(1, SeqCst);
                }
                tally
            })
        })
        .collect();

    for _ in 0..FLIPS {
        // Let every thread make a few calls between flips.
        let target = calls_made.load(SeqCst) + 2 * THREADS as u64;
        while calls_made.load(SeqCst) < target {
            std::thread::yield_now();
        }
        let mut state = switch.write().unwrap();
        *state = !*state;
        policy.set_enabled(*state);
    }
    done.store(true, SeqCst);

    let total = workers
        .into_iter()
        .map(|worker| worker.join().unwrap())
        .fold(Tally::default(), |mut total, tally| {
            total.enabled_calls += tally.enabled_calls;
            total.enabled_copies += tally.enabled_copies;
            total.disabled_calls += tally.disabled_calls;
            total.disabled_copies += tally.disabled_copies;
            total
        });
    assert!(total.enabled_calls > 0 && total.disabled_calls > 0);
    assert_eq!(
        total.disabled_copies, total.disabled_calls,
        "every call begun while disabled ran its original alone"
    );
    assert_eq!(
        total.enabled_copies,
        2 * total.enabled_calls,
        "every call begun while enabled hedged"
    );
    let stats = policy.stats();
    assert_eq!(stats.calls, total.enabled_calls + total.disabled_calls);
    assert_eq!(
        (stats.wins, stats.hedges),
        (stats.calls, total.enabled_calls)
    );
    assert_eq!(timer.live_sleeps(), 0, "no call armed a timer");
}

// --- Budget::set_ratio ------------------------------------------------------------------

fn budgeted(timer: &ManualTimer, budget: &Budget) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(budget)
        .timer(timer.clone())
        .build()
}

/// A call whose original takes 100 ms and whose hedge takes 1 ms: `Ok(1)` when the
/// budget lets the hedge out, `Ok(0)` when it refuses it.
fn slow_call(timer: &ManualTimer, policy: &Policy<ManualTimer>) -> Result<u32, u32> {
    Driver::new(slow_original(timer).factory().hedged(policy)).run(timer)
}

/// A call answered at once: it asks the budget nothing and earns.
fn instant_call(policy: &Policy<ManualTimer>) {
    let answer: Result<u8, ()> = futures::executor::block_on((|| async { Ok(0) }).hedged(policy));
    assert_eq!(answer, Ok(0));
}

/// A call whose two copies fail 1 ms after they start.
fn failing_call(timer: &ManualTimer, policy: &Policy<ManualTimer>) -> Result<u32, u32> {
    let backend = Backend::new(timer, [Step::err(1, 0), Step::err(1, 1)]);
    Driver::new(backend.factory().hedged(policy)).run(timer)
}

#[test]
fn set_ratio_changes_what_each_earning_call_deposits_from_now_on() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.5).burst(3.0);
    let policy = budgeted(&timer, &budget);
    for _ in 0..3 {
        assert_eq!(slow_call(&timer, &policy), Ok(1), "the burst pays");
    }
    assert_eq!(budget.tokens(), 0.0);

    budget.set_ratio(1.0);
    assert_eq!(budget.ratio(), 1.0);
    instant_call(&policy);
    instant_call(&policy);
    // The next call to ask credits the two at a token each, not half a token, and
    // spends one.
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(budget.tokens(), 1.0);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.budget_denied), (6, 4, 0));
}

#[test]
fn set_ratio_lowered_trims_the_savings_to_the_new_cap_when_a_copy_next_asks() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.1);
    let policy = budgeted(&timer, &budget);
    for _ in 0..1_000 {
        instant_call(&policy);
    }
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(
        budget.tokens(),
        99.0,
        "a second of 1,000 calls at 10%, less one"
    );

    budget.set_ratio(0.02);
    assert_eq!(budget.tokens(), 99.0, "kept until a copy asks");
    // The last second's 1,001 calls may save 20.02 tokens at 2%: one is spent from those.
    assert_eq!(slow_call(&timer, &policy), Ok(1));
    assert_eq!(budget.tokens(), 19.02);
}

#[test]
fn set_ratio_is_clamped_as_budget_new_clamps() {
    let budget = Budget::new(0.1);
    budget.set_ratio(-1.0);
    assert_eq!(budget.ratio(), 0.0);
    budget.set_ratio(f64::NAN);
    assert_eq!(budget.ratio(), 0.0);
    budget.set_ratio(0.25);
    assert_eq!(budget.ratio(), 0.25);
    assert_eq!(budget.tokens(), 10.0, "the tokens are kept");
}

#[test]
fn set_ratio_on_a_throttling_budget_changes_its_token_ratio() {
    let timer = ManualTimer::new();
    let budget = Budget::throttling(10.0, 0.1);
    let policy = budgeted(&timer, &budget);
    assert_eq!(failing_call(&timer, &policy), Err(0));
    assert_eq!(budget.tokens(), 8.0);

    budget.set_ratio(0.5);
    assert_eq!(budget.ratio(), 0.5);
    instant_call(&policy);
    assert_eq!(budget.tokens(), 8.5, "a win earns the new token_ratio back");

    budget.set_ratio(-1.0);
    assert_eq!(
        budget.ratio(),
        0.001,
        "clamped as Budget::throttling clamps"
    );
    budget.set_ratio(f64::NAN);
    assert_eq!(budget.ratio(), 0.001);
    assert!(
        format!("{budget:?}").contains("max_tokens: 10.0"),
        "max_tokens kept"
    );
}

#[test]
fn set_ratio_is_seen_by_every_policy_sharing_the_budget_and_keeps_their_stats() {
    let timer = ManualTimer::new();
    let budget = Budget::new(0.0).burst(2.0);
    let reads = budgeted(&timer, &budget);
    let lists = budgeted(&timer, &budget);
    assert_eq!(slow_call(&timer, &reads), Ok(1));
    assert_eq!(slow_call(&timer, &lists), Ok(1));
    assert_eq!(slow_call(&timer, &lists), Ok(0), "no token left");

    budget.clone().set_ratio(1.0);
    for _ in 0..3 {
        instant_call(&reads);
    }
    // Reads credits its calls at the new ratio when it next asks: up to the burst of
    // two tokens, one spent.
    assert_eq!(slow_call(&timer, &reads), Ok(1));
    assert_eq!(
        slow_call(&timer, &lists),
        Ok(1),
        "what reads earned, lists spends"
    );
    assert_eq!((reads.stats().calls, reads.stats().hedges), (5, 2));
    let lists = lists.stats();
    assert_eq!((lists.calls, lists.hedges, lists.budget_denied), (3, 2, 1));
}

#[test]
fn a_budget_configured_after_set_ratio_keeps_the_new_ratio() {
    let budget = Budget::new(0.1);
    budget.set_ratio(0.3);
    assert_eq!(budget.clone().max_outstanding(2).ratio(), 0.3);
    assert_eq!(budget.min_per_second(1).ratio(), 0.3);
}
