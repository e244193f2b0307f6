//! Workloads (a)–(d), (g), (h) and (i) against the best fixed delay in hindsight: fixed
//! delays swept with the budget, the one with the lowest p99 kept, and
//! `optimal_delay(0.99)` with the same budget held to it, as (e) and (f) are at every load.

use std::time::Duration;

use hedging::timer::ManualTimer;
use hedging::Policy;

use super::cluster::SWEPT_DELAYS_US;
use super::engine;
use super::heavy::Heavy;
use super::independent::{simulate, Report, Workload};
use super::keyed::{simulate_routed, Calls, TwoHosts, KEYS, SLOW_SHARES};
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

/// Sweeps fixed delays with the budget on `report`'s workload, and holds its recommended
/// row, `optimal_delay(0.99)` with the same budget, to the best of them.
pub fn run_hindsight(report: &Report) -> Hindsight {
    let workload = &report.workload;
    let budgeted = |&delay: &Delay| {
        simulate(
            workload,
            Config {
                delay,
                budget: true,
            },
        )
    };
    let optimal = report.recommended().clone();
    let best_fixed = engine::parallel_map(&fixed_delays(), budgeted)
        .into_iter()
        .min_by_key(|run| run.percentile(0.99))
        .expect("the sweep has delays");
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

/// The fixed delays of a sweep.
fn fixed_delays() -> Vec<Delay> {
    SWEPT_DELAYS_US
        .iter()
        .map(|&us| Delay::Fixed(Duration::from_micros(us)))
        .collect()
}

/// The delays of a sweep, with the budget, and `optimal_delay(0.99)` with it last.
fn delays() -> Vec<Delay> {
    let mut delays = fixed_delays();
    delays.push(Delay::Optimal(0.99));
    delays
}

/// For each group of calls `groups` names: the optimal row's p99 within [`HINDSIGHT`] of
/// the best fixed delay's for that group, where `run` runs a delay with the budget.
fn routed_line(
    claim: String,
    groups: &[(&str, &(dyn Fn(usize) -> bool + Sync))],
    run: impl Fn(Delay) -> Calls + Sync,
) -> Check {
    let delays = delays();
    let runs = engine::parallel_map(&delays, |&delay| run(delay));
    let (optimal, fixed) = runs.split_last().expect("the sweep has delays");
    let mut holds = true;
    let measured = groups
        .iter()
        .map(|(name, group)| {
            let p99 = |calls: &Calls| calls.percentile_of(0.99, group);
            let (best, at) = fixed
                .iter()
                .zip(&delays)
                .map(|(calls, delay)| (p99(calls), delay))
                .min_by_key(|(p99, _)| *p99)
                .expect("the sweep has delays");
            let ratio = p99(optimal).as_secs_f64() / best.as_secs_f64();
            holds &= ratio <= HINDSIGHT;
            let fixed_label = Config {
                delay: *at,
                budget: true,
            }
            .label();
            format!(
                "{name}: {} vs {} ({ratio:.2}x; {fixed_label}), {:.2}% extra",
                ms_text(p99(optimal)),
                ms_text(best),
                optimal.extra_of(group) * 100.0
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Check {
        claim,
        measured,
        holds,
    }
}

/// (g) at each slow share: one policy keyed by host with `optimal_delay(0.99)` against
/// the best fixed delay of a policy per host, each host its own budget, host by host.
pub fn two_hosts_hindsight() -> Vec<Check> {
    SLOW_SHARES
        .iter()
        .map(|&share| {
            let hosts = TwoHosts::at(share);
            let run = |delay: Delay| {
                let config = Config {
                    delay,
                    budget: true,
                };
                let keyed = matches!(delay, Delay::Optimal(_));
                let policies = |timer: &ManualTimer| -> Vec<Policy<ManualTimer>> {
                    match keyed {
                        true => vec![config.builder(timer.clone()).adaptive_keys(KEYS).build()],
                        false => vec![config.policy(timer.clone()), config.policy(timer.clone())],
                    }
                };
                let route = |call: usize| {
                    let host = hosts.host(call);
                    (if keyed { 0 } else { host }, host)
                };
                simulate_routed(hosts.calls, policies, route, move |call, copy| {
                    hosts.latency(call, copy)
                })
            };
            let fast = |call: usize| hosts.host(call) == 0;
            let slow = |call: usize| hosts.host(call) == 1;
            routed_line(
                format!(
                    "(g) {:.0}% slow: optimal p99 + 10% budget keyed by host: each host's p99 <= {HINDSIGHT:.2}x the best fixed delay of a policy per host with the same budget",
                    share * 100.0
                ),
                &[("fast host", &fast), ("slow host", &slow)],
                run,
            )
        })
        .collect()
}

/// (h) or (i): one policy with `optimal_delay(0.99)` and the budget against the best fixed
/// delay with the same budget, over every call.
pub fn heavy_hindsight(heavy: Heavy) -> Check {
    let run = |delay: Delay| {
        let config = Config {
            delay,
            budget: true,
        };
        simulate_routed(
            heavy.calls,
            |timer| vec![config.policy(timer.clone())],
            |_| (0, 0),
            move |call, copy| heavy.latency(call, copy),
        )
    };
    routed_line(
        format!(
            "({}) optimal p99 + 10% budget: p99 <= {HINDSIGHT:.2}x the best fixed delay with the same budget",
            heavy.key
        ),
        &[("every call", &|_| true)],
        run,
    )
}
