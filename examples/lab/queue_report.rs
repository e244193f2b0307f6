//! The report of workload (e), the queueing cluster: its acceptance lines, its table, and
//! the tied-requests line seed by seed.

use std::fmt::Write as _;

use super::cluster::{Slowness, HINDSIGHT_LOADS, PAUSED_SERVERS, SERVERS};
use super::queueing::{Level, QueueReport, QueueRun};
use super::report::BUDGET_COST;
use super::scheme::{Scheme, TIE};
use super::{ms_text, Check};

/// The most a row that never makes the backend worse may add to unhedged p50 and p99.
const NEVER_WORSE: f64 = 1.05;
/// The least p99 cut, and p99.9 cut, that make hedging worth it at light load.
const WORTH_IT: (f64, f64) = (5.0, 3.0);
/// The loads "light" means.
const LIGHT_LOAD: f64 = 0.3;
/// The loads up to which a budget should cost no tail: normal operation.
const NORMAL_LOAD: f64 = 0.5;
/// The loads where queueing makes the tail, where the tied pairs are judged.
pub const QUEUEING_LOADS: (f64, f64) = (0.7, 0.9);
/// The most the tied pairs' p99 may be of the recommended row's there.
const TIED_CUT: f64 = 0.85;
/// The load the tied pairs' line seed by seed is drawn at (`--seeds`).
pub const TIED_LOAD: f64 = 0.5;

fn load_text(level: &Level) -> String {
    format!("{:.0}%", level.cluster.utilisation * 100.0)
}

fn ratio(run: &QueueRun, unhedged: &QueueRun, quantile: f64) -> f64 {
    run.percentile(quantile).as_secs_f64() / unhedged.percentile(quantile).as_secs_f64()
}

/// The most the optimal row's p99 may be of the best fixed delay's with the same budget,
/// at loads up to [`HINDSIGHT_LOADS`].
pub const HINDSIGHT: f64 = 1.10;

/// The level where `of` is the highest, and that highest value.
fn highest(levels: &[Level], of: impl Fn(&Level) -> f64) -> (f64, &Level) {
    levels
        .iter()
        .map(|level| (of(level), level))
        .fold((f64::MIN, &levels[0]), |worst, next| {
            if next.0 > worst.0 {
                next
            } else {
                worst
            }
        })
}

/// (e) and (f): the README's recommendation never worse than unhedged, worth it at light
/// load, and its budget costing no tail in normal operation; the fixed delay worse at some
/// load; on (e), the tied pairs where queueing makes the tail.
pub(super) fn check_queueing(report: &mut QueueReport) {
    let key = report.key.clone();
    let levels = &report.levels;
    let recommended = levels[0].recommended().scheme.label();
    let (p50, p50_at) = highest(levels, |level| {
        ratio(level.recommended(), level.unhedged(), 0.5)
    });
    let (p99, p99_at) = highest(levels, |level| {
        ratio(level.recommended(), level.unhedged(), 0.99)
    });
    let (p999, p999_at) = highest(levels, |level| {
        ratio(level.recommended(), level.unhedged(), 0.999)
    });
    let mut checks = vec![Check {
        claim: format!(
            "({key}) {recommended}: p50 and p99 <= {NEVER_WORSE:.2}x unhedged at every load"
        ),
        measured: format!(
            "worst p50 {p50:.3}x at {}, worst p99 {p99:.3}x at {}; worst p99.9 {p999:.3}x at {}",
            load_text(p50_at),
            load_text(p99_at),
            load_text(p999_at)
        ),
        holds: p50 <= NEVER_WORSE && p99 <= NEVER_WORSE,
    }];
    let targets = vec![check_hindsight(report)];
    // The workloads of replicas paused a tenth and a fifth of the time hold the
    // recommendation to never worse; what they are for is the line against the best
    // fixed delay.
    if report.key != "e" && report.key != "f" {
        report.checks = checks;
        report.targets = targets;
        return;
    }
    let light: Vec<(f64, f64, &Level)> = levels
        .iter()
        .filter(|level| level.cluster.utilisation <= LIGHT_LOAD + 1e-9)
        .map(|level| {
            let cut = |q: f64| 1.0 / ratio(level.recommended(), level.unhedged(), q);
            (cut(0.99), cut(0.999), level)
        })
        .collect();
    checks.push(Check {
        claim: format!(
            "({key}) {recommended}: p99 >= {:.0}x and p99.9 >= {:.0}x lower than unhedged at <= {:.0}% load",
            WORTH_IT.0,
            WORTH_IT.1,
            LIGHT_LOAD * 100.0
        ),
        measured: light
            .iter()
            .map(|(p99, p999, level)| format!("{p99:.1}x and {p999:.1}x at {}", load_text(level)))
            .collect::<Vec<_>>()
            .join(", "),
        holds: !light.is_empty()
            && light
                .iter()
                .all(|(p99, p999, _)| *p99 >= WORTH_IT.0 && *p999 >= WORTH_IT.1),
    });
    let normal: Vec<&Level> = levels
        .iter()
        .filter(|level| level.cluster.utilisation <= NORMAL_LOAD + 1e-9)
        .collect();
    let cost = |quantile: f64| {
        normal
            .iter()
            .map(|level| {
                (
                    ratio(level.recommended(), level.unbudgeted(), quantile),
                    *level,
                )
            })
            .fold((f64::MIN, normal[0]), |worst, next| {
                if next.0 > worst.0 {
                    next
                } else {
                    worst
                }
            })
    };
    let ((p99, p99_at), (p999, p999_at)) = (cost(0.99), cost(0.999));
    let refused: u64 = normal
        .iter()
        .map(|level| level.recommended().budget_denied)
        .sum();
    checks.push(Check {
        claim: format!(
            "({key}) {recommended}: the budget costs no tail at <= {:.0}% load (p99 <= {:.1}x, p99.9 <= {:.1}x the same delay without it)",
            NORMAL_LOAD * 100.0,
            BUDGET_COST.0,
            BUDGET_COST.1
        ),
        measured: format!(
            "worst p99 {p99:.2}x at {}, worst p99.9 {p999:.2}x at {}; {refused} refused in all",
            load_text(p99_at),
            load_text(p999_at)
        ),
        holds: p99 <= BUDGET_COST.0 && p999 <= BUDGET_COST.1,
    });
    let fixed = levels[0].fixed().scheme.label();
    let (danger, at) = highest(levels, |level| ratio(level.fixed(), level.unhedged(), 0.99));
    // Where the loads stop at 50%, a fixed delay near the median does no harm yet.
    let busy = levels
        .iter()
        .any(|level| level.cluster.utilisation > HINDSIGHT_LOADS + 1e-9);
    checks.extend(busy.then(|| Check {
        claim: format!("({key}) {fixed}: p99 above unhedged at some load <= 90%"),
        measured: format!(
            "{} vs {} at {} ({danger:.2}x); p99.9 {} vs {}",
            ms_text(at.fixed().percentile(0.99)),
            ms_text(at.unhedged().percentile(0.99)),
            load_text(at),
            ms_text(at.fixed().percentile(0.999)),
            ms_text(at.unhedged().percentile(0.999))
        ),
        holds: danger > 1.0,
    }));
    if report.slowness == Slowness::Independent {
        checks.push(check_tied(report));
    }
    report.checks = checks;
    report.targets = targets;
}

/// The optimal row's p99 within [`HINDSIGHT`] of the best fixed delay with the same
/// budget, at every load up to [`HINDSIGHT_LOADS`].
fn check_hindsight(report: &QueueReport) -> Check {
    let key = &report.key;
    let ratios: Vec<(f64, &Level, &QueueRun)> = report
        .levels
        .iter()
        .filter_map(|level| {
            let best = level.best_fixed()?;
            Some((ratio(level.recommended(), best, 0.99), level, best))
        })
        .collect();
    Check {
        claim: format!(
            "({key}) {}: p99 <= {HINDSIGHT:.2}x the best fixed delay with the same budget at <= {:.0}% load",
            report.levels[0].recommended().scheme.label(),
            HINDSIGHT_LOADS * 100.0
        ),
        measured: ratios
            .iter()
            .map(|(cut, level, best)| {
                let recommended = level.recommended();
                format!(
                    "{}: {} vs {} ({cut:.2}x; {}), {:.2}% vs {:.2}% extra, delay at the end {}",
                    load_text(level),
                    ms_text(recommended.percentile(0.99)),
                    ms_text(best.percentile(0.99)),
                    best.scheme.label(),
                    recommended.extra_ratio() * 100.0,
                    best.extra_ratio() * 100.0,
                    recommended.delay_at_end.map_or("none".to_string(), ms_text)
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        holds: !ratios.is_empty() && ratios.iter().all(|(cut, ..)| *cut <= HINDSIGHT),
    }
}

/// (e) at 70-90% load, where a call's wait in a queue is much of its tail: the tied pairs'
/// p99 at most [`TIED_CUT`] of the recommended row's at every such load.
fn check_tied(report: &QueueReport) -> Check {
    let (from, to) = QUEUEING_LOADS;
    let busy: Vec<&Level> = report
        .levels
        .iter()
        .filter(|level| (from - 1e-9..=to + 1e-9).contains(&level.cluster.utilisation))
        .collect();
    let cuts: Vec<(f64, &Level)> = busy
        .iter()
        .map(|level| (ratio(level.tied_pairs(), level.recommended(), 0.99), *level))
        .collect();
    Check {
        claim: format!(
            "(e) tied pairs at {:.0}-{:.0}% load: p99 <= {TIED_CUT:.2}x the recommended configuration's",
            from * 100.0,
            to * 100.0
        ),
        measured: cuts
            .iter()
            .map(|(cut, level)| {
                let (pairs, recommended) = (level.tied_pairs(), level.recommended());
                format!(
                    "{}: {} vs {} ({cut:.2}x), p99.9 {} vs {}, {:+.2}% vs {:+.2}% extra service",
                    load_text(level),
                    ms_text(pairs.percentile(0.99)),
                    ms_text(recommended.percentile(0.99)),
                    ms_text(pairs.percentile(0.999)),
                    ms_text(recommended.percentile(0.999)),
                    pairs.extra_work * 100.0,
                    recommended.extra_work * 100.0
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        holds: !cuts.is_empty() && cuts.iter().all(|(cut, _)| *cut <= TIED_CUT),
    }
}

/// The best tied row and the best hedged row that is not tied (the lowest p99 of each) at
/// `level`, and whether the tied one holds the line: a p99 at or below the hedged one's,
/// for fewer extra service-seconds.
pub fn tied_against_hedged(level: &Level) -> (&QueueRun, &QueueRun, bool) {
    let best = |tied: bool| {
        level
            .runs
            .iter()
            .filter(|run| run.scheme != Scheme::Off)
            .filter(|run| run.scheme.is_tied() == tied)
            .min_by_key(|run| run.percentile(0.99))
            .expect("tied and hedged rows")
    };
    let (tied, hedged) = (best(true), best(false));
    let holds = tied.percentile(0.99) <= hedged.percentile(0.99)
        && tied.extra_seconds() < hedged.extra_seconds();
    (tied, hedged, holds)
}

/// The tied-requests line at one load, seed by seed (`levels`, one per seed): which rows
/// it compares, their p99, extra service-seconds and calls served twice, and the mean of
/// the budgeted adaptive row and the tied pairs over every seed.
pub fn tied_seed_table(levels: &[Level]) -> String {
    let mut out = String::new();
    let load = levels.first().map_or(String::new(), load_text);
    let _ = writeln!(
        out,
        "(e) the tied-requests line at {load} load, seed by seed (arrivals and services drawn anew)"
    );
    let _ = writeln!(
        out,
        "| seed | {:<24} | {:>9} | {:>8} | {:>6} | {:<33} | {:>9} | {:>8} | {:>6} | line |",
        "best hedged row", "p99", "extra s", "twice", "best tied row", "p99", "extra s", "twice"
    );
    let _ = writeln!(
        out,
        "|{:->6}|{:-<26}|{:->11}|{:->10}|{:->8}|{:-<35}|{:->11}|{:->10}|{:->8}|------|",
        "", "", "", "", "", "", "", "", ""
    );
    let cells = |run: &QueueRun| {
        format!(
            "{:>9} | {:>+8.2} | {:>6}",
            ms_text(run.percentile(0.99)),
            run.extra_seconds(),
            run.served_twice
        )
    };
    let mut held = 0;
    for level in levels {
        let (tied, hedged, holds) = tied_against_hedged(level);
        held += usize::from(holds);
        let _ = writeln!(
            out,
            "| {:>4} | {:<24} | {} | {:<33} | {} | {} |",
            level.cluster.seed,
            hedged.scheme.label(),
            cells(hedged),
            tied.scheme.label(),
            cells(tied),
            if holds { "PASS" } else { "FAIL" }
        );
    }
    let mean = |row: &dyn Fn(&Scheme) -> bool| {
        let runs: Vec<&QueueRun> = levels.iter().map(|level| level.run(row)).collect();
        let count = runs.len() as f64;
        (
            runs[0].scheme.label(),
            runs.iter()
                .map(|run| run.percentile(0.99).as_secs_f64())
                .sum::<f64>()
                / count,
            runs.iter().map(|run| run.extra_seconds()).sum::<f64>() / count,
            runs.iter().map(|run| run.served_twice as f64).sum::<f64>() / count,
        )
    };
    for (label, p99, extra, twice) in [
        mean(&|scheme| *scheme == Scheme::Recommended { budget: true }),
        mean(&|scheme| matches!(scheme, Scheme::TiedPair(_))),
    ] {
        let _ = writeln!(
            out,
            "mean over {} seeds, {label}: p99 {:.2} ms, {extra:+.2} s extra service, {twice:.0} calls served twice",
            levels.len(),
            p99 * 1e3
        );
    }
    let _ = writeln!(out, "the line holds at {held} of {} seeds", levels.len());
    out
}

/// The table of workload (e), one block of rows per load; `aborted` titles the variant
/// whose in-service losers are aborted.
pub fn queue_table(report: &QueueReport, levels: &[Level], aborted: bool) -> String {
    let mut out = String::new();
    if report.slowness == Slowness::Correlated {
        let cluster = levels[0].cluster;
        let _ = writeln!(
            out,
            "({}) correlated slowness: {PAUSED_SERVERS} replicas, a FIFO queue and one worker each; each worker pauses 20-100 ms about every {:.2} s ({:.0}% of the time), stalling all it holds",
            report.key,
            cluster.pause_every.as_secs_f64() + 0.06,
            cluster.paused_share_of_time() * 100.0
        );
    } else if aborted {
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
        "30 s of Poisson arrivals per load ({} to {} calls); each copy to {}, at most two per call",
        calls.iter().min().unwrap_or(&0),
        calls.iter().max().unwrap_or(&0),
        match report.slowness {
            Slowness::Independent => "the replica with the shortest queue",
            Slowness::Correlated => "a random replica the call has not tried",
        }
    );
    let _ = writeln!(
        out,
        "fixed delay and tied second copy at the unloaded p95, {}; optimal p99 rows as the README recommends (0.1-200 ms, 10 s window; budget 10%, 50 in flight); adaptive p95 as it recommended before (2-200 ms) with the same budget; the best of fixed 0.5-40 ms with the same budget at <= 50% load",
        ms_text(report.p95)
    );
    if levels[0].runs.iter().any(|run| run.scheme.is_tied()) {
        let _ = writeln!(
            out,
            "tied pairs: a pair's second copy {} us after its first unless the first started, the pairs hedged as the recommended row hedges copies",
            TIE.as_micros()
        );
    }
    let _ = writeln!(
        out,
        "| {:>4} | {:<33} | {:>9} | {:>9} | {:>9} | {:>7} | {:>10} | {:>6} |",
        "load", "configuration", "p50", "p99", "p99.9", "extra", "extra svc", "busy"
    );
    let _ = writeln!(
        out,
        "|{:->6}|{:-<35}|{:->11}|{:->11}|{:->11}|{:->9}|{:->12}|{:->8}|",
        "", "", "", "", "", "", "", ""
    );
    for level in levels {
        // Of the swept fixed delays, the best in hindsight alone.
        let best = level.best_fixed().map(|run| run.scheme);
        for run in &level.runs {
            let swept = matches!(run.scheme, Scheme::FixedBudget(_));
            if swept && Some(run.scheme) != best {
                continue;
            }
            let label = if swept {
                format!("{} (best)", run.scheme.label())
            } else {
                run.scheme.label()
            };
            let _ = writeln!(
                out,
                "| {:>4} | {:<33} | {:>9} | {:>9} | {:>9} | {:>6.2}% | {:>+9.2}% | {:>5.1}% |",
                load_text(level),
                label,
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
