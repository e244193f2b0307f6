//! The `policy_builder` target: any sequence of builder calls.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use arbitrary::{Result, Unstructured};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Hedgeable, Policy, Stats};

use super::script::{any_duration, Mode};
use super::{quiet_scripted_panics, CountingWaker};
/// Arbitrary builder calls, NaN, negative and huge values included: nothing panics, the
/// policy holds the clamped settings, and calls through it still obey the cap.
pub fn policy_builder(data: &[u8]) {
    quiet_scripted_panics();
    let _ = run_policy_builder(&mut Unstructured::new(data));
}

fn run_policy_builder(u: &mut Unstructured<'_>) -> Result<()> {
    let timer = ManualTimer::new();
    let mut builder = Policy::builder().timer(timer.clone());
    let mut max_copies = 2;
    let mut probability = 1.0;
    let mut timed = true;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let hook_calls = Arc::new(AtomicUsize::new(0));
    let mut hooked = false;
    for _ in 0..u.int_in_range(0..=12u8)? {
        builder = match u.int_in_range(0..=10u8)? {
            0 => {
                let copies = match u.int_in_range(0..=3u8)? {
                    0 => u.int_in_range(0..=8)?,
                    1 => usize::MAX - u.int_in_range(0..=2)?,
                    2 => u.int_in_range(0..=100_000)?,
                    _ => u.arbitrary()?,
                };
                max_copies = copies.clamp(1, 64);
                builder.max_copies(copies)
            }
            1 => {
                timed = true;
                builder.delay(any_duration(u)?)
            }
            2 => builder.max_delay(any_duration(u)?),
            3 => {
                timed = true;
                builder.parallel()
            }
            4 => {
                timed = false;
                builder.fallback()
            }
            5 => {
                timed = true;
                let mut delays = vec![None];
                for _ in 0..u.int_in_range(0..=6)? {
                    delays.push(if u.ratio(1, 5)? {
                        None
                    } else {
                        Some(any_duration(u)?)
                    });
                }
                Mode::PerCopy(Arc::new(delays)).apply(builder, &asked)
            }
            6 => {
                let p = match u.int_in_range(0..=6u8)? {
                    0 => f64::NAN,
                    1 => f64::INFINITY,
                    2 => f64::NEG_INFINITY,
                    3 => -f64::from_bits(u.arbitrary()?).abs(),
                    4 => f64::MAX,
                    5 => f64::MIN_POSITIVE,
                    _ => f64::from_bits(u.arbitrary()?),
                };
                probability = p;
                builder.hedge_probability(p)
            }
            7 => {
                hooked = true;
                let hook_calls = Arc::clone(&hook_calls);
                builder.on_hedge(move |_| {
                    hook_calls.fetch_add(1, SeqCst);
                })
            }
            8 => builder.catch_unwind(u.arbitrary()?),
            9 => {
                let copy = builder.clone();
                assert!(!format!("{copy:?}").is_empty());
                copy
            }
            _ => {
                assert!(format!("{builder:?}").starts_with("PolicyBuilder"));
                builder
            }
        };
    }
    let policy = builder.build();
    assert_eq!(
        policy.max_copies(),
        max_copies,
        "max_copies clamps to 1..=64"
    );
    assert!(format!("{policy:?}").starts_with("Policy"));
    assert_eq!(policy.stats(), Stats::default());

    // The fast path: a copy ready at once arms no timer and starts nothing else.
    let ready = ready_now((|| std::future::ready(Ok::<u8, u8>(7))).hedged(&policy));
    assert_eq!(ready, Ok(7));
    assert_eq!(timer.sleeps_created(), 0);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            wins: 1,
            ..Stats::default()
        }
    );

    // A call whose copies never answer: a few steps of its schedule, then dropped.
    let attempts = Rc::new(RefCell::new(Vec::<Attempt>::new()));
    let factory = {
        let attempts = Rc::clone(&attempts);
        move |attempt: Attempt| {
            attempts.borrow_mut().push(attempt);
            std::future::pending::<std::result::Result<u8, u8>>()
        }
    };
    let mut hedge = Box::pin(factory.hedged(&policy));
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let mut cx = Context::from_waker(&waker);
    for _ in 0..4 {
        assert!(hedge.as_mut().poll(&mut cx).is_pending());
        let Some(next) = timer.next_deadline() else {
            break;
        };
        timer.advance(next - timer.now());
    }
    drop(hedge);
    let attempts = attempts.borrow();
    let per_call = attempts[0].max_copies();
    assert!(per_call == 1 || per_call == max_copies);
    if probability.is_nan() || probability >= 1.0 {
        assert_eq!(
            per_call, max_copies,
            "NaN and values above 1 hedge every call"
        );
    } else if probability <= 0.0 {
        assert_eq!(per_call, 1, "values at or below 0 never hedge");
    }
    assert!(
        attempts.len() <= per_call,
        "{} copies started, max {per_call}",
        attempts.len()
    );
    if !timed || per_call == 1 {
        assert_eq!(attempts.len(), 1, "only the original starts");
    }
    let hedges = if hooked { attempts.len() - 1 } else { 0 };
    assert_eq!(hook_calls.load(SeqCst), hedges, "on_hedge once per hedge");
    assert_eq!(timer.live_sleeps(), 0);
    let stats = policy.stats();
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
    assert_eq!(stats.hedges, attempts.len() as u64 - 1);
    policy.reset_stats();
    assert_eq!(policy.stats(), Stats::default());
    Ok(())
}

/// Polls a future that must be ready at once (no executor needed).
fn ready_now<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    match std::pin::pin!(future).poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the fast path returned Pending"),
    }
}
