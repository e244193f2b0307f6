//! The lab's report for workloads (a)-(d): the acceptance lines each is held to, and the
//! tables the demo prints and docs/lab.md shows.

use std::fmt::Write as _;
use std::time::Duration;

use super::independent::{extra_above, simulate, Kind, Report};
use super::{ms_text, percentile, Check, Config, Delay, Run, BUDGET_RATIO, RATE};

/// The most the budget may add to the same delay's p99, and to its p99.9, where it should
/// cost nothing.
pub const BUDGET_COST: (f64, f64) = (1.1, 1.5);

/// What the budget costs `budgeted` against `unbudgeted`, the same delay without it: the
/// line that it costs no tail, labelled `key`.
pub(super) fn check_budget_cost(key: &str, budgeted: &Run, unbudgeted: &Run) -> Check {
    let ratio =
        |q: f64| budgeted.percentile(q).as_secs_f64() / unbudgeted.percentile(q).as_secs_f64();
    let (p99, p999) = (ratio(0.99), ratio(0.999));
    Check {
        claim: format!(
            "({key}) {}: the budget costs no tail (p99 <= {:.1}x, p99.9 <= {:.1}x the same delay without it)",
            budgeted.config.label(),
            BUDGET_COST.0,
            BUDGET_COST.1
        ),
        measured: format!(
            "p99 {} vs {} ({p99:.2}x), p99.9 {} vs {} ({p999:.2}x), {} refused",
            ms_text(budgeted.percentile(0.99)),
            ms_text(unbudgeted.percentile(0.99)),
            ms_text(budgeted.percentile(0.999)),
            ms_text(unbudgeted.percentile(0.999)),
            budgeted.budget_denied
        ),
        holds: p99 <= BUDGET_COST.0 && p999 <= BUDGET_COST.1,
    }
}

/// (a): p99 at least 10× lower than unhedged for at most 5% extra copies (a p95 delay's
/// share; the budget's ratio for `optimal_delay`, which spends what it is granted where it
/// cuts the tail), within 10% of the ideal model, and the budget costing no tail.
pub(super) fn check_stalls(report: &mut Report) {
    let unhedged = report.unhedged().percentile(0.99);
    let unhedged_tail = report.unhedged().percentile(0.999);
    let mut checks = Vec::new();
    for run in report
        .rows
        .iter()
        .map(|row| &row.run)
        .filter(|run| run.config.delay != Delay::Off)
    {
        let p99 = run.percentile(0.99);
        let ratio = unhedged.as_secs_f64() / p99.as_secs_f64();
        let extra = run.extra_ratio();
        let budget_slack = if run.config.budget {
            10.0 / run.calls as f64
        } else {
            0.0
        };
        let most = match run.config.delay {
            Delay::Optimal(_) => BUDGET_RATIO,
            _ => 0.05,
        };
        checks.push(Check {
            claim: format!(
                "(a) {}: p99 >= 10x lower than unhedged, extra copies <= {:.0}%",
                run.config.label(),
                most * 100.0
            ),
            measured: format!(
                "{} vs {} ({ratio:.1}x), {:.2}% extra; p99.9 {} vs {} ({:.1}x)",
                ms_text(p99),
                ms_text(unhedged),
                extra * 100.0,
                ms_text(run.percentile(0.999)),
                ms_text(unhedged_tail),
                unhedged_tail.as_secs_f64() / run.percentile(0.999).as_secs_f64()
            ),
            holds: ratio >= 10.0 && extra <= most + budget_slack,
        });
    }
    let ideal = &report.rows[1].ideal;
    let fixed = report.fixed(false);
    checks.push(Check {
        claim: "(a) fixed p95: p99 within 10% of the ideal model".to_string(),
        measured: format!(
            "{} vs ideal {}; p99.9 {} vs ideal {}",
            ms_text(fixed.percentile(0.99)),
            ms_text(percentile(ideal, 0.99)),
            ms_text(fixed.percentile(0.999)),
            ms_text(percentile(ideal, 0.999))
        ),
        holds: fixed.percentile(0.99).as_secs_f64() <= percentile(ideal, 0.99).as_secs_f64() * 1.10,
    });
    checks.push(check_budget_cost(
        "a",
        report.adaptive(true),
        report.adaptive(false),
    ));
    report.checks = checks;
}

/// (c): the adaptive p99 within 10% of the best fixed delay in hindsight, at no more
/// extra copies than the adaptive run sent.
pub(super) fn check_shifting(report: &mut Report) {
    let workload = report.workload;
    let adaptive = report.adaptive(false).clone();
    // The smallest delay on a 50 µs grid whose ideal extra copies fit the adaptive run's:
    // the lowest p99 at that cost, since a longer delay only makes the tail longer.
    let originals = workload.sorted_originals();
    let best = (1..=400u32)
        .map(|step| Duration::from_micros(50) * step * workload.median.as_millis().max(1) as u32)
        .find(|&delay| extra_above(&originals, delay) <= adaptive.extra_ratio())
        .expect("a long enough delay sends no extra copies");
    let best_run = simulate(
        &workload,
        Config {
            delay: Delay::Fixed(best),
            budget: false,
        },
    );
    let (adaptive_p99, best_p99) = (adaptive.percentile(0.99), best_run.percentile(0.99));
    report.checks = vec![
        Check {
            claim: "(c) adaptive p95: p99 within 10% of the best fixed delay in hindsight"
                .to_string(),
            measured: format!(
                "{} vs {} (fixed {}, {:.2}% extra vs {:.2}%); p99.9 {} vs {}",
                ms_text(adaptive_p99),
                ms_text(best_p99),
                ms_text(best),
                adaptive.extra_ratio() * 100.0,
                best_run.extra_ratio() * 100.0,
                ms_text(adaptive.percentile(0.999)),
                ms_text(best_run.percentile(0.999))
            ),
            holds: adaptive_p99.as_secs_f64() <= best_p99.as_secs_f64() * 1.10,
        },
        check_budget_cost("c", report.adaptive(true), &adaptive),
    ];
    report.best_fixed = Some(best_run);
}

/// (d): with the budget, extra copies at most the ratio + 0.5 points over the brownout as
/// a whole and at most twice the ratio in any second of it; without it, the amplification
/// the budget prevents.
pub(super) fn check_brownout(report: &mut Report, from: Duration, until: Duration) {
    let mut checks = Vec::new();
    for run in report
        .rows
        .iter()
        .map(|row| &row.run)
        .filter(|run| run.config.delay != Delay::Off)
    {
        let worst = run.max_extra_per_second(from, until);
        let whole = run.extra_between(from, until);
        if run.config.budget {
            checks.push(Check {
                claim: format!(
                    "(d) {}: extra copies <= {:.1}% over the brownout, <= {:.0}% in every second of it",
                    run.config.label(),
                    (BUDGET_RATIO + 0.005) * 100.0,
                    BUDGET_RATIO * 200.0
                ),
                measured: format!(
                    "{:.2}% over the brownout, worst second {:.2}%",
                    whole * 100.0,
                    worst * 100.0
                ),
                holds: whole <= BUDGET_RATIO + 0.005 && worst <= 2.0 * BUDGET_RATIO,
            });
        } else {
            checks.push(Check {
                claim: format!(
                    "(d) {}: shows the amplification (worst second > {:.0}%)",
                    run.config.label(),
                    BUDGET_RATIO * 200.0
                ),
                measured: format!(
                    "{:.2}% over the brownout, worst second {:.2}%",
                    whole * 100.0,
                    worst * 100.0
                ),
                holds: worst > 2.0 * BUDGET_RATIO,
            });
        }
    }
    report.checks = checks;
}

/// The table of one report, as printed by the demo and shown in docs/lab.md.
pub fn table(report: &Report) -> String {
    let mut out = String::new();
    let workload = &report.workload;
    let unit = if workload.fan_out() > 1 {
        "query"
    } else {
        "call"
    };
    let tuned = match workload.kind {
        Kind::Brownout { .. } => "the p95 before the brownout",
        _ => "the p95 of the run",
    };
    let _ = writeln!(out, "({}) {}", workload.key, workload.title);
    let _ = writeln!(
        out,
        "{} calls at {RATE}/s; latency per {unit}; fixed delay and ideal hedge at {tuned}, {}",
        workload.calls,
        ms_text(report.p95)
    );
    let _ = writeln!(
        out,
        "| {:<27} | {:>9} | {:>9} | {:>9} | {:>7} | {:>9} | {:>9} | {:>9} |",
        "configuration", "p50", "p99", "p99.9", "extra", "ideal p50", "ideal p99", "ideal p99.9"
    );
    let _ = writeln!(
        out,
        "|{:-<29}|{:->11}|{:->11}|{:->11}|{:->9}|{:->11}|{:->11}|{:->13}|",
        "", "", "", "", "", "", "", ""
    );
    let mut runs: Vec<(&Run, Option<&Vec<Duration>>)> = report
        .rows
        .iter()
        .map(|row| (&row.run, Some(&row.ideal)))
        .collect();
    if let Some(best) = &report.best_fixed {
        runs.push((best, None));
    }
    for (run, ideal) in runs {
        let cell = |q: f64| ms_text(run.percentile(q));
        let ideal_cell =
            |q: f64| ideal.map_or("".to_string(), |ideal| ms_text(percentile(ideal, q)));
        let mut label = run.config.label();
        if ideal.is_none() {
            label.push_str(" (best)");
        }
        let _ = writeln!(
            out,
            "| {:<27} | {:>9} | {:>9} | {:>9} | {:>6.2}% | {:>9} | {:>9} | {:>11} |",
            label,
            cell(0.5),
            cell(0.99),
            cell(0.999),
            run.extra_ratio() * 100.0,
            ideal_cell(0.5),
            ideal_cell(0.99),
            ideal_cell(0.999)
        );
    }
    out
}

/// Lines of work under way: PASS where they hold, OPEN where not yet.
pub fn targets(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        let verdict = if check.holds { "PASS" } else { "OPEN" };
        let _ = writeln!(out, "{verdict}  {}: {}", check.claim, check.measured);
    }
    out
}

/// The acceptance lines of one report.
pub fn acceptance(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        let verdict = if check.holds { "PASS" } else { "FAIL" };
        let _ = writeln!(out, "{verdict}  {}: {}", check.claim, check.measured);
    }
    out
}
