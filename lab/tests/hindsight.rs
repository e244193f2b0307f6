//! Workloads (a)-(d), (g), (h) and (i) against the best fixed delay in hindsight:
//! `optimal_delay(0.99)` with the budget, held to the lowest p99 of the fixed delays swept
//! with the same budget, on the same deterministic figures the demo prints.

#[path = "../../examples/lab/mod.rs"]
mod lab;

use lab::{Config, Delay, Workload};

#[test]
fn on_independent_copies_optimal_delay_is_within_a_tenth_of_the_best_fixed_delay() {
    for workload in Workload::all(1) {
        let hindsight = lab::run_hindsight(&lab::run(&workload));
        let Config { delay, budget } = hindsight.best_fixed.config;
        assert!(matches!(delay, Delay::Fixed(_)) && budget, "{delay:?}");
        assert_eq!(hindsight.optimal.config.delay, Delay::Optimal(0.99));
        let target = &hindsight.target;
        assert!(target.holds, "{}: {}", target.claim, target.measured);
    }
}

#[test]
fn keyed_by_host_optimal_delay_is_within_a_tenth_of_each_hosts_best_fixed_delay() {
    let lines = lab::two_hosts_hindsight();
    assert_eq!(lines.len(), 2, "both slow shares");
    for line in &lines {
        assert_eq!(
            line.measured.matches("host: ").count(),
            2,
            "{}",
            line.measured
        );
        assert!(line.holds, "{}: {}", line.claim, line.measured);
    }
}

#[test]
fn where_the_request_carries_its_slowness_optimal_delay_is_within_a_tenth_of_the_best_fixed_delay()
{
    for heavy in [lab::Heavy::requests(), lab::Heavy::switching()] {
        let line = lab::heavy_hindsight(heavy);
        assert!(line.holds, "{}: {}", line.claim, line.measured);
    }
}
