//! The tail-latency lab: simulated backends on `ManualTimer`, driven by a small
//! deterministic executor, so every figure is the same on every machine and every run.
//!
//! Shared by `examples/tail_latency.rs` (which prints it) and `lab/tests/lab.rs` (which asserts
//! the acceptance lines on the very same figures). `engine` runs the calls; each workload
//! family has its file (`independent` for (a)-(d); for (e) and (f), `cluster` the replicas
//! and their traffic, `scheme` the rows, `servers` the queues, `queueing` the runs);
//! `report` and `queue_report` turn runs into tables and acceptance lines, `chart` into the
//! latency CDFs. `keyed` is (g), one client over two backends; `heavy` is (h) and (i),
//! slowness the request carries, and what `min_win_rate` does on every workload;
//! `hindsight` holds `optimal_delay` on (a)-(d) and (g)-(i) to the best fixed delay with
//! the same budget (`lab/tests/hindsight.rs` asserts it); `windows` runs (f10) with longer
//! windows over longer runs (`tail_latency -- --windows`), `paused_seeds` seed by seed
//! (`tail_latency -- --paused-seeds 8`), and `start` what its first second weighs
//! (`tail_latency -- --start`).
#![allow(dead_code)]

mod chart;
mod cluster;
mod engine;
mod heavy;
mod hindsight;
mod independent;
mod keyed;
mod paused_seeds;
mod queue_report;
mod queueing;
mod report;
mod scheme;
mod servers;
mod start;
mod windows;

use std::time::Duration;

use hedging::timer::Timer;
use hedging::{Budget, Policy, PolicyBuilder};

// The demo and the test each use a part of the lab.
#[allow(unused_imports)]
pub use chart::svg;
#[allow(unused_imports)]
pub use cluster::{
    Cluster, Slowness, F10_PAUSED, PAUSED_LOADS, SERVERS, SWEPT_DELAYS_US, UTILISATIONS,
};
#[allow(unused_imports)]
pub use heavy::{
    heavy_table, run_heavy, run_switch, run_withheld, withheld_table, Heavy, HeavyReport, Withheld,
    WithheldRow,
};
#[allow(unused_imports)]
pub use hindsight::{heavy_hindsight, run_hindsight, two_hosts_hindsight, Hindsight};
#[allow(unused_imports)]
pub use independent::{run, simulate, simulate_with, Kind, Report, Row, Workload};
#[allow(unused_imports)]
pub use keyed::{keyed_table, run_two_hosts, Calls, HostRun, Routing, TwoHosts, TwoHostsReport};
#[allow(unused_imports)]
pub use paused_seeds::{one_delay, paused_seeds_table, run_paused_seeds, SeedRun};
#[allow(unused_imports)]
pub use queue_report::{queue_table, tied_against_hedged, tied_seed_table, TIED_LOAD};
#[allow(unused_imports)]
pub use queueing::{
    run_aborted, run_levels, run_paused, run_paused_share, run_queueing, run_seeds, simulate_queue,
    simulate_queue_with, unloaded_p95, Level, QueueReport, QueueRun,
};
#[allow(unused_imports)]
pub use report::{acceptance, table, targets};
#[allow(unused_imports)]
pub use scheme::{adaptive_p95, recommended, recommended_budget, swept, Scheme, TIE};
#[allow(unused_imports)]
pub use start::{run_start, start_table, StartLevel, FIRST_DELAYS, HELD_FOR};
#[allow(unused_imports)]
pub use windows::{run_windows, windows_table, WindowLevel, RUNS, WINDOWS};

const MS: Duration = Duration::from_millis(1);

/// Calls per second of virtual time, for every workload.
pub const RATE: u64 = 4_000;
/// The budget ratio of the budgeted rows: the README's recommendation, twice the share of
/// calls a p95 delay hedges, so the clusters of slow calls have room.
pub const BUDGET_RATIO: f64 = 0.10;
/// The quantile the adaptive rows track.
pub const QUANTILE: f64 = 0.95;
/// The adaptive rows' window.
pub const WINDOW: Duration = Duration::from_secs(1);
/// The share of copies that stall, 10–100× the median, in every workload.
pub const STALL_RATE: f64 = 0.02;
/// The `min_win_rate` of the rows that withhold hedges that stop winning: the README's
/// recommendation.
pub const MIN_WIN_RATE: f64 = 0.05;

/// The rows whose delay is learnt, on every workload of independent copies: the adaptive
/// p95 without and with the budget, and the README's configuration, `optimal_delay(0.99)`
/// with it.
pub const LEARNT: [Config; 3] = [
    Config {
        delay: Delay::Adaptive(QUANTILE),
        budget: false,
    },
    Config {
        delay: Delay::Adaptive(QUANTILE),
        budget: true,
    },
    Config {
        delay: Delay::Optimal(0.99),
        budget: true,
    },
];

/// How a row hedges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delay {
    /// One copy per call.
    Off,
    /// A hedge this long after the original.
    Fixed(Duration),
    /// A hedge at this quantile of recent latencies.
    Adaptive(f64),
    /// A hedge at the delay the recent latencies predict minimises this quantile of call
    /// latency within the budget, bounded as every optimal row is
    /// (`scheme::optimal_bounded`).
    Optimal(f64),
}

/// One row of a table: a delay, with or without the budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub delay: Delay,
    pub budget: bool,
}

impl Config {
    pub fn label(&self) -> String {
        let delay = match self.delay {
            Delay::Off => "no hedging".to_string(),
            Delay::Fixed(delay) => format!("fixed {}", ms_text(delay)),
            Delay::Adaptive(quantile) => format!("adaptive p{}", (quantile * 100.0).round()),
            Delay::Optimal(quantile) => format!("optimal p{}", (quantile * 100.0).round()),
        };
        if self.budget {
            format!("{delay} + {}% budget", (BUDGET_RATIO * 100.0).round())
        } else {
            delay
        }
    }

    /// The policy of this row on `timer`: two copies at most.
    pub fn policy<T: Timer>(&self, timer: T) -> Policy<T> {
        self.builder(timer).build()
    }

    /// The builder of [`policy`](Config::policy), for rows that add to it.
    pub fn builder<T: Timer>(&self, timer: T) -> PolicyBuilder<T> {
        let builder = Policy::builder().timer(timer);
        let builder = match self.delay {
            Delay::Off => builder.max_copies(1),
            Delay::Fixed(delay) => builder.max_copies(2).delay(delay),
            Delay::Adaptive(quantile) => builder
                .max_copies(2)
                .adaptive_delay(quantile)
                .adaptive_window(WINDOW),
            Delay::Optimal(quantile) => scheme::optimal_bounded(builder.max_copies(2), quantile),
        };
        if self.budget {
            builder.budget(&Budget::new(BUDGET_RATIO))
        } else {
            builder
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
    /// Calls whose hedge `min_win_rate` withheld.
    pub withheld: u64,
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

    /// The share of extra copies of the calls that arrived from `from` to `until`.
    pub fn extra_between(&self, from: Duration, until: Duration) -> f64 {
        let seconds = from.as_secs() as usize..until.as_secs() as usize;
        let (calls, extra) = self.per_second[seconds]
            .iter()
            .fold((0, 0), |(calls, extra), &(c, e)| (calls + c, extra + e));
        extra as f64 / calls.max(1) as f64
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

pub(super) fn nearest_rank(sorted: &[Duration], quantile: f64) -> Duration {
    let rank = ((quantile * sorted.len() as f64 - 1e-9).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The percentiles every table shows.
pub const PERCENTILES: [(f64, &str); 3] = [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")];

/// One acceptance line: what is claimed, what was measured, whether it holds.
#[derive(Clone, Debug)]
pub struct Check {
    pub claim: String,
    pub measured: String,
    pub holds: bool,
}

pub(super) fn ms_text(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}
