//! The model's unit tests: the survival estimate, predictions against the formula worked by
//! hand, and the choice of delay.

use alloc::vec;

use super::*;

const MS: u64 = 1_000_000;
const MS_TENTH: Duration = Duration::from_micros(100);

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// The survival of `ended` latencies per class of `edges`, nothing censored.
fn survival_of(ended: &[u64], above: &mut [f64]) {
    kaplan_meier(ended, &vec![0; ended.len()], above);
}

#[test]
fn without_censoring_the_estimate_is_the_share_above_each_edge() {
    let mut above = [0.0; 4];
    survival_of(&[50, 30, 0, 20], &mut above);
    assert_eq!(above, [0.5, 0.2, 0.2, 0.0]);
}

#[test]
fn a_censored_latency_counts_as_running_until_its_age_and_never_as_ending() {
    // Four latencies: 1 ms, 2 ms, and two only known to exceed 2 ms (censored there).
    let mut above = [0.0; 3];
    kaplan_meier(&[1, 1, 0], &[0, 2, 0], &mut above);
    // Past 1 ms: 3 of 4 still run. Past 2 ms: of the 3 at risk, one ended: 2/3 of 3/4.
    assert_eq!(above[0], 0.75);
    assert!((above[1] - 0.5).abs() < 1e-12, "{}", above[1]);
    // Counted as ending at their age, the two would make half the calls end by 2 ms.
    let mut naive = [0.0; 3];
    survival_of(&[1, 3, 0], &mut naive);
    assert_eq!(naive[1], 0.0);
}

#[test]
fn calls_censored_past_every_ended_one_run_on() {
    let edges = [MS, 2 * MS, 3 * MS, 4 * MS];
    let mut above = [0.0; 4];
    kaplan_meier(&[2, 0, 0, 0], &[0, 2, 0, 0], &mut above);
    assert_eq!(above, [0.5, 0.5, 0.5, 0.5]);
    let survival = Survival::new(&edges, &above);
    // Unhedged, the p99 is never reached; a hedge at 1 ms catches half of the half.
    assert_eq!(survival.quantile(0.99), Duration::MAX);
    let hedged = survival.predict(Plan::new(ms(1), 2), 0.99);
    assert_eq!(hedged.latency, Duration::MAX);
    assert_eq!(hedged.unended, 0.25);
    // No delay reaches the p99: the delays are ranked at the p62.5 they reach, where a
    // hedge at 1 ms (for the half that asks, funded by the half that does not) ends three
    // calls in four by 2 ms.
    let choice = survival
        .choose(&Goal::new(0.99).budget(1.0))
        .expect("latencies");
    assert_eq!(choice.unended, 0.25);
    assert_eq!(choice.latency, Duration::MAX, "{choice:?}");
    assert_eq!(choice.delay, ms(1), "{choice:?}");
}

#[test]
fn no_latency_is_an_empty_survival_and_no_choice() {
    let mut above = [0.0; 3];
    survival_of(&[0, 0, 0], &mut above);
    let survival = Survival::new(&[MS, 2 * MS, 3 * MS], &above);
    assert!(survival.is_empty());
    assert_eq!(survival.choose(&Goal::new(0.99)), None);
}

#[test]
fn two_copies_at_once_end_at_the_faster_of_two_draws() {
    let edges = [MS, 2 * MS, 10 * MS];
    let mut above = [0.0; 3];
    survival_of(&[50, 40, 10], &mut above);
    let survival = Survival::new(&edges, &above);
    let plan = Plan::new(Duration::ZERO, 2);
    // P(call > t) = S(t)^2: 0.25 past 1 ms, 0.01 past 2 ms.
    assert_eq!(survival.call_above(plan, MS), 0.25);
    assert!((survival.call_above(plan, 2 * MS) - 0.01).abs() < 1e-12);
    assert_eq!(survival.call_quantile(plan, 0.99), ms(2));
    assert_eq!(survival.quantile(0.99), ms(10));
    // Every call starts its second copy at once.
    assert_eq!(survival.asks(plan), 1.0);
}

#[test]
fn a_hedge_after_a_delay_starts_only_for_calls_still_running() {
    let edges = [MS, 2 * MS, 50 * MS];
    let mut above = [0.0; 3];
    survival_of(&[80, 10, 10], &mut above);
    let survival = Survival::new(&edges, &above);
    let plan = Plan::new(ms(2), 3);
    // Copy 1 at 2 ms for the 10% still running; copy 2 at 4 ms for those whose copy 1
    // is still running too: 0.1 × S(2 ms) = 0.01.
    let asks = survival.asks(plan);
    assert!((asks - 0.11).abs() < 1e-12, "{asks}");
    // Past 3 ms: the original (0.1) and copy 1, 1 ms old (0.2): 0.02.
    assert!((survival.call_above(plan, 3 * MS) - 0.02).abs() < 1e-12);
    assert_eq!(survival.call_quantile(plan, 0.99), ms(4));
}

#[test]
fn a_budget_short_of_the_asks_grants_its_share_of_them() {
    let edges = [MS, 100 * MS];
    let mut above = [0.0; 2];
    survival_of(&[90, 10], &mut above);
    let survival = Survival::new(&edges, &above);
    let goal = Goal::new(0.99).budget(0.05);
    let prediction = survival.predict_for(&goal, ms(1));
    // The 90% of calls that ask for no copy earn 5% each: 4.5 copies per 100 calls, for
    // the 10 that ask.
    assert!((prediction.granted - 0.45).abs() < 1e-9, "{prediction:?}");
    assert!((prediction.extra - 0.045).abs() < 1e-9, "{prediction:?}");
    // Under half the paused calls are hedged: 5.5% still run past 2 ms, so the p99 is the
    // pause.
    assert_eq!(prediction.latency, ms(100));
}

/// 90% of calls in 0.1-1 ms, 10% paused for 100 ms: the paused replica of the Redis
/// benchmark.
fn paused_tenth() -> ([u64; 5], [f64; 5]) {
    let edges = [MS / 10, MS / 2, MS, 2 * MS, 100 * MS];
    let mut above = [0.0; 5];
    survival_of(&[50, 30, 10, 0, 10], &mut above);
    (edges, above)
}

#[test]
fn the_choice_hedges_past_the_body_where_a_tenth_of_calls_pause() {
    let (edges, above) = paused_tenth();
    let survival = Survival::new(&edges, &above);
    let choice = survival
        .choose(&Goal::new(0.99).budget(0.12))
        .expect("latencies");
    // 1 ms hedges only the paused calls, and catches every one of them: the 90% that
    // ask for none earn 10.8 copies per 100 calls.
    assert_eq!(choice.delay, ms(1));
    assert!((choice.extra - 0.10).abs() < 1e-9, "{choice:?}");
    assert_eq!(choice.latency, ms(2));
    // A p95 delay would sit inside the pause.
    assert_eq!(survival.quantile(0.95), ms(100));
}

#[test]
fn of_the_delays_near_the_best_tail_the_cheapest_is_chosen() {
    let (edges, above) = paused_tenth();
    let survival = Survival::new(&edges, &above);
    // At the p80, 0.1 ms predicts 0.6 ms for 50% extra copies, 0.5 ms predicts the same
    // 0.6 ms... within 5%, the one that starts the fewest copies wins.
    let goal = Goal::new(0.8).copies(2).budget(10.0);
    let choice = survival.choose(&goal).expect("latencies");
    let shortest = survival.predict_for(&goal, MS_TENTH);
    assert!(choice.extra < shortest.extra, "{choice:?} vs {shortest:?}");
    assert!(choice.latency.as_secs_f64() <= shortest.latency.as_secs_f64() * 1.05 + 1e-12);
}

#[test]
fn without_a_budget_only_delays_predicted_within_five_percent_are_considered() {
    let edges = [MS, 2 * MS, 10 * MS, 100 * MS];
    let mut above = [0.0; 4];
    survival_of(&[90, 6, 3, 1], &mut above);
    let survival = Survival::new(&edges, &above);
    let choice = survival.choose(&Goal::new(0.99)).expect("latencies");
    // 1 ms would start 10% extra copies; 2 ms starts 4%.
    assert_eq!(choice.delay, ms(2));
    assert!(choice.extra <= NO_BUDGET_EXTRA);
}

#[test]
fn when_no_delay_keeps_within_five_percent_the_fewest_copies_win() {
    let (edges, above) = paused_tenth();
    let survival = Survival::new(&edges, &above);
    let choice = survival.choose(&Goal::new(0.99)).expect("latencies");
    // Every delay short of the pause hedges 10%: none is allowed, so no hedge at all.
    assert_eq!(choice.extra, 0.0);
    assert_eq!(choice.delay, ms(100));
}

#[test]
fn the_choice_keeps_to_its_bounds() {
    let (edges, above) = paused_tenth();
    let survival = Survival::new(&edges, &above);
    let goal = Goal::new(0.99).budget(0.12).bounds(ms(5), ms(50));
    let choice = survival.choose(&goal).expect("latencies");
    assert_eq!(choice.delay, ms(5));
    let goal = Goal::new(0.99).budget(0.12).bounds(ms(200), ms(100));
    let choice = survival.choose(&goal).expect("latencies");
    assert_eq!(
        choice.delay,
        ms(200),
        "max_delay below min_delay is raised to it"
    );
}

#[test]
fn where_every_latency_ended_the_slowest_stands_for_every_longer_delay() {
    // A histogram's classes run on past the slowest latency (as the policy's do): 100
    // latencies within 3 ms, none slower. No delay helps the p99 much, so the cheapest
    // near the best is chosen: hedging past the slowest latency seen, not `max_delay`,
    // whose hedges would come too late for anything slow that comes next.
    let edges = [MS, 2 * MS, 3 * MS, 50 * MS, 200 * MS, 1_000 * MS];
    let mut above = [0.0; 6];
    survival_of(&[60, 30, 10, 0, 0, 0], &mut above);
    let survival = Survival::new(&edges, &above);
    let goal = Goal::new(0.99).budget(0.10).bounds(MS_TENTH, ms(200));
    let choice = survival.choose(&goal).expect("latencies");
    assert_eq!(choice.delay, ms(3), "{choice:?}");
    assert_eq!(choice.extra, 0.0);
    // Calls censored past every ended one run on: a delay as long as `max_delay` still
    // hedges them, and is tried.
    kaplan_meier(&[60, 30, 0, 0, 0, 0], &[0, 0, 10, 0, 0, 0], &mut above);
    let survival = Survival::new(&edges, &above);
    let choice = survival
        .choose(&Goal::new(0.99).bounds(MS_TENTH, ms(200)))
        .expect("latencies");
    assert_eq!(choice.delay, ms(200), "{choice:?}");
}

#[test]
fn huge_delays_and_quantiles_saturate() {
    let (edges, above) = paused_tenth();
    let survival = Survival::new(&edges, &above);
    let plan = Plan::new(Duration::MAX, 64);
    assert_eq!(survival.asks(plan), 0.0);
    assert_eq!(survival.call_quantile(plan, 2.0), ms(100));
    assert_eq!(
        survival.call_quantile(plan, f64::NAN),
        ms(100),
        "NaN: the slowest"
    );
}

#[test]
fn a_delay_whose_copies_the_budget_would_refuse_is_not_cheap_for_it() {
    // 100 latencies, 99 of the body (0.5-2.5 ms) and one still running past 2.5 ms: no
    // delay moves the p99 off 2.5 ms, so the cheapest near the best is chosen. At 0.1 ms
    // every call asks for a copy and the bucket, earning only from calls that ask for
    // none, grants none: no extra copy predicted, but every call asks, and the copies the
    // bucket does hold go to whichever calls ask first, not to the slow ones. Cheap is
    // asking little, not being refused.
    let edges = [MS / 2, MS, 3 * MS / 2, 2 * MS, 5 * MS / 2, 200 * MS];
    let mut above = [0.0; 6];
    kaplan_meier(&[5, 45, 35, 12, 2, 0], &[0, 0, 0, 0, 0, 1], &mut above);
    let survival = Survival::new(&edges, &above);
    let goal = Goal::new(0.99).budget(0.10).bounds(MS_TENTH, ms(200));
    let refused = survival.predict_for(&goal, MS_TENTH);
    assert_eq!((refused.asks, refused.extra), (1.0, 0.0), "{refused:?}");
    let choice = survival.choose(&goal).expect("latencies");
    assert!(choice.asks <= 0.10, "{choice:?}");
}
