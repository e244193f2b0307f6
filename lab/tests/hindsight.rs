//! Workloads (a)-(d) against the best fixed delay in hindsight: `optimal_delay(0.99)` with
//! the budget, held to the lowest p99 of the fixed delays swept with the same budget, on
//! the same deterministic figures the demo prints.

#[path = "../../examples/lab/mod.rs"]
mod lab;

use lab::{Config, Delay, Workload};

#[test]
fn on_independent_copies_optimal_delay_is_within_a_tenth_of_the_best_fixed_delay() {
    for workload in Workload::all(1) {
        let hindsight = lab::run_hindsight(&workload);
        let Config { delay, budget } = hindsight.best_fixed.config;
        assert!(matches!(delay, Delay::Fixed(_)) && budget, "{delay:?}");
        assert_eq!(hindsight.optimal.config.delay, Delay::Optimal(0.99));
        let target = &hindsight.target;
        assert!(target.holds, "{}: {}", target.claim, target.measured);
    }
}
