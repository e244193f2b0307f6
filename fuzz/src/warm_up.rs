//! The adaptive delay's warm-up: calls that teach it the scripted latencies, and what the
//! delay should then be in each quarter window of the scripted call.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy};

use super::model::{nanos, AdaptiveModel, World};
use super::script::{AdaptiveScript, Fail, Mode, Script};
use super::{CountingWaker, MS};

/// Calls that teach the adaptive delay the scripted latencies, all answering before their
/// hedge is due and recorded in the first quarter window; then the clock moves to where
/// the scripted call starts. Returns what the delay is during that call.
///
/// The delay a quarter window sees is read from the policy when the call starts (the call
/// reads it at that moment too), and from a twin policy taught the same latencies for
/// later quarters; each is checked against the nearest-rank quantile of the recorded
/// latencies, or their maximum when they look like a queue, within one histogram bucket.
pub(crate) fn warm_up(
    script: &Script,
    adaptive: &AdaptiveScript,
    policy: &Policy<ManualTimer>,
    timer: &ManualTimer,
    world: &mut World,
) -> AdaptiveModel {
    let Mode::Fixed(delay) = script.mode else {
        unreachable!("an adaptive delay is scripted on a fixed one only");
    };
    let window = adaptive.window.max(Duration::from_millis(100));
    let slot_nanos = (nanos(window) / 4).max(1);
    let min_delay = adaptive.min_delay.unwrap_or(MS);
    let max_delay = script.max_delay.map(|max_delay| max_delay.max(min_delay));
    let bound = |delay: Duration| delay.clamp(min_delay, max_delay.unwrap_or(Duration::MAX));
    let fallback = bound(delay);
    assert_eq!(
        policy.delay(),
        Some(fallback),
        "until latencies are known, the fixed delay within min_delay..=max_delay"
    );

    let mut recorded = Vec::new();
    for &latency in &adaptive.warm_ups {
        let latency = latency.min(fallback.saturating_sub(Duration::from_nanos(1)));
        if nanos(timer.now() + latency) >= slot_nanos {
            break;
        }
        let per_call = warm_up_call(policy, timer, latency);
        world.won_unhedged();
        if !latency.is_zero() && per_call > 1 {
            // Its original answered after a first `Pending`: its latency is recorded.
            recorded.push(latency);
        }
    }
    assert_eq!(policy.stats(), world.stats, "stats after the warm-ups");

    let start = slot_nanos * adaptive.start_slot + slot_nanos * adaptive.start_offset / 1000;
    timer.advance(Duration::from_nanos(start) - timer.now());
    let early = policy.delay().expect("an adaptive delay");
    let late = if adaptive.start_slot <= 2 {
        // A twin taught the same latencies says what quarters 3 and 4 will see.
        let twin_timer = ManualTimer::new();
        let builder = Policy::builder()
            .max_copies(2)
            .delay(delay)
            .timer(twin_timer.clone());
        let builder = adaptive.apply(builder);
        let twin = match script.max_delay {
            Some(max_delay) => builder.max_delay(max_delay),
            None => builder,
        }
        .build();
        for &latency in &recorded {
            assert_eq!(warm_up_call(&twin, &twin_timer, latency), 2);
        }
        twin_timer.advance(Duration::from_nanos(start) - twin_timer.now());
        assert_eq!(twin.delay(), Some(early), "the twin reads the same delay");
        twin_timer.advance(Duration::from_nanos(slot_nanos * 3) - twin_timer.now());
        twin.delay().expect("an adaptive delay")
    } else {
        early
    };

    let min_samples = adaptive.min_samples.max(1) as usize;
    if recorded.is_empty() || recorded.len() < min_samples || adaptive.start_slot > 4 {
        assert_eq!(
            early, fallback,
            "no latencies in the window: the fixed delay"
        );
    }
    if adaptive.start_slot > 4 {
        // Only the fixed delay is read during the call.
    } else if recorded.is_empty() || recorded.len() < min_samples {
        assert_eq!(
            late, fallback,
            "too few latencies in the window: the fixed delay"
        );
    } else {
        let quantile = if adaptive.quantile.is_nan() {
            0.95
        } else {
            adaptive.quantile.clamp(0.0, 1.0)
        };
        let mut micros: Vec<u64> = recorded.iter().map(|l| l.as_micros() as u64).collect();
        micros.sort_unstable();
        // Rounded up to the edge of its histogram bucket: at most a sixteenth (or 1 µs)
        // above the value.
        let around = |value: u64| {
            bound(Duration::from_micros(value + 1))
                ..=bound(Duration::from_micros(value + (value / 16).max(1)))
        };
        let plain = around(nearest_rank(&micros, quantile));
        let slowest = around(*micros.last().expect("latencies"));
        assert!(
            plain.contains(&late),
            "adaptive delay {late:?}: the {quantile} quantile of {recorded:?}"
        );
        if adaptive.start_slot <= 2 {
            let fits = match looks_like_a_queue(&micros) {
                Some(true) => slowest.contains(&early),
                Some(false) => plain.contains(&early),
                None => slowest.contains(&early) || plain.contains(&early),
            };
            assert!(
                fits,
                "adaptive delay {early:?} in the quarter after {recorded:?} (quantile {quantile})"
            );
        }
    }
    AdaptiveModel {
        slot_nanos,
        early,
        late,
        fallback,
        max_delay,
    }
}

/// A call through `policy` whose original answers after `latency`, before its hedge is
/// due; returns the copies it was allowed.
fn warm_up_call(policy: &Policy<ManualTimer>, timer: &ManualTimer, latency: Duration) -> usize {
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let mut cx = Context::from_waker(&waker);
    let attempts = Rc::new(RefCell::new(Vec::<Attempt>::new()));
    let factory = {
        let (timer, attempts) = (timer.clone(), Rc::clone(&attempts));
        move |attempt: Attempt| {
            attempts.borrow_mut().push(attempt);
            let sleep = timer.sleep(latency);
            async move {
                sleep.await;
                Ok::<u8, Fail>(0)
            }
        }
    };
    let mut call = std::pin::pin!(factory.hedged(policy));
    let mut answer = call.as_mut().poll(&mut cx);
    if answer.is_pending() {
        timer.advance(latency);
        answer = call.as_mut().poll(&mut cx);
    }
    assert_eq!(answer, Poll::Ready(Ok(0)), "a warm-up call answers");
    let attempts = attempts.borrow();
    assert_eq!(attempts.len(), 1, "a warm-up call answers before its hedge");
    attempts[0].max_copies()
}

/// The nearest-rank `quantile` of sorted values: the smallest with at least `quantile` of
/// them at or below it.
fn nearest_rank(sorted: &[u64], quantile: f64) -> u64 {
    let total = sorted.len() as u128;
    let parts = (quantile * 1e6 + 0.5) as u128;
    let rank = (parts * total).div_ceil(1_000_000).clamp(1, total) as usize;
    sorted[rank - 1]
}

/// Whether latencies (µs, sorted) look like a queue to the adaptive delay: more than a
/// tenth of them over four times their median, all as histogram buckets see them. `None`
/// when the buckets' rounding could decide either way.
fn looks_like_a_queue(sorted: &[u64]) -> Option<bool> {
    let edge = |value: u64| (value + 1)..=(value + (value / 16).max(1));
    let median = edge(nearest_rank(sorted, 0.5));
    let (slow_above_low, slow_above_high) = (median.start() * 4, median.end() * 4);
    let surely_slow = sorted
        .iter()
        .filter(|&&value| *edge(value).start() > slow_above_high)
        .count();
    let maybe_slow = sorted
        .iter()
        .filter(|&&value| *edge(value).end() > slow_above_low)
        .count();
    let total = sorted.len();
    if surely_slow * 10 > total {
        Some(true)
    } else if maybe_slow * 10 <= total {
        Some(false)
    } else {
        None
    }
}
