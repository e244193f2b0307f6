//! The tracker's unit tests: the estimate, its window and its bounds.

use alloc::vec::Vec;

use super::choice::{median_rises_with_hedging, PROBE_EVERY};
use super::*;

const MS: Duration = Duration::from_millis(1);

fn tracker(quantile: f64, min_samples: u32) -> LatencyTracker {
    let config = AdaptiveConfig {
        quantile,
        min_samples,
        window: 4 * MS * 1000,
        choice: Choice::Quantile,
    };
    LatencyTracker::new(&seed(config, Duration::ZERO))
}

/// A tracker's seed: a 10 ms fallback, `min_delay` and no upper bound, no budget.
fn seed(config: AdaptiveConfig, min_delay: Duration) -> TrackerSeed {
    TrackerSeed {
        config,
        fallback: 10 * MS,
        min_delay,
        max_delay: Duration::MAX,
        budget: None,
    }
}

#[test]
fn the_first_estimate_comes_once_min_samples_are_known() {
    let tracker = tracker(0.5, 10);
    for _ in 0..9 {
        tracker.record(2 * MS, Duration::ZERO);
    }
    assert_eq!(tracker.delay(MS), 10 * MS, "nine latencies: the fallback");
    // The tenth, still in the first quarter window, publishes the first estimate.
    tracker.record(2 * MS, MS);
    let delay = tracker.delay(MS);
    assert!((2 * MS..=2 * MS + MS / 16).contains(&delay), "{delay:?}");
    // The window's rules take over when the slot completes: the same latencies.
    tracker.record(3 * MS, 1000 * MS);
    let delay = tracker.delay(1000 * MS);
    assert!((2 * MS..=2 * MS + MS / 16).contains(&delay), "{delay:?}");
}

#[test]
fn too_few_samples_keep_the_fallback() {
    let tracker = tracker(0.5, 10);
    for _ in 0..8 {
        tracker.record(2 * MS, Duration::ZERO);
    }
    tracker.record(2 * MS, 1000 * MS);
    assert_eq!(tracker.delay(1000 * MS), 10 * MS);
}

#[test]
fn an_early_estimate_counts_only_what_the_window_still_holds() {
    // Ten latencies, but the first five left the window with an idle gap: no
    // estimate until ten are known again.
    let tracker = tracker(0.5, 10);
    for _ in 0..5 {
        tracker.record(2 * MS, Duration::ZERO);
    }
    for _ in 0..5 {
        tracker.record(2 * MS, 10_000 * MS);
    }
    assert_eq!(tracker.delay(10_000 * MS), 10 * MS);
    for _ in 0..10 {
        tracker.record(2 * MS, 10_001 * MS);
    }
    let delay = tracker.delay(10_001 * MS);
    assert!((2 * MS..=2 * MS + MS / 16).contains(&delay), "{delay:?}");
}

#[test]
fn the_quantile_is_nearest_rank() {
    let tracker = tracker(0.95, 1);
    for latency in 1..=100u64 {
        tracker.record(Duration::from_micros(latency * 100), Duration::ZERO);
    }
    // The 95th of 100 values, 9.5 ms, rounded up to its bucket's edge: read once the
    // slot completed, with no recording since.
    let delay = tracker.delay(1000 * MS);
    assert!(
        (Duration::from_micros(9_500)..=Duration::from_micros(9_500 + 9_500 / 16)).contains(&delay),
        "{delay:?}"
    );
}

#[test]
fn old_samples_leave_after_a_window() {
    let tracker = tracker(0.5, 1);
    for _ in 0..1000 {
        tracker.record(MS, Duration::ZERO);
    }
    // One slow sample per slot for a whole window replaces the fast ones.
    for slot in 1..=5u32 {
        tracker.record(8 * MS, slot * 1000 * MS);
    }
    let delay = tracker.delay(5000 * MS);
    assert!(delay >= 8 * MS, "{delay:?}");
}

#[test]
fn a_long_idle_gap_clears_every_slot() {
    // Two samples make an estimate, so the one recorded after the gap is not enough.
    let tracker = tracker(0.5, 2);
    tracker.record(MS, Duration::ZERO);
    tracker.record(MS, 1000 * MS);
    assert!(tracker.delay(1000 * MS) < 2 * MS);
    tracker.record(MS, 100_000 * MS);
    assert_eq!(
        tracker.delay(100_000 * MS),
        10 * MS,
        "an empty window falls back"
    );
}

#[test]
fn a_read_after_an_idle_window_falls_back_without_a_recording() {
    let tracker = tracker(0.5, 1);
    tracker.record(MS, Duration::ZERO);
    assert!(tracker.delay(1000 * MS) < 2 * MS);
    // Still within the window of the last sample: kept.
    assert!(tracker.delay(4999 * MS) < 2 * MS);
    // A whole window later, with nothing recorded since: forgotten.
    assert_eq!(tracker.delay(5000 * MS), 10 * MS);
}

/// Records `fast` latencies of 1 ms and `slow` of 10 ms in slot `slot` of the test
/// tracker's ring (slots of one second).
fn record_slot(tracker: &LatencyTracker, slot: u32, fast: u32, slow: u32) {
    let at = slot * 1000 * MS;
    (0..fast).for_each(|_| tracker.record(MS, at));
    (0..slow).for_each(|_| tracker.record(10 * MS, at));
}

#[test]
fn stragglers_keep_the_quantile() {
    let tracker = tracker(0.9, 1);
    // 5% of calls ten times the median: stragglers, hedged at the p90.
    record_slot(&tracker, 0, 95, 5);
    record_slot(&tracker, 1, 95, 5);
    let delay = tracker.delay(2000 * MS);
    assert!(delay < MS + MS / 16, "{delay:?}");
}

#[test]
fn a_queue_of_slow_calls_is_not_hedged_below_the_slowest_latency() {
    let tracker = tracker(0.5, 1);
    // 20% of calls ten times the median in both newest slots: a queue.
    record_slot(&tracker, 0, 80, 20);
    record_slot(&tracker, 1, 80, 20);
    let delay = tracker.delay(2000 * MS);
    assert!(
        (10 * MS..=10 * MS + 10 * MS / 16).contains(&delay),
        "{delay:?}"
    );
}

#[test]
fn one_slot_straddling_a_shift_keeps_the_quantile() {
    let tracker = tracker(0.5, 1);
    // The older slot is all fast; the newest has a crowd of slow calls, as a slot does
    // when the median moves within it.
    record_slot(&tracker, 0, 100, 0);
    record_slot(&tracker, 1, 70, 30);
    let delay = tracker.delay(2000 * MS);
    assert!(delay < MS + MS / 16, "{delay:?}");
}

#[test]
fn a_queue_in_the_only_slot_so_far_counts() {
    let tracker = tracker(0.5, 1);
    record_slot(&tracker, 0, 70, 30);
    let delay = tracker.delay(1000 * MS);
    assert!(delay >= 10 * MS, "{delay:?}");
}

#[test]
fn bounds_beyond_the_estimate_range_are_clamped_to_it() {
    let config = AdaptiveConfig {
        quantile: 0.5,
        min_samples: 1,
        window: 4 * MS * 1000,
        choice: Choice::Quantile,
    };
    let huge = Duration::from_secs(u64::MAX);
    let tracker = LatencyTracker::new(&seed(config, huge));
    assert_eq!(tracker.delay(Duration::ZERO), MAX_ESTIMATE);
    tracker.record(MS, Duration::ZERO);
    assert_eq!(
        tracker.delay(1000 * MS),
        MAX_ESTIMATE,
        "the bound holds exactly"
    );
}

/// An `optimal_delay` tracker (p99, two copies) with a budget of `ratio`, quarters of 1 s.
fn optimal_tracker(ratio: f64) -> LatencyTracker {
    let config = AdaptiveConfig {
        quantile: 0.99,
        min_samples: 10,
        window: 4 * MS * 1000,
        choice: Choice::Optimal { copies: 2 },
    };
    LatencyTracker::new(&TrackerSeed {
        budget: Some(Budget::new(ratio)),
        ..seed(config, Duration::ZERO)
    })
}

/// A slot of 80 calls in 1 ms and 20 hedged at 9 ms whose originals were dropped at
/// 10 ms, censored: a crowd of slow calls, whose hedges won (each `hedge` after its own
/// start) or not.
fn record_hedged_slot(tracker: &LatencyTracker, slot: u32, hedges_won: bool, hedge: Duration) {
    let at = slot * 1000 * MS;
    (0..80).for_each(|_| tracker.record(MS, at));
    for _ in 0..20 {
        tracker.record_ending(&Ending {
            sample: Sample::new(10 * MS, at),
            shown: Shown::HEDGED
                .with(Shown::HEDGE_WON, hedges_won)
                .with(Shown::CENSORED, hedges_won),
            hedge_nanos: if hedges_won {
                nanos(hedge)
            } else {
                UNKNOWN_PACE
            },
        });
    }
}

/// The delays of an `optimal_delay` tracker and of a p50 one after two slots of
/// [`record_hedged_slot`], hedges winning or not, each `hedge` after its own start.
fn delays_after_hedged_slots(hedges_won: bool, hedge: Duration) -> (Duration, Duration) {
    let optimal = optimal_tracker(0.5);
    let quantile = tracker(0.5, 1);
    for slot in 0..2 {
        record_hedged_slot(&optimal, slot, hedges_won, hedge);
        record_hedged_slot(&quantile, slot, hedges_won, hedge);
    }
    (optimal.delay(2000 * MS), quantile.delay(2000 * MS))
}

#[test]
fn a_crowd_whose_hedges_win_at_the_healthy_pace_is_not_a_queue() {
    // The hedges answered in 1 ms, the originals' median: the slowness was not shared.
    // Hedge past the body, where the model says, or at the quantile.
    let (optimal, quantile) = delays_after_hedged_slots(true, MS);
    assert!(optimal < 2 * MS, "{optimal:?}");
    assert!(quantile < MS + MS / 16, "{quantile:?}");
}

#[test]
fn a_crowd_whose_hedges_win_only_as_slowly_as_the_originals_is_a_queue() {
    // The hedges won, but took 5 ms of their own, five times the originals' median: they
    // queued too, and another copy would queue as well.
    let (optimal, quantile) = delays_after_hedged_slots(true, 5 * MS);
    assert!(optimal >= 10 * MS, "{optimal:?}");
    assert!(quantile >= 10 * MS, "{quantile:?}");
}

#[test]
fn a_crowd_whose_hedges_lose_is_a_queue() {
    // The copies were as slow as the originals: hedge only past the slowest latency.
    let (optimal, quantile) = delays_after_hedged_slots(false, MS);
    assert!(optimal >= 10 * MS, "{optimal:?}");
    assert!(quantile >= 10 * MS, "{quantile:?}");
}

#[test]
fn a_median_that_rises_with_the_share_of_calls_hedged_is_a_queue() {
    // Two slots hedged 1% with a 1 ms median, two hedged 8% with 1.5 ms: the copies load.
    let loaded = [
        Some((0.01, 1000)),
        Some((0.08, 1500)),
        Some((0.01, 1000)),
        Some((0.08, 1500)),
        None,
    ];
    assert!(median_rises_with_hedging(&loaded));
    // The same shares with a median that holds: the slowness was the replica's.
    let held = loaded.map(|slot| slot.map(|(share, _)| (share, 1000)));
    assert!(!median_rises_with_hedging(&held));
    // Too little difference in the shares to tell.
    let even = loaded.map(|slot| slot.map(|(_, median)| (0.05, median)));
    assert!(!median_rises_with_hedging(&even));
    assert!(!median_rises_with_hedging(&[Some((0.08, 1500)), None]));
}

#[test]
fn a_queue_is_probed_one_slot_in_four_past_its_p98() {
    let tracker = tracker(0.5, 1);
    // Every slot a crowd of slow calls, and no hedge sent: a queue.
    let mut delays = Vec::new();
    for slot in 0..8 {
        // 60 calls in 1 ms, 39 in 10 ms and one in 40 ms: the slowest is 40 ms, the p98
        // 10 ms.
        let at = slot * 1000 * MS;
        (0..60).for_each(|_| tracker.record(MS, at));
        (0..39).for_each(|_| tracker.record(10 * MS, at));
        tracker.record(40 * MS, at);
        delays.push(tracker.delay((slot + 1) * 1000 * MS));
    }
    for (slot, delay) in delays.iter().enumerate() {
        let entered = slot as u64 + 1;
        if entered.is_multiple_of(PROBE_EVERY) {
            assert!(
                (10 * MS..=10 * MS + MS).contains(delay),
                "slot {entered}: {delay:?}"
            );
        } else {
            assert!(*delay >= 40 * MS, "slot {entered}: {delay:?}");
        }
    }
}

#[test]
fn refusals_beyond_the_models_lower_the_ratio_it_plans_for() {
    let tracker = optimal_tracker(0.10);
    // A first estimate, hedging at the body's edge.
    record_slot(&tracker, 0, 95, 5);
    let before = tracker.headroom.load(Relaxed);
    assert_eq!(before, FULL_HEADROOM);
    // In the next slot, 5 calls hedged and 45 refused: far more than a 10% budget
    // funded by 50 calls would refuse on its own.
    let at = 1000 * MS;
    (0..50).for_each(|_| tracker.record(MS, at));
    for refused in (0..50).map(|call| call >= 5) {
        tracker.record_ending(&Ending {
            sample: Sample::new(10 * MS, at),
            shown: Shown::default()
                .with(Shown::HEDGED, !refused)
                .with(Shown::REFUSED, refused),
            hedge_nanos: UNKNOWN_PACE,
        });
    }
    tracker.delay(2000 * MS);
    let after = tracker.headroom.load(Relaxed);
    assert!(after < before, "{after}");
    assert!(after >= FULL_HEADROOM / 2, "{after}");
}
