//! The lab's report: the acceptance lines each workload is held to, and the tables the
//! demo prints and the README shows.

use std::fmt::Write as _;
use std::time::Duration;

use super::independent::{extra_above, simulate, Kind, Report};
use super::queueing::{Level, QueueReport, QueueRun, Scheme, SERVERS};
use super::{ms_text, percentile, Check, Config, Delay, Run, BUDGET_RATIO, RATE};

/// (a): p99 at least 10× lower than unhedged for at most 5% extra copies, and within 10%
/// of the ideal model.
pub(super) fn check_stalls(report: &mut Report) {
    let unhedged = report.unhedged().percentile(0.99);
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
        checks.push(Check {
            claim: format!(
                "(a) {}: p99 >= 10x lower than unhedged, extra copies <= 5%",
                run.config.label()
            ),
            measured: format!(
                "{} vs {} ({ratio:.1}x), {:.2}% extra",
                ms_text(p99),
                ms_text(unhedged),
                extra * 100.0
            ),
            holds: ratio >= 10.0 && extra <= 0.05 + budget_slack,
        });
    }
    let ideal = percentile(&report.rows[1].ideal, 0.99);
    let fixed = report.fixed(false).percentile(0.99);
    checks.push(Check {
        claim: "(a) fixed p95: p99 within 10% of the ideal model".to_string(),
        measured: format!("{} vs ideal {}", ms_text(fixed), ms_text(ideal)),
        holds: fixed.as_secs_f64() <= ideal.as_secs_f64() * 1.10,
    });
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
    report.checks = vec![Check {
        claim: "(c) adaptive p95: p99 within 10% of the best fixed delay in hindsight".to_string(),
        measured: format!(
            "{} vs {} (fixed {}, {:.2}% extra vs {:.2}%)",
            ms_text(adaptive_p99),
            ms_text(best_p99),
            ms_text(best),
            adaptive.extra_ratio() * 100.0,
            best_run.extra_ratio() * 100.0
        ),
        holds: adaptive_p99.as_secs_f64() <= best_p99.as_secs_f64() * 1.10,
    }];
    report.best_fixed = Some(best_run);
}

/// (d): with the budget, extra copies never above the ratio + 0.5% in any second of the
/// brownout; without it, the amplification the budget prevents.
pub(super) fn check_brownout(report: &mut Report, from: Duration, until: Duration) {
    let mut checks = Vec::new();
    for run in report
        .rows
        .iter()
        .map(|row| &row.run)
        .filter(|run| run.config.delay != Delay::Off)
    {
        let worst = run.max_extra_per_second(from, until);
        if run.config.budget {
            checks.push(Check {
                claim: format!(
                    "(d) {}: extra copies <= 5.5% in every second of the brownout",
                    run.config.label()
                ),
                measured: format!("worst second {:.2}%", worst * 100.0),
                holds: worst <= BUDGET_RATIO + 0.005,
            });
        } else {
            checks.push(Check {
                claim: format!(
                    "(d) {}: shows the amplification (worst second > 5.5%)",
                    run.config.label()
                ),
                measured: format!("worst second {:.2}%", worst * 100.0),
                holds: worst > BUDGET_RATIO + 0.005,
            });
        }
    }
    report.checks = checks;
}

/// The table of one report, as printed by the demo and shown in the README.
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

/// The acceptance lines of one report.
pub fn acceptance(checks: &[Check]) -> String {
    let mut out = String::new();
    for check in checks {
        let verdict = if check.holds { "PASS" } else { "FAIL" };
        let _ = writeln!(out, "{verdict}  {}: {}", check.claim, check.measured);
    }
    out
}

/// The most a row that never makes the backend worse may add to unhedged p50 and p99.
const NEVER_WORSE: f64 = 1.05;
/// The least p99 cut that makes hedging worth it at light load.
const WORTH_IT: f64 = 5.0;
/// The loads "light" means.
const LIGHT_LOAD: f64 = 0.3;
/// The load the tied requests are judged at.
const TIED_LOAD: f64 = 0.5;

fn load_text(level: &Level) -> String {
    format!("{:.0}%", level.cluster.utilisation * 100.0)
}

fn ratio(run: &QueueRun, unhedged: &QueueRun, quantile: f64) -> f64 {
    run.percentile(quantile).as_secs_f64() / unhedged.percentile(quantile).as_secs_f64()
}

/// (e): the README's recommendation never worse than unhedged and worth it at light load;
/// the fixed delay worse at some load; tied requests at 50% as good as any hedged row for
/// less work.
pub(super) fn check_queueing(report: &mut QueueReport) {
    let levels = &report.levels;
    let recommended = levels[0].recommended().scheme.label();
    // The worst p50 and p99 of the recommendation against unhedged, over every load.
    let worst = |quantile: f64| {
        levels
            .iter()
            .map(|level| {
                (
                    ratio(level.recommended(), level.unhedged(), quantile),
                    level,
                )
            })
            .fold((0.0, &levels[0]), |worst, next| {
                if next.0 > worst.0 {
                    next
                } else {
                    worst
                }
            })
    };
    let ((p50, p50_at), (p99, p99_at)) = (worst(0.5), worst(0.99));
    let mut checks = vec![Check {
        claim: format!(
            "(e) {recommended}: p50 and p99 <= {NEVER_WORSE:.2}x unhedged at every load"
        ),
        measured: format!(
            "worst p50 {p50:.3}x at {}, worst p99 {p99:.3}x at {}",
            load_text(p50_at),
            load_text(p99_at)
        ),
        holds: p50 <= NEVER_WORSE && p99 <= NEVER_WORSE,
    }];
    let light: Vec<(f64, &Level)> = levels
        .iter()
        .filter(|level| level.cluster.utilisation <= LIGHT_LOAD + 1e-9)
        .map(|level| {
            (
                1.0 / ratio(level.recommended(), level.unhedged(), 0.99),
                level,
            )
        })
        .collect();
    checks.push(Check {
        claim: format!(
            "(e) {recommended}: p99 >= {WORTH_IT:.0}x lower than unhedged at <= {:.0}% load",
            LIGHT_LOAD * 100.0
        ),
        measured: light
            .iter()
            .map(|(cut, level)| format!("{cut:.1}x at {}", load_text(level)))
            .collect::<Vec<_>>()
            .join(", "),
        holds: !light.is_empty() && light.iter().all(|(cut, _)| *cut >= WORTH_IT),
    });
    let fixed = levels[0].fixed().scheme.label();
    let danger = levels
        .iter()
        .map(|level| (ratio(level.fixed(), level.unhedged(), 0.99), level))
        .fold((0.0, &levels[0]), |worst, next| {
            if next.0 > worst.0 {
                next
            } else {
                worst
            }
        });
    checks.push(Check {
        claim: format!("(e) {fixed}: p99 above unhedged at some load <= 90%"),
        measured: format!(
            "{} vs {} at {} ({:.2}x)",
            ms_text(danger.1.fixed().percentile(0.99)),
            ms_text(danger.1.unhedged().percentile(0.99)),
            load_text(danger.1),
            danger.0
        ),
        holds: danger.0 > 1.0,
    });
    checks.push(check_tied(report));
    report.checks = checks;
}

/// (e) at 50%: the best tied row's p99 at or below the best hedged row's, for fewer extra
/// service-seconds.
fn check_tied(report: &QueueReport) -> Check {
    let level = report
        .levels
        .iter()
        .find(|level| (level.cluster.utilisation - TIED_LOAD).abs() < 1e-9)
        .expect("the sweep includes 50%");
    let best = |tied: bool| {
        level
            .runs
            .iter()
            .filter(|run| run.scheme != Scheme::Off)
            .filter(|run| matches!(run.scheme, Scheme::Tied(_)) == tied)
            .min_by_key(|run| run.percentile(0.99))
            .expect("tied and hedged rows")
    };
    let (tied, hedged) = (best(true), best(false));
    let seconds = |run: &QueueRun| run.extra_work * level.cluster.originals_work().as_secs_f64();
    Check {
        claim: format!(
            "(e) tied requests at {:.0}%: p99 at or below the best hedged row's, for fewer extra service-seconds",
            TIED_LOAD * 100.0
        ),
        measured: format!(
            "{}: {}, {:+.2} s; {}: {}, {:+.2} s",
            tied.scheme.label(),
            ms_text(tied.percentile(0.99)),
            seconds(tied),
            hedged.scheme.label(),
            ms_text(hedged.percentile(0.99)),
            seconds(hedged)
        ),
        holds: tied.percentile(0.99) <= hedged.percentile(0.99) && seconds(tied) < seconds(hedged),
    }
}

/// The table of workload (e), one block of rows per load; `aborted` titles the variant
/// whose in-service losers are aborted.
pub fn queue_table(report: &QueueReport, levels: &[Level], aborted: bool) -> String {
    let mut out = String::new();
    if aborted {
        let _ = writeln!(
            out,
            "(e) the same, with a loser in service aborted at once (cancellation reaches it)"
        );
    } else {
        let _ = writeln!(
            out,
            "(e) queueing: {SERVERS} replicas, a FIFO queue and one worker each; 2% of services 10-100x the median"
        );
    }
    let calls: Vec<usize> = levels.iter().map(|level| level.cluster.calls).collect();
    let _ = writeln!(
        out,
        "30 s of Poisson arrivals per load ({} to {} calls); each copy to the replica with the shortest queue, at most two per call",
        calls.iter().min().unwrap_or(&0),
        calls.iter().max().unwrap_or(&0),
    );
    let _ = writeln!(
        out,
        "fixed delay and tied second copy at the unloaded p95, {}; adaptive rows as the README recommends (p95, 2-200 ms, 10 s window; budget 5%, 50 in flight)",
        ms_text(report.p95)
    );
    let _ = writeln!(
        out,
        "| {:>4} | {:<27} | {:>9} | {:>9} | {:>9} | {:>7} | {:>10} | {:>6} |",
        "load", "configuration", "p50", "p99", "p99.9", "extra", "extra svc", "busy"
    );
    let _ = writeln!(
        out,
        "|{:->6}|{:-<29}|{:->11}|{:->11}|{:->11}|{:->9}|{:->12}|{:->8}|",
        "", "", "", "", "", "", "", ""
    );
    for level in levels {
        for run in &level.runs {
            let _ = writeln!(
                out,
                "| {:>4} | {:<27} | {:>9} | {:>9} | {:>9} | {:>6.2}% | {:>+9.2}% | {:>5.1}% |",
                load_text(level),
                run.scheme.label(),
                ms_text(run.percentile(0.5)),
                ms_text(run.percentile(0.99)),
                ms_text(run.percentile(0.999)),
                run.extra_ratio() * 100.0,
                run.extra_work * 100.0,
                run.busy * 100.0
            );
        }
    }
    out
}
