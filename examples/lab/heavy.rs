//! Workloads (h) and (i): slowness the request carries (a heavy query, a hot key: every
//! copy of the call is as slow as its original, so no hedge can win), and a run that
//! switches halfway from it to per-copy stalls. And what
//! [`min_win_rate`](hedging::PolicyBuilder::min_win_rate) does on every other workload.

use std::fmt::Write as _;
use std::time::Duration;

use super::engine;
use super::independent::{draw, micros, rng, simulate_with, Report};
use super::keyed::{simulate_routed, Calls};
use super::queueing::{simulate_queue_with, QueueReport};
use super::scheme::Scheme;
use super::{ms_text, Check, Config, Delay, LEARNT, MIN_WIN_RATE, MS, STALL_RATE};

/// The share of calls that are heavy: 10–100× the median in every copy.
pub const HEAVY_SHARE: f64 = 0.04;
/// The most extra copies per call `min_win_rate` may leave where no hedge wins.
pub const HEAVY_EXTRA: f64 = 0.01;
/// The most `min_win_rate` may change p99 by where no hedge wins.
pub const HEAVY_P99: f64 = 1.05;
/// (i): the most the second half's p99 may be over the same policy without
/// `min_win_rate`.
pub const REGAINED_P99: f64 = 1.2;
/// Every other workload: the most `min_win_rate` may change p99 by, and extra copies by.
pub const WITHHELD_COST: (f64, f64) = (1.05, 0.005);

/// (h) or (i)'s traffic: 1 ms median, [`HEAVY_SHARE`] of calls heavy until call
/// `switch_at`, and from there on [`STALL_RATE`] of copies stalling on their own instead.
#[derive(Clone, Copy, Debug)]
pub struct Heavy {
    pub key: char,
    pub calls: usize,
    pub seed: u64,
    /// The first call of per-copy stalls; `calls` for (h), which never switches.
    pub switch_at: usize,
}

impl Heavy {
    /// (h): 40,000 calls, 10 s, every slow call heavy.
    pub fn requests() -> Heavy {
        Heavy {
            key: 'h',
            calls: 40_000,
            seed: 8,
            switch_at: 40_000,
        }
    }

    /// (i): 40,000 calls, heavy ones for the first 5 s, per-copy stalls for the next 5.
    pub fn switching() -> Heavy {
        Heavy {
            key: 'i',
            switch_at: 20_000,
            seed: 9,
            ..Heavy::requests()
        }
    }

    pub fn title(&self) -> String {
        if self.switch_at < self.calls {
            format!(
                "switch: {:.0}% of calls heavy (every copy 10-100x) for the first half, then 2% of copies stall 10-100x",
                HEAVY_SHARE * 100.0
            )
        } else {
            format!(
                "slowness the request carries: {:.0}% of calls heavy, every copy 10-100x the median",
                HEAVY_SHARE * 100.0
            )
        }
    }

    /// The latency every copy of call `call` shares, if it is heavy.
    pub fn heavy(&self, call: usize) -> Option<Duration> {
        let mut rng = rng(self.seed, call, usize::MAX);
        (call < self.switch_at && rng.f64() < HEAVY_SHARE)
            .then(|| micros(MS.as_secs_f64() * (10.0 + 90.0 * rng.f64())))
    }

    /// Copy `copy` of call `call`: the call's heavy latency, or a draw of its own from
    /// the log-normal body (σ = 0.3) around 1 ms, with stalls after the switch.
    pub fn latency(&self, call: usize, copy: usize) -> Duration {
        let stalls = if call < self.switch_at {
            0.0
        } else {
            STALL_RATE
        };
        self.heavy(call)
            .unwrap_or_else(|| draw(&mut rng(self.seed, call, copy), MS, stalls))
    }
}

/// One row of (h) or (i).
#[derive(Clone, Debug)]
pub struct HeavyRow {
    pub config: Config,
    /// The row's `min_win_rate`; 0 is off.
    pub min_win_rate: f64,
    pub calls: Calls,
}

impl HeavyRow {
    pub fn label(&self) -> String {
        if self.min_win_rate > 0.0 {
            format!(
                "{} + min_win_rate {}",
                self.config.label(),
                self.min_win_rate
            )
        } else {
            self.config.label()
        }
    }
}

/// (h) or (i): every row, and the acceptance lines.
#[derive(Clone, Debug)]
pub struct HeavyReport {
    pub heavy: Heavy,
    pub rows: Vec<HeavyRow>,
    pub checks: Vec<Check>,
}

impl HeavyReport {
    /// The row of `config`, with `min_win_rate` on or off.
    pub fn row(&self, config: Config, withholds: bool) -> &HeavyRow {
        self.rows
            .iter()
            .find(|row| row.config == config && (row.min_win_rate > 0.0) == withholds)
            .expect("every configuration has a row")
    }
}

/// The rows of (h) and (i): unhedged, then each of [`LEARNT`] without and with
/// `min_win_rate`.
fn heavy_rows() -> Vec<(Config, f64)> {
    let mut rows = vec![(
        Config {
            delay: Delay::Off,
            budget: false,
        },
        0.0,
    )];
    for config in LEARNT {
        for min_win_rate in [0.0, MIN_WIN_RATE] {
            rows.push((config, min_win_rate));
        }
    }
    rows
}

fn simulate_heavy(heavy: &Heavy, config: Config, min_win_rate: f64) -> HeavyRow {
    let heavy = *heavy;
    let calls = simulate_routed(
        heavy.calls,
        |timer| {
            vec![config
                .builder(timer.clone())
                .min_win_rate(min_win_rate)
                .build()]
        },
        |_| (0, 0),
        move |call, copy| heavy.latency(call, copy),
    );
    HeavyRow {
        config,
        min_win_rate,
        calls,
    }
}

fn run_rows(heavy: Heavy) -> HeavyReport {
    let rows = engine::parallel_map(&heavy_rows(), |&(config, min_win_rate)| {
        simulate_heavy(&heavy, config, min_win_rate)
    });
    HeavyReport {
        heavy,
        rows,
        checks: Vec::new(),
    }
}

/// (h): every row, and its lines: with `min_win_rate`, extra copies at most 1% and p99
/// within 1.05x of the same policy without it.
pub fn run_heavy() -> HeavyReport {
    let mut report = run_rows(Heavy::requests());
    for config in LEARNT {
        let (with, without) = (report.row(config, true), report.row(config, false));
        let all = |_: usize| true;
        let (p99, p99_without) = (
            with.calls.percentile_of(0.99, all),
            without.calls.percentile_of(0.99, all),
        );
        let ratio = p99.as_secs_f64() / p99_without.as_secs_f64();
        let extra = with.calls.extra_of(all);
        let check = Check {
            claim: format!(
                "(h) {}: extra copies <= {:.0}%, p99 within {HEAVY_P99:.2}x of the same policy without min_win_rate",
                with.label(),
                HEAVY_EXTRA * 100.0
            ),
            measured: format!(
                "{:.2}% extra (without: {:.2}%), {} withheld; p99 {} vs {} ({ratio:.3}x)",
                extra * 100.0,
                without.calls.extra_of(all) * 100.0,
                with.calls.withheld,
                ms_text(p99),
                ms_text(p99_without)
            ),
            holds: extra <= HEAVY_EXTRA && (1.0 / HEAVY_P99..=HEAVY_P99).contains(&ratio),
        };
        report.checks.push(check);
    }
    report
}

/// (i): every row, and its lines: with `min_win_rate`, the second half's p99 within 1.2x
/// of the same policy without it.
pub fn run_switch() -> HeavyReport {
    let mut report = run_rows(Heavy::switching());
    let switch_at = report.heavy.switch_at;
    let (first, second) = (move |call| call < switch_at, move |call| call >= switch_at);
    for config in LEARNT {
        let (with, without) = (report.row(config, true), report.row(config, false));
        let (p99, p99_without) = (
            with.calls.percentile_of(0.99, second),
            without.calls.percentile_of(0.99, second),
        );
        let ratio = p99.as_secs_f64() / p99_without.as_secs_f64();
        let check = Check {
            claim: format!(
                "(i) {}: the second half's p99 (per-copy stalls) <= {REGAINED_P99:.1}x the same policy without min_win_rate",
                with.label()
            ),
            measured: format!(
                "{} vs {} ({ratio:.3}x), extra {:.2}% vs {:.2}%; first half (heavy calls) extra {:.2}% vs {:.2}%, p99 {} vs {}",
                ms_text(p99),
                ms_text(p99_without),
                with.calls.extra_of(second) * 100.0,
                without.calls.extra_of(second) * 100.0,
                with.calls.extra_of(first) * 100.0,
                without.calls.extra_of(first) * 100.0,
                ms_text(with.calls.percentile_of(0.99, first)),
                ms_text(without.calls.percentile_of(0.99, first))
            ),
            holds: ratio <= REGAINED_P99,
        };
        report.checks.push(check);
    }
    report
}

/// Which calls a column of a table reads.
type Picks = Box<dyn Fn(usize) -> bool>;

/// (h) or (i)'s table; for (i), the halves apart.
pub fn heavy_table(report: &HeavyReport) -> String {
    let mut out = String::new();
    let heavy = report.heavy;
    let _ = writeln!(out, "({}) {}", heavy.key, heavy.title());
    let _ = writeln!(
        out,
        "{} calls at {}/s; median 1 ms, log-normal body; adaptive p95, 1 s window; optimal p99 as the README recommends",
        heavy.calls,
        super::RATE
    );
    let halves: Vec<(&str, Picks)> = if heavy.switch_at < heavy.calls {
        let at = heavy.switch_at;
        vec![
            ("first half", Box::new(move |call| call < at)),
            ("second half", Box::new(move |call| call >= at)),
        ]
    } else {
        vec![("", Box::new(|_| true))]
    };
    let mut header = format!("| {:<45} |", "configuration");
    let mut rule = format!("|{:-<47}|", "");
    for (half, _) in &halves {
        let prefix = if half.is_empty() {
            String::new()
        } else {
            format!("{half} ")
        };
        for column in ["p50", "p99", "p99.9", "extra"] {
            let _ = write!(header, " {:>17} |", format!("{prefix}{column}"));
            rule.push_str(&format!("{:->19}|", ""));
        }
    }
    let _ = write!(header, " {:>8} |", "withheld");
    rule.push_str(&format!("{:->10}|", ""));
    let _ = writeln!(out, "{header}\n{rule}");
    for row in &report.rows {
        let mut line = format!("| {:<45} |", row.label());
        for (_, which) in &halves {
            for quantile in [0.5, 0.99, 0.999] {
                let _ = write!(
                    line,
                    " {:>17} |",
                    ms_text(row.calls.percentile_of(quantile, which))
                );
            }
            let _ = write!(line, " {:>16.2}% |", row.calls.extra_of(which) * 100.0);
        }
        let _ = write!(line, " {:>8} |", row.calls.withheld);
        let _ = writeln!(out, "{line}");
    }
    out
}

/// One workload's row run again with `min_win_rate`, beside the row without it.
#[derive(Clone, Debug)]
pub struct WithheldRow {
    /// The workload, and for (e) and (f) the load: "(a)", "(e) 50%".
    pub workload: String,
    pub label: String,
    /// p99 and extra copies per call without `min_win_rate`, then with it.
    pub without: (Duration, f64),
    pub with: (Duration, f64),
    pub withheld: u64,
}

impl WithheldRow {
    fn p99_ratio(&self) -> f64 {
        self.with.0.as_secs_f64() / self.without.0.as_secs_f64()
    }

    fn extra_change(&self) -> f64 {
        self.with.1 - self.without.1
    }

    fn holds(&self) -> bool {
        let ratio = self.p99_ratio();
        (1.0 / WITHHELD_COST.0..=WITHHELD_COST.0).contains(&ratio)
            && self.extra_change().abs() <= WITHHELD_COST.1 + 1e-12
    }
}

/// What `min_win_rate` does on workloads (a)–(f): their rows, and a line per workload.
#[derive(Clone, Debug)]
pub struct Withheld {
    pub rows: Vec<WithheldRow>,
    pub checks: Vec<Check>,
}

/// Runs the adaptive rows of (a)–(d), without and with the budget, and the recommended
/// configuration of (e) and (f) at every load, again with `min_win_rate`
/// [`MIN_WIN_RATE`], and compares each with its row in `reports` and `queues`.
pub fn run_withheld(reports: &[Report], queues: &[&QueueReport]) -> Withheld {
    enum Job<'r> {
        Independent(&'r Report, bool),
        Queue(&'r str, &'r super::queueing::Level),
    }
    let mut jobs = Vec::new();
    for report in reports {
        for budget in [false, true] {
            jobs.push(Job::Independent(report, budget));
        }
    }
    for queue in queues {
        for level in &queue.levels {
            jobs.push(Job::Queue(&queue.key, level));
        }
    }
    let rows = engine::parallel_map(&jobs, |job| match *job {
        Job::Independent(report, budget) => {
            let without = report.adaptive(budget);
            let with = simulate_with(&report.workload, without.config, MIN_WIN_RATE);
            WithheldRow {
                workload: format!("({})", report.workload.key),
                label: without.config.label(),
                without: (without.percentile(0.99), without.extra_ratio()),
                with: (with.percentile(0.99), with.extra_ratio()),
                withheld: with.withheld,
            }
        }
        Job::Queue(key, level) => {
            let without = level.recommended();
            let with = simulate_queue_with(
                &level.cluster,
                Scheme::Recommended { budget: true },
                false,
                MIN_WIN_RATE,
            );
            WithheldRow {
                workload: format!("({key}) {:.0}%", level.cluster.utilisation * 100.0),
                label: without.scheme.label(),
                without: (without.percentile(0.99), without.extra_ratio()),
                with: (with.percentile(0.99), with.extra_ratio()),
                withheld: with.withheld,
            }
        }
    });
    let mut keys: Vec<String> = rows
        .iter()
        .map(|row| row.workload[..3].to_string())
        .collect();
    keys.dedup();
    let checks = keys
        .iter()
        .map(|key| {
            let rows: Vec<&WithheldRow> = rows
                .iter()
                .filter(|row| row.workload.starts_with(key.as_str()))
                .collect();
            let worst_p99 = rows
                .iter()
                .max_by(|a, b| {
                    let far = |row: &&&WithheldRow| row.p99_ratio().ln().abs();
                    far(a).total_cmp(&far(b))
                })
                .expect("rows");
            let worst_extra = rows
                .iter()
                .max_by(|a, b| a.extra_change().abs().total_cmp(&b.extra_change().abs()))
                .expect("rows");
            Check {
                claim: format!(
                    "{key} min_win_rate {MIN_WIN_RATE}: p99 within {:.2}x and extra copies within {:.1} point of the same rows without it",
                    WITHHELD_COST.0,
                    WITHHELD_COST.1 * 100.0
                ),
                measured: format!(
                    "farthest p99 {:.3}x ({} {}: {} vs {}), farthest extra {:+.2} points ({} {}: {:.2}% vs {:.2}%), {} withheld in all",
                    worst_p99.p99_ratio(),
                    worst_p99.workload,
                    worst_p99.label,
                    ms_text(worst_p99.with.0),
                    ms_text(worst_p99.without.0),
                    worst_extra.extra_change() * 100.0,
                    worst_extra.workload,
                    worst_extra.label,
                    worst_extra.with.1 * 100.0,
                    worst_extra.without.1 * 100.0,
                    rows.iter().map(|row| row.withheld).sum::<u64>()
                ),
                holds: rows.iter().all(|row| row.holds()),
            }
        })
        .collect();
    Withheld { rows, checks }
}

/// The table of [`run_withheld`]: every row, without and with `min_win_rate`.
pub fn withheld_table(withheld: &Withheld) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "min_win_rate {MIN_WIN_RATE} on workloads (a)-(f): the adaptive rows, and (e) and (f)'s recommended one at every load"
    );
    let _ = writeln!(
        out,
        "| {:<9} | {:<27} | {:>21} | {:>6} | {:>17} | {:>8} |",
        "workload",
        "configuration",
        "p99 without / with",
        "ratio",
        "extra without/with",
        "withheld"
    );
    let _ = writeln!(
        out,
        "|{:-<11}|{:-<29}|{:->23}|{:->8}|{:->19}|{:->10}|",
        "", "", "", "", "", ""
    );
    for row in &withheld.rows {
        let _ = writeln!(
            out,
            "| {:<9} | {:<27} | {:>21} | {:>5.3}x | {:>17} | {:>8} |",
            row.workload,
            row.label,
            format!("{} / {}", ms_text(row.without.0), ms_text(row.with.0)),
            row.p99_ratio(),
            format!("{:.2}% / {:.2}%", row.without.1 * 100.0, row.with.1 * 100.0),
            row.withheld
        );
    }
    out
}
