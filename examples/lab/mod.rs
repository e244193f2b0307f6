//! The tail-latency lab: simulated backends on `ManualTimer`, driven by a small
//! deterministic executor, so every figure is the same on every machine and every run.
//!
//! Shared by `examples/tail_latency.rs` (which prints it) and `tests/lab.rs` (which asserts
//! the acceptance lines on the very same figures).
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Budget, Hedgeable, Policy};

const MS: Duration = Duration::from_millis(1);

/// Calls per second of virtual time, for every workload.
pub const RATE: u64 = 4_000;
/// The budget ratio of the budgeted rows.
pub const BUDGET_RATIO: f64 = 0.05;
/// The quantile the adaptive rows track.
pub const QUANTILE: f64 = 0.95;
/// The adaptive rows' window.
pub const WINDOW: Duration = Duration::from_secs(1);
/// The share of copies that stall, 10–100× the median, in every workload.
pub const STALL_RATE: f64 = 0.02;

/// What the backend does over time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A steady median; `STALL_RATE` of copies stall.
    Stalls,
    /// Queries, each sent to `servers` servers at once and waiting for all of them.
    FanOut { servers: usize },
    /// The median moves 1 → 5 → 1 ms, a third of the run each.
    Shifting,
    /// Every copy started between `from` and `until` is 10× slower.
    Brownout { from: Duration, until: Duration },
}

/// One simulated workload: how many calls, when they arrive, and how long each copy takes.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub key: char,
    pub title: &'static str,
    pub kind: Kind,
    /// Calls (for a fan-out: queries × servers).
    pub calls: usize,
    /// The median copy latency (before any shift or brownout).
    pub median: Duration,
    pub seed: u64,
}

impl Workload {
    /// The four workloads of the lab, at `scale` times the latencies (1 in the simulation;
    /// the real-clock mode scales them up so timer precision matters less).
    pub fn all(scale: u32) -> [Workload; 4] {
        let median = MS * scale;
        [
            Workload {
                key: 'a',
                title: "2% of copies stall 10-100x the median",
                kind: Kind::Stalls,
                calls: 20_000,
                median,
                seed: 1,
            },
            Workload {
                key: 'b',
                title: "fan-out: 1,000 queries over 100 servers, wait for all",
                kind: Kind::FanOut { servers: 100 },
                calls: 100_000,
                median,
                seed: 2,
            },
            Workload {
                key: 'c',
                title: "shifting: the median moves 1 ms -> 5 ms -> 1 ms",
                kind: Kind::Shifting,
                calls: 48_000,
                median,
                seed: 3,
            },
            Workload {
                key: 'd',
                title: "brownout: every backend 10x slower from 3 s to 6 s",
                kind: Kind::Brownout {
                    from: Duration::from_secs(3),
                    until: Duration::from_secs(6),
                },
                calls: 36_000,
                median,
                seed: 4,
            },
        ]
    }

    /// Workload (a) with `calls` calls at `scale` times the latencies.
    pub fn stalls(scale: u32, calls: usize) -> Workload {
        Workload {
            calls,
            ..Workload::all(scale)[0]
        }
    }

    /// How long the run lasts, arrivals only.
    pub fn duration(&self) -> Duration {
        self.arrival(self.calls.saturating_sub(1)) + Duration::from_nanos(1)
    }

    /// Calls that make one request: the servers of a fan-out query, else 1.
    pub fn fan_out(&self) -> usize {
        match self.kind {
            Kind::FanOut { servers } => servers,
            _ => 1,
        }
    }

    /// When call `call` arrives: `RATE` calls per second, a fan-out's calls together.
    pub fn arrival(&self, call: usize) -> Duration {
        let fan_out = self.fan_out() as u64;
        let request = call as u64 / fan_out;
        Duration::from_nanos(request * fan_out * 1_000_000_000 / RATE)
    }

    /// The median of a copy started at `start`.
    fn median_at(&self, start: Duration) -> Duration {
        match self.kind {
            Kind::Shifting => {
                let third = self.duration() / 3;
                if start >= third && start < third * 2 {
                    self.median * 5
                } else {
                    self.median
                }
            }
            Kind::Brownout { from, until } if start >= from && start < until => self.median * 10,
            _ => self.median,
        }
    }

    /// How long copy `copy` of call `call` takes when started at `start`: a log-normal body
    /// (σ = 0.3) around the median, or a stall of 10–100× the median. The draw depends
    /// only on the seed, the call and the copy, so every configuration sees the same
    /// backend.
    pub fn latency(&self, call: usize, copy: usize, start: Duration) -> Duration {
        let mut rng = fastrand::Rng::with_seed(
            self.seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add((call as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
                .wrapping_add((copy as u64).wrapping_mul(0x94d0_49bb_1331_11eb)),
        );
        let median = self.median_at(start).as_secs_f64();
        let seconds = if rng.f64() < STALL_RATE {
            median * (10.0 + 90.0 * rng.f64())
        } else {
            let (u1, u2) = (1.0 - rng.f64(), rng.f64());
            let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            median * (0.3 * normal).exp()
        };
        // Whole microseconds keep the figures exact across platforms' float formatting.
        Duration::from_micros((seconds * 1e6).round() as u64)
    }

    /// The `quantile` of the originals' latencies: the delay an operator would pick in
    /// hindsight. Over the whole run, except for a brownout: there, over the calls before
    /// it, the steady state an operator tunes for.
    pub fn hindsight_delay(&self, quantile: f64) -> Duration {
        let tuned_on = |call: &usize| match self.kind {
            Kind::Brownout { from, .. } => self.arrival(*call) < from,
            _ => true,
        };
        let originals: Vec<Duration> = (0..self.calls)
            .filter(tuned_on)
            .map(|call| self.latency(call, 0, self.arrival(call)))
            .collect();
        percentile(&originals, quantile)
    }

    /// The ideal model: the same samples, a hedge at exactly `delay` after the original
    /// for every call that needs one, no budget, zero overhead. Per request (a fan-out's
    /// request waits for its slowest server).
    pub fn ideal(&self, delay: Option<Duration>) -> Vec<Duration> {
        let per_call = (0..self.calls).map(|call| {
            let start = self.arrival(call);
            let original = self.latency(call, 0, start);
            match delay {
                Some(delay) if original > delay => {
                    original.min(delay + self.latency(call, 1, start + delay))
                }
                _ => original,
            }
        });
        per_request(self.fan_out(), per_call)
    }

    /// Extra copies per call of the ideal model at `delay`: the share of originals slower
    /// than it.
    pub fn ideal_extra(&self, delay: Duration) -> f64 {
        let originals = self.sorted_originals();
        extra_above(&originals, delay)
    }

    /// Every original's latency, sorted.
    pub fn sorted_originals(&self) -> Vec<Duration> {
        let mut originals: Vec<Duration> = (0..self.calls)
            .map(|call| self.latency(call, 0, self.arrival(call)))
            .collect();
        originals.sort_unstable();
        originals
    }
}

/// The share of `sorted` latencies above `delay`.
fn extra_above(sorted: &[Duration], delay: Duration) -> f64 {
    let at_or_below = sorted.partition_point(|latency| *latency <= delay);
    (sorted.len() - at_or_below) as f64 / sorted.len() as f64
}

impl Workload {}

/// A fan-out request's latency is its slowest call's.
fn per_request(fan_out: usize, per_call: impl Iterator<Item = Duration>) -> Vec<Duration> {
    let per_call: Vec<Duration> = per_call.collect();
    per_call
        .chunks(fan_out)
        .map(|calls| calls.iter().copied().max().unwrap_or_default())
        .collect()
}

/// How a row hedges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delay {
    /// One copy per call.
    Off,
    /// A hedge this long after the original.
    Fixed(Duration),
    /// A hedge at this quantile of recent latencies.
    Adaptive(f64),
}

/// One row of a table: a delay, with or without the 5% budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub delay: Delay,
    pub budget: bool,
}

impl Config {
    pub fn label(&self) -> String {
        let delay = match self.delay {
            Delay::Off => "no hedging".to_string(),
            Delay::Fixed(delay) => format!("fixed {:.2} ms", delay.as_secs_f64() * 1e3),
            Delay::Adaptive(quantile) => format!("adaptive p{}", (quantile * 100.0).round()),
        };
        if self.budget {
            format!("{delay} + {}% budget", (BUDGET_RATIO * 100.0).round())
        } else {
            delay
        }
    }

    /// The policy of this row on `timer`: two copies at most.
    pub fn policy<T: Timer>(&self, timer: T) -> Policy<T> {
        let builder = Policy::builder().timer(timer);
        let builder = match self.delay {
            Delay::Off => builder.max_copies(1),
            Delay::Fixed(delay) => builder.max_copies(2).delay(delay),
            Delay::Adaptive(quantile) => builder
                .max_copies(2)
                .adaptive_delay(quantile)
                .adaptive_window(WINDOW),
        };
        if self.budget {
            builder.budget(&Budget::new(BUDGET_RATIO)).build()
        } else {
            builder.build()
        }
    }
}

/// What one configuration did on one workload.
#[derive(Clone, Debug)]
pub struct Run {
    pub config: Config,
    /// Per request (a fan-out query counts once), in arrival order.
    pub latencies: Vec<Duration>,
    pub calls: u64,
    pub extra_copies: u64,
    pub budget_denied: u64,
    /// Per second of arrivals: (calls that arrived, extra copies started).
    pub per_second: Vec<(u64, u64)>,
}

impl Run {
    pub fn percentile(&self, quantile: f64) -> Duration {
        percentile(&self.latencies, quantile)
    }

    pub fn extra_ratio(&self) -> f64 {
        self.extra_copies as f64 / self.calls as f64
    }

    /// The highest share of extra copies in any whole second from `from` to `until`.
    pub fn max_extra_per_second(&self, from: Duration, until: Duration) -> f64 {
        let seconds = from.as_secs() as usize..until.as_secs() as usize;
        self.per_second[seconds]
            .iter()
            .map(|&(calls, extra)| extra as f64 / calls.max(1) as f64)
            .fold(0.0, f64::max)
    }
}

/// The nearest-rank `quantile` of `latencies`.
pub fn percentile(latencies: &[Duration], quantile: f64) -> Duration {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    nearest_rank(&sorted, quantile)
}

fn nearest_rank(sorted: &[Duration], quantile: f64) -> Duration {
    let rank = ((quantile * sorted.len() as f64 - 1e-9).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Wakes a task by queueing its index.
struct TaskWaker {
    task: usize,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.ready.lock().unwrap().push_back(self.task);
    }
}

/// Runs `config` on `workload` in virtual time: calls arrive on schedule, each is one
/// `Hedge` polled only when woken, and the clock jumps to the next arrival or deadline.
pub fn simulate(workload: &Workload, config: Config) -> Run {
    let timer = ManualTimer::new();
    let policy = config.policy(timer.clone());
    let seconds = workload.duration().as_secs() as usize + 1;
    let per_second = Rc::new(RefCell::new(vec![(0u64, 0u64); seconds]));
    let latencies = Rc::new(RefCell::new(vec![Duration::ZERO; workload.calls]));
    let ready = Arc::new(Mutex::new(VecDeque::new()));
    let mut tasks: Vec<Option<(Task, Waker)>> = Vec::with_capacity(workload.calls);

    let spawn = |call: usize| -> Task {
        let (timer, per_second, latencies, workload) = (
            timer.clone(),
            Rc::clone(&per_second),
            Rc::clone(&latencies),
            *workload,
        );
        let policy = policy.clone();
        Box::pin(async move {
            let arrived = timer.now();
            per_second.borrow_mut()[arrived.as_secs() as usize].0 += 1;
            let factory = {
                let (timer, per_second) = (timer.clone(), Rc::clone(&per_second));
                move |attempt: Attempt| {
                    let start = timer.now();
                    if attempt.is_hedge() {
                        per_second.borrow_mut()[arrived.as_secs() as usize].1 += 1;
                    }
                    let sleep = timer.sleep(workload.latency(call, attempt.index(), start));
                    async move {
                        sleep.await;
                        Ok::<(), ()>(())
                    }
                }
            };
            let answer = factory.hedged(&policy).await;
            assert_eq!(answer, Ok(()), "simulated copies always succeed");
            latencies.borrow_mut()[call] = timer.now() - arrived;
        })
    };

    let mut next_call = 0;
    loop {
        let now = timer.now();
        while next_call < workload.calls && workload.arrival(next_call) <= now {
            let waker = Waker::from(Arc::new(TaskWaker {
                task: next_call,
                ready: Arc::clone(&ready),
            }));
            tasks.push(Some((spawn(next_call), waker)));
            ready.lock().unwrap().push_back(next_call);
            next_call += 1;
        }
        loop {
            let Some(task) = ready.lock().unwrap().pop_front() else {
                break;
            };
            let Some((future, waker)) = &mut tasks[task] else {
                continue;
            };
            if future
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
            {
                tasks[task] = None;
            }
        }
        let next_arrival = (next_call < workload.calls).then(|| workload.arrival(next_call));
        let next = match (timer.next_deadline(), next_arrival) {
            (Some(deadline), Some(arrival)) => deadline.min(arrival),
            (deadline, arrival) => match deadline.or(arrival) {
                Some(next) => next,
                None => break,
            },
        };
        timer.advance(next - now);
    }
    assert!(tasks.iter().all(Option::is_none), "every call finished");

    let stats = policy.stats();
    let latencies = latencies.take();
    let per_second = per_second.take();
    Run {
        config,
        latencies: per_request(workload.fan_out(), latencies.into_iter()),
        calls: stats.calls,
        extra_copies: stats.hedges,
        budget_denied: stats.budget_denied,
        per_second,
    }
}

/// The percentiles every table shows.
pub const PERCENTILES: [(f64, &str); 3] = [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")];

/// One row: a run and the ideal model beside it.
#[derive(Clone, Debug)]
pub struct Row {
    pub run: Run,
    pub ideal: Vec<Duration>,
}

/// Every row of one workload, and the acceptance checks that apply to it.
#[derive(Clone, Debug)]
pub struct Report {
    pub workload: Workload,
    /// The originals' p95 over the run: the fixed rows' delay.
    pub p95: Duration,
    pub rows: Vec<Row>,
    /// (c) only: the best fixed delay in hindsight at no more extra copies than the
    /// adaptive row, and its run.
    pub best_fixed: Option<Run>,
    pub checks: Vec<Check>,
}

/// One acceptance line: what is claimed, what was measured, whether it holds.
#[derive(Clone, Debug)]
pub struct Check {
    pub claim: String,
    pub measured: String,
    pub holds: bool,
}

impl Report {
    pub fn row(&self, delay: fn(&Delay) -> bool, budget: bool) -> &Run {
        &self
            .rows
            .iter()
            .find(|row| delay(&row.run.config.delay) && row.run.config.budget == budget)
            .expect("every configuration has a row")
            .run
    }

    pub fn unhedged(&self) -> &Run {
        self.row(|delay| *delay == Delay::Off, false)
    }

    pub fn fixed(&self, budget: bool) -> &Run {
        self.row(|delay| matches!(delay, Delay::Fixed(_)), budget)
    }

    pub fn adaptive(&self, budget: bool) -> &Run {
        self.row(|delay| matches!(delay, Delay::Adaptive(_)), budget)
    }
}

/// Runs every configuration on `workload` and checks its acceptance lines.
pub fn run(workload: &Workload) -> Report {
    let p95 = workload.hindsight_delay(0.95);
    let configs = [
        Config {
            delay: Delay::Off,
            budget: false,
        },
        Config {
            delay: Delay::Fixed(p95),
            budget: false,
        },
        Config {
            delay: Delay::Fixed(p95),
            budget: true,
        },
        Config {
            delay: Delay::Adaptive(QUANTILE),
            budget: false,
        },
        Config {
            delay: Delay::Adaptive(QUANTILE),
            budget: true,
        },
    ];
    let ideal_off = workload.ideal(None);
    let ideal_hedged = workload.ideal(Some(p95));
    let rows = configs
        .into_iter()
        .map(|config| Row {
            ideal: if config.delay == Delay::Off {
                ideal_off.clone()
            } else {
                ideal_hedged.clone()
            },
            run: simulate(workload, config),
        })
        .collect();
    let mut report = Report {
        workload: *workload,
        p95,
        rows,
        best_fixed: None,
        checks: Vec::new(),
    };
    match workload.kind {
        Kind::Stalls => check_stalls(&mut report),
        Kind::Shifting => check_shifting(&mut report),
        Kind::Brownout { from, until } => check_brownout(&mut report, from, until),
        Kind::FanOut { .. } => {}
    }
    report
}

fn ms_text(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

/// (a): p99 at least 10× lower than unhedged for at most 5% extra copies, and within 10%
/// of the ideal model.
fn check_stalls(report: &mut Report) {
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
fn check_shifting(report: &mut Report) {
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
fn check_brownout(report: &mut Report, from: Duration, until: Duration) {
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
pub fn acceptance(report: &Report) -> String {
    let mut out = String::new();
    for check in &report.checks {
        let verdict = if check.holds { "PASS" } else { "FAIL" };
        let _ = writeln!(out, "{verdict}  {}: {}", check.claim, check.measured);
    }
    out
}

/// The latency CDFs of every report as an SVG: one panel per workload, latency on a log
/// axis, the cumulative share on a "nines" axis (90%, 99%, 99.9%, ...) so the tail shows.
pub fn svg(reports: &[Report]) -> String {
    const PANEL_W: f64 = 440.0;
    const PANEL_H: f64 = 300.0;
    const LEFT: f64 = 78.0;
    const TOP: f64 = 40.0;
    const PLOT_W: f64 = PANEL_W - LEFT - 20.0;
    const PLOT_H: f64 = PANEL_H - TOP - 50.0;
    const NINES: f64 = 4.0;
    let colors = ["#555555", "#1f77b4", "#1f77b4", "#d62728", "#d62728"];
    let dashes = ["", "", "6,4", "", "6,4"];
    let columns = 2;
    let rows = reports.len().div_ceil(columns);
    let (width, height) = (PANEL_W * columns as f64, PANEL_H * rows as f64 + 60.0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    for (index, report) in reports.iter().enumerate() {
        let (x0, y0) = (
            (index % columns) as f64 * PANEL_W,
            (index / columns) as f64 * PANEL_H,
        );
        let all = report.rows.iter().flat_map(|row| row.run.latencies.iter());
        let (low, high) = all.fold((f64::MAX, 0.0f64), |(low, high), latency| {
            let ms = latency.as_secs_f64() * 1e3;
            (low.min(ms), high.max(ms))
        });
        let (log_low, log_high) = ((low.max(0.01)).log10().floor(), high.log10().ceil());
        let x_of =
            |ms: f64| x0 + LEFT + (ms.max(0.01).log10() - log_low) / (log_high - log_low) * PLOT_W;
        let y_of = |nines: f64| y0 + TOP + PLOT_H - nines.min(NINES) / NINES * PLOT_H;
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="12" font-weight="bold">({}) {}</text>"#,
            x0 + 10.0,
            y0 + 20.0,
            report.workload.key,
            escape(report.workload.title)
        );
        // Axes and grid.
        for nines in 0..=NINES as u32 {
            let y = y_of(nines as f64);
            let label = ["0%", "90%", "99%", "99.9%", "99.99%"][nines as usize];
            let _ = writeln!(
                out,
                r##"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="#dddddd"/><text x="{}" y="{}" text-anchor="end">{label}</text>"##,
                x0 + LEFT,
                x0 + LEFT + PLOT_W,
                x0 + LEFT - 5.0,
                y + 4.0
            );
        }
        for decade in log_low as i32..=log_high as i32 {
            let ms = 10f64.powi(decade);
            let x = x_of(ms);
            let label = if ms < 1.0 {
                format!("{ms} ms")
            } else {
                format!("{} ms", ms as u64)
            };
            let _ = writeln!(
                out,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#dddddd"/><text x="{x}" y="{}" text-anchor="middle">{label}</text>"##,
                y0 + TOP,
                y0 + TOP + PLOT_H,
                y0 + TOP + PLOT_H + 15.0
            );
        }
        let _ = writeln!(
            out,
            r#"<text transform="translate({},{}) rotate(-90)" text-anchor="middle">share of {}s at or below</text>"#,
            x0 + 12.0,
            y0 + TOP + PLOT_H / 2.0,
            if report.workload.fan_out() > 1 {
                "querie"
            } else {
                "call"
            }
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">latency per {} (log)</text>"#,
            x0 + LEFT + PLOT_W / 2.0,
            y0 + TOP + PLOT_H + 32.0,
            if report.workload.fan_out() > 1 {
                "query"
            } else {
                "call"
            }
        );
        // One curve per row: the latency at each share of calls, on a fine grid of nines.
        for (row, (color, dash)) in report.rows.iter().zip(colors.iter().zip(dashes)) {
            let mut sorted = row.run.latencies.clone();
            sorted.sort_unstable();
            let points: Vec<String> = (0..=400)
                .map(|step| {
                    let nines = step as f64 / 400.0 * NINES;
                    let share = 1.0 - 10f64.powf(-nines);
                    let latency = nearest_rank(&sorted, share.max(1.0 / sorted.len() as f64));
                    format!(
                        "{:.1},{:.1}",
                        x_of(latency.as_secs_f64() * 1e3),
                        y_of(nines)
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.8" stroke-dasharray="{dash}" points="{}"/>"#,
                points.join(" ")
            );
        }
    }
    // Legend: unhedged, then the fixed rows, then the adaptive rows, one column each.
    for (index, (row, (color, dash))) in reports[0]
        .rows
        .iter()
        .zip(colors.iter().zip(dashes))
        .enumerate()
    {
        let (column, line) = match index {
            0 => (0, 0),
            index => (index.div_ceil(2), (index + 1) % 2),
        };
        let x = 60.0 + column as f64 * 260.0;
        let legend_y = height - 45.0 + line as f64 * 20.0;
        let label = match row.run.config.delay {
            Delay::Fixed(_) => Config {
                delay: Delay::Fixed(Duration::ZERO),
                ..row.run.config
            }
            .label()
            .replace("fixed 0.00 ms", "fixed at p95"),
            _ => row.run.config.label(),
        };
        let _ = writeln!(
            out,
            r#"<line x1="{x}" y1="{legend_y}" x2="{}" y2="{legend_y}" stroke="{color}" stroke-width="2.5" stroke-dasharray="{dash}"/><text x="{}" y="{}">{}</text>"#,
            x + 28.0,
            x + 34.0,
            legend_y + 4.0,
            escape(&label)
        );
    }
    out.push_str("</svg>\n");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
