//! Workloads (a)–(d) against the best fixed delay in hindsight: fixed delays swept with
//! the budget, the one with the lowest p99 kept, and `optimal_delay(0.99)` with the same
//! budget held to it, as (e) and (f) are at every load.

use std::time::Duration;

use super::independent::{simulate, Workload};
use super::queueing::SWEPT_DELAYS_US;
use super::{ms_text, Check, Config, Delay, Run};

/// The most the optimal row's p99 may be of the best fixed delay's with the same budget.
pub const HINDSIGHT: f64 = 1.1;

/// One workload's optimal row beside the best fixed delay with the same budget.
#[derive(Clone, Debug)]
pub struct Hindsight {
    pub workload: Workload,
    pub optimal: Run,
    /// The swept fixed delay, with the budget, whose p99 is the lowest.
    pub best_fixed: Run,
    /// The line: the optimal row's p99 within [`HINDSIGHT`] of the best fixed delay's.
    pub target: Check,
}

/// Sweeps fixed delays with the budget on `workload`, and runs `optimal_delay(0.99)`
/// with the same budget beside the best of them.
pub fn run_hindsight(workload: &Workload) -> Hindsight {
    let budgeted = |delay| {
        simulate(
            workload,
            Config {
                delay,
                budget: true,
            },
        )
    };
    let best_fixed = SWEPT_DELAYS_US
        .iter()
        .map(|&us| budgeted(Delay::Fixed(Duration::from_micros(us))))
        .min_by_key(|run| run.percentile(0.99))
        .expect("the sweep has delays");
    let optimal = budgeted(Delay::Optimal(0.99));
    let ratio = optimal.percentile(0.99).as_secs_f64() / best_fixed.percentile(0.99).as_secs_f64();
    let target = Check {
        claim: format!(
            "({}) {}: p99 <= {HINDSIGHT:.2}x the best fixed delay with the same budget",
            workload.key,
            optimal.config.label()
        ),
        measured: format!(
            "{} vs {} ({ratio:.2}x; {}), {:.2}% vs {:.2}% extra",
            ms_text(optimal.percentile(0.99)),
            ms_text(best_fixed.percentile(0.99)),
            best_fixed.config.label(),
            optimal.extra_ratio() * 100.0,
            best_fixed.extra_ratio() * 100.0,
        ),
        holds: ratio <= HINDSIGHT,
    };
    Hindsight {
        workload: *workload,
        optimal,
        best_fixed,
        target,
    }
}
