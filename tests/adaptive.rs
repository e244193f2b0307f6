//! `adaptive_delay`: the delay follows a quantile of recent latencies, driven call by call
//! on `ManualTimer`.

mod common;

use std::time::Duration;

use common::ms;
use hedging::timer::ManualTimer;
use hedging::{Hedgeable, Policy};

/// Runs one call to completion whose original takes `original` and every hedge `hedge`;
/// returns the winner's index and how long the call took.
fn call(policy: &Policy<ManualTimer>, original: Duration, hedge: Duration) -> (usize, Duration) {
    common::scripted_call(policy, None, original, hedge)
}

fn adaptive(timer: &ManualTimer, quantile: f64) -> hedging::PolicyBuilder<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .adaptive_delay(quantile)
        .delay(ms(20))
        .min_delay(Duration::ZERO)
        .adaptive_min_samples(5)
        .adaptive_window(ms(400)) // quarters of 100 ms
        .timer(timer.clone())
}

/// Moves the clock into the next quarter window so the next recording publishes.
fn next_quarter(timer: &ManualTimer) {
    let quarter = ms(100);
    let into = timer.now().as_nanos() % quarter.as_nanos();
    timer.advance(quarter - Duration::from_nanos(into as u64));
}

const EDGE: u32 = 16; // bucket edges are at most 1/16 above the value

fn assert_near(delay: Duration, value: Duration) {
    assert!(
        delay >= value && delay <= value + value / EDGE,
        "delay {delay:?} is not the bucket of {value:?}"
    );
}

#[test]
fn uses_the_fixed_delay_until_enough_samples_exist() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.95).build();
    for _ in 0..4 {
        call(&policy, ms(2), ms(2));
    }
    assert_eq!(
        policy.delay(),
        Some(ms(20)),
        "4 samples are fewer than the 5 required"
    );
    next_quarter(&timer);
    assert_eq!(
        policy.delay(),
        Some(ms(20)),
        "a completed slot of 4 is still 4"
    );
    call(&policy, ms(2), ms(2));
    assert_near(policy.delay().unwrap(), ms(2));
}

#[test]
fn the_first_estimate_comes_with_the_last_sample_it_needs() {
    // 3,200 calls a second would wait a quarter of the default 10 s window for their
    // first estimate; it comes with the fifth latency instead, 10 ms in.
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.95)
        .adaptive_window(Duration::from_secs(10))
        .build();
    let mut winners = Vec::new();
    for _ in 0..5 {
        winners.push(call(&policy, ms(2), ms(2)).0);
    }
    assert_eq!(timer.now(), ms(10));
    assert_near(policy.delay().unwrap(), ms(2));
    // The next slow original is hedged at about 2 ms, not at the 20 ms fallback.
    let (winner, took) = call(&policy, ms(50), ms(1));
    assert_eq!((winners, winner), (vec![0; 5], 1));
    assert!(took <= ms(4), "{took:?}");
}

#[test]
fn the_hedge_goes_out_at_the_adaptive_delay() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.95).build();
    for _ in 0..10 {
        call(&policy, ms(3), ms(3));
    }
    next_quarter(&timer);
    call(&policy, ms(3), ms(3));
    let delay = policy.delay().unwrap();
    assert_near(delay, ms(3));

    // An original that stalls is hedged at the learned delay, not the 20 ms fallback.
    let (winner, took) = call(&policy, ms(500), ms(1));
    assert_eq!(winner, 1);
    assert_eq!(took, delay + ms(1));
}

#[test]
fn follows_the_tracked_quantile() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.9).max_delay(ms(1000)).build();
    // Latencies 10 µs..=1 ms, each once, all within the first quarter window.
    for latency in (1..=100).map(|i| Duration::from_micros(i * 10)) {
        call(&policy, latency, latency);
    }
    next_quarter(&timer);
    call(&policy, ms(1), ms(1));
    assert_near(policy.delay().unwrap(), Duration::from_micros(900));
}

#[test]
fn follows_a_shifting_workload_within_a_window_and_a_quarter() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.5).build();
    // A full window of 1 ms calls.
    while timer.now() < ms(500) {
        call(&policy, ms(1), ms(1));
    }
    assert_near(policy.delay().unwrap(), ms(1));

    // The workload shifts to 5 ms: after a window and a quarter, only 5 ms remains.
    let shift = timer.now();
    while timer.now() < shift + ms(500) {
        call(&policy, ms(5), ms(5));
    }
    assert_near(policy.delay().unwrap(), ms(5));

    // And back.
    let shift = timer.now();
    while timer.now() < shift + ms(500) {
        call(&policy, ms(1), ms(1));
    }
    assert_near(policy.delay().unwrap(), ms(1));
}

#[test]
fn min_and_max_delay_bound_the_estimate() {
    let timer = ManualTimer::new();
    let low = adaptive(&timer, 0.5).min_delay(ms(4)).build();
    let high = adaptive(&timer, 0.5).max_delay(ms(6)).build();
    for _ in 0..10 {
        call(&low, ms(1), ms(1));
        call(&high, ms(30), ms(30));
    }
    next_quarter(&timer);
    call(&low, ms(1), ms(1));
    call(&high, ms(30), ms(30));
    assert_eq!(low.delay(), Some(ms(4)));
    assert_eq!(high.delay(), Some(ms(6)));
}

#[test]
fn the_fallback_delay_is_clamped_to_the_bounds_too() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.5).delay(ms(50)).max_delay(ms(8)).build();
    assert_eq!(policy.delay(), Some(ms(8)));
}

#[test]
fn a_min_delay_above_max_delay_raises_max_delay() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.5)
        .min_delay(ms(9))
        .max_delay(ms(3))
        .delay(ms(1))
        .build();
    assert_eq!(policy.delay(), Some(ms(9)));
}

#[test]
fn a_dropped_original_is_recorded_at_its_age() {
    let timer = ManualTimer::new();
    // Median: every original stalls and loses to a 1 ms hedge sent at 20 ms.
    let policy = adaptive(&timer, 0.5).build();
    for _ in 0..5 {
        let (winner, took) = call(&policy, ms(10_000), ms(1));
        assert_eq!((winner, took), (1, ms(21)));
    }
    next_quarter(&timer);
    call(&policy, ms(1), ms(1));
    // Each loser counted as 21 ms (its age when dropped), above the 20 ms delay.
    assert_near(policy.delay().unwrap(), ms(21));
}

#[test]
fn hedges_are_not_recorded() {
    let timer = ManualTimer::new();
    // The minimum: originals win at 30 ms over hedges sent at 20 ms. Were the losing
    // hedges recorded (at 10 ms), the minimum would be 10 ms.
    let policy = adaptive(&timer, 0.0).build();
    for _ in 0..5 {
        assert_eq!(call(&policy, ms(30), ms(100)), (0, ms(30)));
    }
    next_quarter(&timer);
    call(&policy, ms(30), ms(100));
    assert_near(policy.delay().unwrap(), ms(30));
}

#[test]
fn instant_answers_record_nothing_and_arm_no_timer() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.5).adaptive_min_samples(1).build();
    for _ in 0..10 {
        let answer: Result<u32, ()> =
            futures::executor::block_on((|| async { Ok(1) }).hedged(&policy));
        assert_eq!(answer, Ok(1));
    }
    assert_eq!(
        policy.delay(),
        Some(ms(20)),
        "the instant calls recorded nothing"
    );
    call(&policy, ms(3), ms(3));
    // One sample is enough here: had the instant answers recorded zeros, the median
    // would be zero.
    assert_near(policy.delay().unwrap(), ms(3));
    assert_eq!(
        timer.sleeps_created(),
        2,
        "only the last call's copy and hedge timer"
    );
}

#[test]
fn a_nan_quantile_counts_as_the_95th_percentile() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, f64::NAN).max_delay(ms(1000)).build();
    // Latencies 10 µs..=1 ms, each once, all within the first quarter window.
    for latency in (1..=100).map(|i| Duration::from_micros(i * 10)) {
        call(&policy, latency, latency);
    }
    next_quarter(&timer);
    call(&policy, ms(1), ms(1));
    assert_near(policy.delay().unwrap(), Duration::from_micros(950));
}

#[test]
fn a_quantile_above_one_is_clamped_to_the_maximum() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 7.0).max_delay(ms(1000)).build();
    // Latencies 10 µs..=1 ms, each once, all within the first quarter window.
    for latency in (1..=100).map(|i| Duration::from_micros(i * 10)) {
        call(&policy, latency, latency);
    }
    next_quarter(&timer);
    call(&policy, ms(1), ms(1));
    assert_near(policy.delay().unwrap(), ms(1));
}

#[test]
fn a_zero_window_is_clamped_to_100_ms() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.5)
        .adaptive_window(Duration::ZERO)
        .build();
    for _ in 0..5 {
        call(&policy, ms(2), ms(2)); // ends at 10 ms
    }
    assert_near(policy.delay().unwrap(), ms(2));
    // Quarters of 25 ms: at 110 ms the first quarter is still in the window, at 130 ms
    // it has left it (with the builder's 400 ms, it would still be there).
    timer.advance(ms(100));
    assert_near(policy.delay().unwrap(), ms(2));
    timer.advance(ms(20));
    assert_eq!(policy.delay(), Some(ms(20)));
}

#[test]
fn zero_min_samples_is_clamped_to_one() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.5).adaptive_min_samples(0).build();
    next_quarter(&timer);
    assert_eq!(
        policy.delay(),
        Some(ms(20)),
        "an empty window keeps the fallback"
    );
    call(&policy, ms(1), ms(1));
    assert_near(policy.delay().unwrap(), ms(1));
}

#[test]
fn parallel_fallback_and_delay_fn_turn_it_off() {
    let timer = ManualTimer::new();
    assert_eq!(
        adaptive(&timer, 0.5).parallel().build().delay(),
        Some(Duration::ZERO)
    );
    assert_eq!(adaptive(&timer, 0.5).fallback().build().delay(), None);
    assert_eq!(
        adaptive(&timer, 0.5)
            .delay_fn(|_| Some(ms(3)))
            .build()
            .delay(),
        None
    );
    // `delay` after `adaptive_delay` only sets the starting point.
    let policy = adaptive(&timer, 0.5).delay(ms(7)).build();
    assert_eq!(policy.delay(), Some(ms(7)));
    assert!(format!("{policy:?}").contains("Adaptive"), "{policy:?}");
}

#[test]
fn the_adaptive_delay_falls_back_to_delay_after_an_idle_window() {
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.95).build();
    for _ in 0..10 {
        call(&policy, ms(3), ms(3));
    }
    next_quarter(&timer);
    call(&policy, ms(3), ms(3));
    assert_near(policy.delay().unwrap(), ms(3));

    // An hour with no calls: every latency the estimate came from is out of the window.
    timer.advance(Duration::from_secs(3600));
    assert_eq!(policy.delay(), Some(ms(20)), "the fixed delay is back");
    let (winner, took) = call(&policy, ms(500), ms(1));
    assert_eq!(
        (winner, took),
        (1, ms(21)),
        "hedged at the fixed delay, not the hour-old 3 ms"
    );
}

#[test]
fn a_min_delay_beyond_584_years_stays_an_exact_bound() {
    // The adaptive delay holds at most u64::MAX - 1 nanoseconds.
    let longest = Duration::from_nanos(u64::MAX - 1);
    let timer = ManualTimer::new();
    let policy = adaptive(&timer, 0.5).min_delay(Duration::MAX).build();
    assert_eq!(policy.delay(), Some(longest), "the fallback, clamped");
    for _ in 0..5 {
        call(&policy, ms(2), ms(2));
    }
    next_quarter(&timer);
    call(&policy, ms(2), ms(2));
    assert_eq!(
        policy.delay(),
        Some(longest),
        "the estimate, clamped the same"
    );
}

#[test]
fn the_queueing_guard_keeps_hedging_a_paused_replica_whose_hedges_win_at_the_healthy_pace() {
    // A fifth of calls meet a paused replica (100 ms): a crowd of slow calls, as a queue
    // makes. Where every hedge answers 1 ms after its own start, the slowness was not
    // shared: hedge at the quantile (held to `min_delay`). Where hedges win only after
    // 8 ms of their own, eight times the median, they queued as the originals did: hedge
    // past the slowest latency (at least the 18 ms an original ran before its hedge won).
    for (hedge, queue) in [(ms(1), false), (ms(8), true)] {
        let timer = ManualTimer::new();
        let policy = adaptive(&timer, 0.75)
            .min_delay(ms(10))
            .adaptive_window(ms(4000)) // quarters of a second, each holding 100 calls
            .build();
        let mut hedge_wins = 0;
        for _ in 0..4 {
            for call_index in 0..100 {
                let original = if call_index % 5 == 4 { ms(100) } else { ms(1) };
                hedge_wins += call(&policy, original, hedge).0;
            }
            // Into the next quarter, so the next recording turns the window.
            let into = timer.now().as_nanos() % ms(1000).as_nanos();
            timer.advance(ms(1000) - Duration::from_nanos(into as u64));
        }
        let delay = policy.delay().expect("an adaptive delay");
        if queue {
            assert!(delay >= ms(18), "slow hedges: {delay:?}");
        } else {
            assert_eq!(delay, ms(10), "hedges at the healthy pace");
            assert_eq!(hedge_wins, 4 * 20, "every paused call's hedge won");
        }
    }
}
