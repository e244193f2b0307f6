//! (f10), replicas paused a tenth of the time, seed by seed: `tail_latency --
//! --paused-seeds N` prints it (it is not part of the demo's acceptance lines).
//!
//! The line (f10) is held to compares the recommended configuration with the best fixed
//! delay on the very run it is measured on, chosen after the run. Over other seeds of the
//! same cluster the table shows how far each run's own best moves: beside the recommended
//! configuration it runs the one swept delay that does best over all the seeds (the least
//! geometric mean of their p99, so the least mean ratio to each run's own best), the delay
//! a person would pick from many runs of the workload rather than from the one measured.

use std::time::Duration;

use super::cluster::{Cluster, F10_PAUSED, PAUSED_LOADS, SWEPT_DELAYS_US};
use super::ms_text;
use super::queueing::run_jobs;
use super::scheme::{swept, Scheme};

/// One seed at one load: the recommended configuration's p99 and each swept delay's.
pub struct SeedRun {
    pub seed: u64,
    pub load: f64,
    pub recommended: Duration,
    /// One per [`SWEPT_DELAYS_US`], in order.
    pub swept: Vec<Duration>,
}

impl SeedRun {
    /// The best of the swept delays' p99 on this run: the line's comparator.
    pub fn best(&self) -> Duration {
        *self.swept.iter().min().expect("the swept delays")
    }
}

/// (f10) at every load of [`PAUSED_LOADS`] for each of `seeds`, in that order.
pub fn run_paused_seeds(seeds: impl IntoIterator<Item = u64>) -> Vec<SeedRun> {
    let schemes: Vec<Scheme> = std::iter::once(Scheme::Recommended { budget: true })
        .chain(swept())
        .collect();
    let jobs: Vec<(Cluster, Vec<Scheme>)> = seeds
        .into_iter()
        .flat_map(|seed| {
            PAUSED_LOADS.map(|load| {
                let cluster = Cluster {
                    seed,
                    ..Cluster::paused_share(F10_PAUSED, load)
                };
                (cluster, schemes.clone())
            })
        })
        .collect();
    run_jobs(jobs, false)
        .into_iter()
        .map(|level| {
            let mut p99s = level.runs.iter().map(|run| run.percentile(0.99));
            SeedRun {
                seed: level.cluster.seed,
                load: level.cluster.utilisation,
                recommended: p99s.next().expect("the recommended row"),
                swept: p99s.collect(),
            }
        })
        .collect()
}

/// Of the swept delays, the one with the least geometric mean of p99 over `runs` (one
/// load's): its index in [`SWEPT_DELAYS_US`]. Each run's own best is fixed, so this is
/// also the delay whose ratio to it is least on average; a geometric mean, so one run's
/// long tail does not decide alone.
pub fn one_delay(runs: &[&SeedRun]) -> usize {
    let log_sum = |at: usize| -> f64 {
        runs.iter()
            .map(|run| run.swept[at].as_secs_f64().ln())
            .sum()
    };
    (0..SWEPT_DELAYS_US.len())
        .min_by(|&a, &b| log_sum(a).total_cmp(&log_sum(b)))
        .expect("the swept delays")
}

/// The table `--paused-seeds` prints: per seed and load, the recommended p99's ratio to
/// the run's best fixed delay, and the ratio of the one delay best over every seed.
pub fn paused_seeds_table(runs: &[SeedRun]) -> String {
    let seeds: Vec<u64> = runs
        .iter()
        .filter(|run| run.load == PAUSED_LOADS[0])
        .map(|run| run.seed)
        .collect();
    // Each load's runs, in seed order.
    let at_load: Vec<Vec<&SeedRun>> = PAUSED_LOADS
        .iter()
        .map(|&load| runs.iter().filter(|run| run.load == load).collect())
        .collect();
    let chosen: Vec<usize> = at_load.iter().map(|runs| one_delay(runs)).collect();
    let mut out = format!(
        "**(f10) seed by seed**: replicas paused {:.0}% of the time, 30 s runs of seeds {}; \
         on each run, optimal p99 + 10% budget and the one fixed delay best over all these \
         seeds (the least geometric mean of p99), each against the best of fixed 0.5-40 ms \
         with the same budget on that run (the ratio of p99)\n\n",
        F10_PAUSED * 100.0,
        seeds
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let headers = PAUSED_LOADS.iter().zip(&chosen).map(|(load, &at)| {
        let load = load * 100.0;
        let delay = ms_text(Duration::from_micros(SWEPT_DELAYS_US[at]));
        format!("{load:.0}%: optimal | {load:.0}%: fixed {delay}")
    });
    out += &format!("| seed | {} |\n", headers.collect::<Vec<_>>().join(" | "));
    out += &format!(
        "|------|{}|\n",
        vec!["---:"; 2 * PAUSED_LOADS.len()].join("|")
    );
    // Per load, the ratios of the recommended row and of the one delay, seed by seed.
    let ratios: Vec<[Vec<f64>; 2]> = at_load
        .iter()
        .zip(&chosen)
        .map(|(runs, &chosen)| {
            let ratio = |p99: Duration, run: &SeedRun| p99.as_secs_f64() / run.best().as_secs_f64();
            [
                runs.iter().map(|run| ratio(run.recommended, run)).collect(),
                runs.iter()
                    .map(|run| ratio(run.swept[chosen], run))
                    .collect(),
            ]
        })
        .collect();
    let row = |label: &str, cell: &dyn Fn(&[f64]) -> f64| {
        let cells = ratios
            .iter()
            .flat_map(|pair| pair.iter().map(|column| format!("{:.2}x", cell(column))));
        format!("| {label} | {} |\n", cells.collect::<Vec<_>>().join(" | "))
    };
    for (at, seed) in seeds.iter().enumerate() {
        out += &row(&seed.to_string(), &|column| column[at]);
    }
    out += &row("geometric mean", &|column| {
        (column.iter().map(|ratio| ratio.ln()).sum::<f64>() / column.len() as f64).exp()
    });
    out += &row("worst", &|column| {
        column.iter().copied().fold(0.0, f64::max)
    });
    out
}
