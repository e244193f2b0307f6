//! Models of the lock-free structures a call touches, each named after the invariant it
//! holds, checked by `loom` over every interleaving (up to its preemption bound). Only
//! under `RUSTFLAGS="--cfg loom"`; the command and what each model covers are in
//! `docs/reliability.md`.
#![cfg(loom)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hedging::loom_models::{self, KeyTable, Member, RateTurn, Ring, WinRate};
use hedging::{Budget, Hedgeable, Policy};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

/// Every interleaving with at most `LOOM_MAX_PREEMPTIONS` preemptions (3 unless set).
fn check(model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    // How many interleavings ran, shown with `--nocapture`.
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&runs);
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    eprintln!(
        "{} interleavings",
        runs.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// A call answered at its first poll, polled on the model's thread: an executor's
/// thread-locals would be one for every model thread (loom runs them on one OS thread).
fn answered_at_once<F: Future>(call: F) -> F::Output {
    let mut call = pin!(call);
    match call
        .as_mut()
        .poll(&mut Context::from_waker(futures::task::noop_waker_ref()))
    {
        Poll::Ready(answer) => answer,
        Poll::Pending => panic!("the call was not answered at once"),
    }
}

const SEC: Duration = Duration::from_secs(1);

/// Two keys whose two places are the same two places of a two-place table: the first
/// half of each word (the low 32 bits) picks place 0, the second (high) place 1.
const KEY_A: u64 = 0x8000_0000_0000_0001;
const KEY_B: u64 = 0x8000_0000_0000_0002;

#[test]
fn two_keys_never_share_a_place() {
    check(|| {
        let table = Arc::new(KeyTable::new(2, SEC));
        // Long after the table was made: a place no call has used looks idle.
        let now = 10 * SEC;
        let other = Arc::clone(&table);
        let b = thread::spawn(move || other.find_or_take(KEY_B, now));
        let a = table.find_or_take(KEY_A, now);
        let b = b.join().unwrap();
        let (a, b) = (
            a.expect("A found a free place"),
            b.expect("B found a free place"),
        );
        assert_ne!(a, b, "two keys in one place");
        assert_eq!(table.held_at(a), KEY_A, "A's place was taken from it");
        assert_eq!(table.held_at(b), KEY_B, "B's place was taken from it");
    });
}

#[test]
fn a_budget_never_hands_out_more_tokens_than_it_earned_plus_its_cap() {
    check(|| {
        // One token to start with and at most one saved; each call earns half a token.
        let budget = Budget::new(0.5).burst(1.0);
        let granted = Arc::new(AtomicUsize::new(0));
        let call = |budget: Budget, granted: Arc<AtomicUsize>| {
            move || {
                loom_models::credit(&budget, 1, 1, SEC);
                if loom_models::ask(&budget, SEC).is_some() {
                    granted.fetch_add(1, SeqCst);
                }
            }
        };
        let other = thread::spawn(call(budget.clone(), Arc::clone(&granted)));
        call(budget.clone(), Arc::clone(&granted))();
        other.join().unwrap();
        let granted = granted.load(SeqCst) as f64;
        let earned = 2.0 * 0.5;
        let cap = 1.0;
        assert!(budget.tokens() >= 0.0);
        assert!(
            granted + budget.tokens() <= cap + earned,
            "{granted} copies granted, {} tokens left",
            budget.tokens()
        );
        // Whichever order, the starting token is there for the first ask.
        assert!(granted >= 1.0);
    });
}

#[test]
fn the_floor_lets_one_copy_through_when_two_ask_at_once_with_no_token() {
    check(|| {
        // One token, spent first; a floor of one copy a second then lets exactly one of
        // two copies asking at the same instant through.
        let budget = Budget::new(0.5).burst(1.0).min_per_second(1);
        assert!(
            loom_models::ask(&budget, SEC).is_some(),
            "the starting token"
        );
        let other = budget.clone();
        let asking = thread::spawn(move || loom_models::ask(&other, SEC).is_some());
        let granted = loom_models::ask(&budget, SEC).is_some();
        let other_granted = asking.join().unwrap();
        assert!(granted != other_granted, "{granted} and {other_granted}");
        assert!(
            loom_models::ask(&budget, SEC).is_none(),
            "the floor's second was spent"
        );
    });
}

#[test]
fn a_throttling_budget_counts_every_failure_and_win_and_never_goes_below_zero() {
    check(|| {
        // gRPC's throttling, two tokens: two failures at once spend both; a third finds
        // none and leaves none, not less.
        let budget = Budget::throttling(2.0, 0.5);
        let other = budget.clone();
        let failing = thread::spawn(move || loom_models::copy_failed(&other));
        loom_models::copy_failed(&budget);
        failing.join().unwrap();
        assert_eq!(budget.tokens(), 0.0, "a failure lost to the other");
        loom_models::copy_failed(&budget);
        assert_eq!(budget.tokens(), 0.0);

        // Nine tokens of ten: a failure and a win at once leave 8.5 in either order.
        let budget = Budget::throttling(10.0, 0.5);
        loom_models::copy_failed(&budget);
        let other = budget.clone();
        let failing = thread::spawn(move || loom_models::copy_failed(&other));
        loom_models::copy_won(&budget);
        failing.join().unwrap();
        assert_eq!(budget.tokens(), 8.5, "a failure or a win lost to the other");
    });
}

#[test]
fn savings_the_traffic_no_longer_earns_expire_once_when_two_copies_ask_at_once() {
    check(|| {
        // Savings that follow the traffic: a hundred calls that asked for nothing earn
        // 50 tokens, which the second they ended may save. Two seconds later that second
        // has rolled out and the bucket may save its floor of 10: two copies asking at
        // once each find the savings trimmed to 10 and take one, 8 left, in either order.
        let budget = Budget::new(0.5);
        loom_models::credit(&budget, 100, 100, Duration::ZERO);
        assert_eq!(budget.tokens(), 50.0);
        let later = 2 * SEC;
        let other = budget.clone();
        let asking = thread::spawn(move || loom_models::ask(&other, later).is_some());
        assert!(loom_models::ask(&budget, later).is_some());
        assert!(asking.join().unwrap());
        assert_eq!(budget.tokens(), 8.0, "expired savings spent");
    });
}

#[test]
fn an_outstanding_slot_is_given_back_exactly_once() {
    check(|| {
        // One slot, one token: the second ask may take the slot and find no token, and
        // must then give the slot back itself.
        let budget = Budget::new(0.5).burst(1.0).max_outstanding(1);
        let holding = Arc::new(AtomicUsize::new(0));
        let call = |budget: Budget, holding: Arc<AtomicUsize>| {
            move || {
                if let Some(holds_slot) = loom_models::ask(&budget, SEC) {
                    assert!(holds_slot);
                    assert_eq!(holding.fetch_add(1, SeqCst), 0, "two copies in one slot");
                    holding.fetch_sub(1, SeqCst);
                    loom_models::give_back(&budget, 1);
                }
            }
        };
        let other = thread::spawn(call(budget.clone(), Arc::clone(&holding)));
        call(budget.clone(), Arc::clone(&holding))();
        other.join().unwrap();
        assert_eq!(budget.outstanding(), 0, "a slot not given back, or twice");
    });
}

#[test]
fn stats_count_every_ended_call_once() {
    check(|| {
        let policy = Policy::builder().delay(SEC).build();
        let calls = |policy: Policy| {
            move || {
                for _ in 0..2 {
                    let answer: Result<u32, ()> =
                        answered_at_once((|| async { Ok(1) }).hedged(&policy));
                    assert_eq!(answer, Ok(1));
                }
            }
        };
        let other = thread::spawn(calls(policy.clone()));
        // A snapshot taken while the other thread's calls end sees some of them, never
        // more than have ended, and always as many calls as outcomes.
        let during = policy.stats();
        assert!(during.calls <= 2);
        assert_eq!(
            during.calls,
            during.wins + during.failures + during.cancelled
        );
        calls(policy.clone())();
        other.join().unwrap();
        let after = policy.stats();
        assert_eq!(after.calls, 4, "{after:?}");
        assert_eq!(after.wins, 4, "{after:?}");
    });
}

#[test]
fn a_ratio_set_while_a_call_is_credited_is_seen_before_or_after() {
    check(|| {
        // Two tokens spent before the race, so a deposit is not capped away.
        let budget = Budget::new(0.5).burst(2.0);
        for _ in 0..2 {
            assert!(loom_models::ask(&budget, SEC).is_some());
        }
        let switch = budget.clone();
        let other = thread::spawn(move || switch.set_ratio(1.0));
        let seen = budget.ratio();
        loom_models::credit(&budget, 1, 1, SEC);
        other.join().unwrap();
        assert!(seen == 0.5 || seen == 1.0, "a ratio of {seen}");
        // One earning call deposited the old ratio or the new one, nothing in between.
        let tokens = budget.tokens();
        assert!(tokens == 0.5 || tokens == 1.0, "{tokens} tokens");
        assert_eq!(budget.ratio(), 1.0);
    });
}

/// A ring of 1 ms slots (a 4 ms window).
const SLOT: Duration = Duration::from_millis(1);
const MICRO: Duration = Duration::from_micros(1);

/// Runs `record` on `ring` while another thread records a call's end 1 µs into the
/// second slot, turning the ring into it; returns the ring once both are done.
fn racing_a_turn(ring: Ring, record: impl FnOnce(&Ring)) -> Arc<Ring> {
    let ring = Arc::new(ring);
    let other = Arc::clone(&ring);
    let turning = thread::spawn(move || other.record(MICRO, SLOT + MICRO));
    record(&ring);
    turning.join().unwrap();
    ring
}

#[test]
fn a_latency_recorded_while_a_slot_turns_is_counted_once() {
    check(|| {
        // Both recordings end past the first slot: one thread turns the ring, and the
        // other counts in the slot current when it reads the ring, the old one while the
        // turn is under way, never in a row the turn has yet to clear.
        let ring = racing_a_turn(Ring::new(4 * SLOT, 1_000), |ring| {
            ring.record(2 * MICRO, SLOT + 2 * MICRO)
        });
        assert_eq!(ring.counted(), 2, "a recording lost to a turn");
    });
}

#[test]
fn a_latency_of_the_old_slot_racing_a_turn_is_counted_once() {
    check(|| {
        let ring = racing_a_turn(Ring::new(4 * SLOT, 1_000), |ring| {
            ring.record(2 * MICRO, SLOT - MICRO)
        });
        assert_eq!(ring.counted(), 2, "a recording lost to a turn");
    });
}

#[test]
fn the_published_estimate_is_of_the_newest_window_never_of_a_half_cleared_slot() {
    check(|| {
        // The first slot: three latencies of 1 µs and two of 9 µs, a median of 1 µs (9 µs
        // if the 1 µs bucket were read cleared and the 9 µs one not yet).
        let ring = Arc::new(Ring::new(4 * SLOT, 5));
        for latency in [1, 1, 1, 9, 9] {
            ring.record(latency * MICRO, MICRO);
        }
        // One thread turns into the second slot and estimates from the first; the other
        // jumps a whole window ahead, to a slot that reuses the first slot's row.
        let other = Arc::clone(&ring);
        let next = thread::spawn(move || other.record(MICRO, SLOT + MICRO));
        ring.record(MICRO, 5 * SLOT + MICRO);
        next.join().unwrap();
        // The window before the sixth slot (slots 2 to 5) holds nothing: no estimate, the
        // fallback; an estimate of the first slot, whole or half-cleared, published last,
        // would have outlived its window.
        assert_eq!(ring.delay(5 * SLOT + 2 * MICRO), Ring::FALLBACK);
    });
}

#[test]
fn a_revisit_of_the_first_estimate_racing_a_turn_never_overlaps_it() {
    check(|| {
        // One latency makes the first estimate, at 1 µs into the first slot, and plans its
        // revisit about as long again after. One thread records past the revisit, in the
        // first slot; the other past the slot's end. Each claims the slot's end to revisit
        // or to turn; the one that loses counts in the slot it read.
        let ring = Arc::new(Ring::new(4 * SLOT, 1));
        ring.record(MICRO, MICRO);
        let other = Arc::clone(&ring);
        let revisiting = thread::spawn(move || other.record(9 * MICRO, 3 * MICRO));
        ring.record(MICRO, SLOT + MICRO);
        revisiting.join().unwrap();
        assert_eq!(ring.counted(), 3, "a recording lost to a revisit or a turn");
        // Neither left the slot's end claimed: the ring still turns, to a window with no
        // latency in it, and the fallback.
        assert_eq!(ring.delay(6 * SLOT + MICRO), Ring::FALLBACK);
    });
}

#[test]
fn a_censored_latency_and_what_its_hedges_showed_racing_a_turn_are_counted_once() {
    // `optimal_delay`'s ring, which counts censored latencies in rows of their own and
    // what each call's hedges showed per slot: a call whose hedge won ends in the first
    // slot, or past it (then it may be the call that turns), while another call's end
    // turns the ring into the second.
    for ended in [SLOT - MICRO, SLOT + 2 * MICRO] {
        check(move || {
            let ring = racing_a_turn(Ring::optimal(4 * SLOT, 1_000), |ring| {
                ring.record_hedge_won(2 * MICRO, ended)
            });
            assert_eq!(ring.counted(), 2, "a censored latency lost to a turn");
            let lost = "a hedge's showing lost to a turn";
            assert_eq!(ring.hedged_and_won(), (1, 1), "{lost}");
        });
    }
}

#[test]
fn two_hedged_calls_ending_at_once_both_move_the_win_rate_and_one_tells_the_turn() {
    // A minimum between one and two losing hedges below a fresh rate (1, then 31/32,
    // then 961/1024): the second loss to land withholds, whichever thread it is on.
    const MIN: f64 = 0.95;
    // What one thread recording `outcomes` in order leaves (loom's atomics exist only
    // inside the model).
    let sequential = |outcomes: &[bool]| {
        let rate = WinRate::new(MIN);
        for &won in outcomes {
            rate.record(won, false);
        }
        rate.rate()
    };
    check(move || {
        let two_losses = sequential(&[false, false]);
        // After a first loss, so that a win moves the rate too (at 1 it is capped).
        let orders = [
            sequential(&[false, true, false]),
            sequential(&[false, false, true]),
        ];
        let rate = Arc::new(WinRate::new(MIN));
        let other = Arc::clone(&rate);
        let losing = thread::spawn(move || other.record(false, false));
        let turn = rate.record(false, false);
        let other_turn = losing.join().unwrap();
        assert_eq!(rate.rate(), two_losses, "a loss lost to the other");
        let withholding = [turn, other_turn]
            .iter()
            .filter(|turn| **turn == RateTurn::Withholding)
            .count();
        assert_eq!(withholding, 1, "{turn:?} and {other_turn:?}");
        assert_eq!(rate.ask(), None, "hedges withheld below the minimum");

        // A win and a loss at once land as one order or the other, never one alone.
        let rate = Arc::new(WinRate::new(MIN));
        rate.record(false, false);
        let other = Arc::clone(&rate);
        let winning = thread::spawn(move || other.record(true, false));
        rate.record(false, false);
        winning.join().unwrap();
        assert!(
            orders.contains(&rate.rate()),
            "{} not in {orders:?}",
            rate.rate()
        );
    });
}

#[test]
fn calls_withheld_on_two_threads_still_probe_one_in_twenty() {
    check(|| {
        // Withheld from the start (a minimum of 1 and one losing hedge); twenty calls
        // that would hedge, ten a thread, hold exactly one probe between them.
        let rate = Arc::new(WinRate::new(1.0));
        assert_eq!(rate.record(false, false), RateTurn::Withholding);
        let other = Arc::clone(&rate);
        let asking = thread::spawn(move || (0..10).filter(|_| other.ask() == Some(false)).count());
        let probes = (0..10).filter(|_| rate.ask() == Some(false)).count();
        let other_probes = asking.join().unwrap();
        assert_eq!(probes + other_probes, 1, "{probes} + {other_probes} probes");
    });
}

#[test]
fn a_budget_shared_by_two_policies_never_hands_out_more_than_they_earned_plus_its_cap() {
    check(|| {
        // One token to start with, at most one saved; each policy ends one call that asked
        // for nothing (half a token each), then one of its calls asks. Each policy's ask
        // credits its own calls, and, where the bucket is short, every policy's: a call
        // credited by both would create a token.
        let budget = Budget::new(0.5).burst(1.0);
        let granted = Arc::new(AtomicUsize::new(0));
        let policy = |member: Member, granted: Arc<AtomicUsize>| {
            move || {
                member.end_call();
                if member.ask(SEC).is_some() {
                    granted.fetch_add(1, SeqCst);
                }
            }
        };
        let (a, b) = (Member::join(&budget), Member::join(&budget));
        let other = thread::spawn(policy(b, Arc::clone(&granted)));
        policy(a, Arc::clone(&granted))();
        other.join().unwrap();
        let granted = granted.load(SeqCst) as f64;
        assert!(budget.tokens() >= 0.0);
        assert!(
            granted + budget.tokens() <= 1.0 + 2.0 * 0.5,
            "{granted} copies granted, {} tokens left",
            budget.tokens()
        );
        assert!(
            granted >= 1.0,
            "the starting token was there for the first ask"
        );
    });
}

#[test]
fn a_policy_switched_off_while_a_call_asks_is_seen_on_or_off() {
    check(|| {
        let policy = Policy::builder().max_copies(3).delay(SEC).build();
        let switch = policy.clone();
        let other = thread::spawn(move || switch.set_enabled(false));
        let copies = policy.copies_allowed(3);
        assert!(copies == 3 || copies == 1, "{copies} copies");
        other.join().unwrap();
        // Once the switch returned, every call that begins runs its original alone.
        assert_eq!(policy.copies_allowed(3), 1);
        let answer: Result<u32, ()> = answered_at_once((|| async { Ok(7) }).hedged(&policy));
        assert_eq!(answer, Ok(7));
    });
}

#[test]
fn a_keys_place_is_never_taken_while_it_is_in_use() {
    check(|| {
        // One place. A holds it, and uses it again while B, whose places are the same one,
        // looks for room half an idle window later: the place is in use, so B finds none,
        // and A keeps it.
        let table = Arc::new(KeyTable::new(1, SEC));
        let now = 10 * SEC;
        let held = table.find_or_take(KEY_A, now).expect("a free place");
        let other = Arc::clone(&table);
        let b = thread::spawn(move || other.find_or_take(KEY_B, now + SEC / 2));
        let again = table.find_or_take(KEY_A, now + SEC / 2);
        assert_eq!(b.join().unwrap(), None, "B took a place in use");
        assert_eq!(again, Some(held), "A lost its place while using it");
        assert_eq!(table.held_at(held), KEY_A);
    });
}
