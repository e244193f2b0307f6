//! The tail-latency lab's acceptance lines, asserted on the same deterministic figures
//! `cargo run --release --example tail_latency` prints.

#[path = "../examples/lab/mod.rs"]
mod lab;

use lab::{Config, Delay, Kind, Workload};

fn workload(key: char) -> Workload {
    *Workload::all(1)
        .iter()
        .find(|workload| workload.key == key)
        .expect("a lab workload")
}

fn assert_checks_hold(report: &lab::Report) {
    assert!(
        !report.checks.is_empty(),
        "workload ({}) has acceptance lines",
        report.workload.key
    );
    for check in &report.checks {
        assert!(check.holds, "{}: {}", check.claim, check.measured);
    }
}

#[test]
fn a_stalls_p99_is_10x_lower_for_at_most_5_percent_extra_copies() {
    let report = lab::run(&workload('a'));
    assert_checks_hold(&report);
    let unhedged = report.unhedged().percentile(0.99);
    for hedged in [
        report.fixed(false),
        report.fixed(true),
        report.adaptive(false),
        report.adaptive(true),
    ] {
        let p99 = hedged.percentile(0.99);
        assert!(
            unhedged >= p99 * 10,
            "{}: {p99:?} vs {unhedged:?}",
            hedged.config.label()
        );
        assert!(
            hedged.extra_ratio() <= 0.05 + 10.0 / hedged.calls as f64,
            "{}",
            hedged.config.label()
        );
    }
    // The fixed p95 delay sends exactly the calls slower than it: 5% of them at most.
    assert!(report.fixed(false).extra_ratio() <= 0.05);
}

#[test]
fn a_fixed_delay_costs_nothing_over_the_ideal_model() {
    let workload = workload('a');
    let p95 = workload.hindsight_delay(0.95);
    let run = lab::simulate(
        &workload,
        Config {
            delay: Delay::Fixed(p95),
            budget: false,
        },
    );
    // Virtual time: every hedge starts exactly at its due time, call by call.
    assert_eq!(run.latencies, workload.ideal(Some(p95)));
    let ideal_extra = (workload.ideal_extra(p95) * workload.calls as f64).round() as u64;
    assert_eq!(run.extra_copies, ideal_extra);
}

#[test]
fn the_simulation_is_deterministic() {
    let workload = Workload::stalls(1, 4_000);
    let config = Config {
        delay: Delay::Adaptive(lab::QUANTILE),
        budget: true,
    };
    let (first, second) = (
        lab::simulate(&workload, config),
        lab::simulate(&workload, config),
    );
    assert_eq!(first.latencies, second.latencies);
    assert_eq!(
        (first.extra_copies, first.budget_denied),
        (second.extra_copies, second.budget_denied)
    );
    assert!(first.budget_denied > 0, "the budget is exercised");
}

#[test]
fn c_shifting_adaptive_p99_is_within_10_percent_of_the_best_fixed_delay() {
    let report = lab::run(&workload('c'));
    assert_checks_hold(&report);
    let best = report
        .best_fixed
        .as_ref()
        .expect("the hindsight search ran");
    let adaptive = report.adaptive(false);
    assert!(
        best.extra_ratio() <= adaptive.extra_ratio() + 1e-9,
        "the best fixed delay costs no more"
    );
    assert!(adaptive.percentile(0.99).as_secs_f64() <= best.percentile(0.99).as_secs_f64() * 1.10);
}

#[test]
fn d_brownout_the_budget_bounds_extra_copies_in_every_second() {
    let workload = workload('d');
    let Kind::Brownout { from, until } = workload.kind else {
        unreachable!("(d) is the brownout")
    };
    let report = lab::run(&workload);
    assert_checks_hold(&report);
    for budgeted in [report.fixed(true), report.adaptive(true)] {
        for second in from.as_secs()..until.as_secs() {
            let (calls, extra) = budgeted.per_second[second as usize];
            assert!(
                extra as f64 <= calls as f64 * (lab::BUDGET_RATIO + 0.005),
                "{} second {second}: {extra} extra for {calls} calls",
                budgeted.config.label()
            );
        }
    }
    // Without the budget, the fixed delay tuned before the brownout hedges most calls.
    let amplified = report.fixed(false).max_extra_per_second(from, until);
    assert!(amplified > 0.5, "{amplified}");
    assert!(report.fixed(true).budget_denied > 0);
}
