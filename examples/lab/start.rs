//! What the first second weighs on (f10), replicas paused a tenth of the time:
//! `tail_latency -- --start` prints it (it is not part of the demo's acceptance lines).
//!
//! There a tenth of the calls are slow and the budget grants about 9% extra copies, so the
//! run's p99 sits among the hedged calls, at about the delay they were hedged at: a delay
//! longer than the best for a fraction of a second moves a share of the run's slowest
//! percent, and one shorter than the best spends the budget's savings and leaves the next
//! pause unhedged. The table holds the best fixed delay of the run (in hindsight, with the
//! same budget) from a point in its first seconds on, and before it either the README's
//! delay until 100 latencies are known or one too short for the budget: what any delay
//! that is learnt, not known in advance, pays before it has learnt.

use std::time::Duration;

use super::cluster::{Cluster, F10_PAUSED, PAUSED_LOADS};
use super::ms_text;
use super::queueing::{run_jobs, run_levels, QueueRun};
use super::scheme::{swept, Scheme, FIRST_DELAY};

/// How long the first delay holds, from the run's start.
pub const HELD_FOR: [Duration; 3] = [
    Duration::from_millis(300),
    Duration::from_millis(600),
    Duration::from_millis(1_300),
];
/// A delay too short for the budget on (f10): it asks for more copies than it grants.
pub const SHORT_DELAY: Duration = Duration::from_millis(2);

/// One load: the best fixed delay of the run, and the runs that reach it only after
/// a first delay held for a while.
pub struct StartLevel {
    pub load: f64,
    /// The best of the fixed delays with the same budget, by p99.
    pub best: QueueRun,
    /// For each of [`FIRST_DELAYS`], for each of [`HELD_FOR`] in order: that delay until
    /// then, the best fixed delay after.
    pub held: Vec<QueueRun>,
}

impl StartLevel {
    /// A held run's p99 against the best fixed delay's.
    pub fn ratio(&self, held: &QueueRun) -> f64 {
        held.percentile(0.99).as_secs_f64() / self.best.percentile(0.99).as_secs_f64()
    }
}

/// The first delays the table holds before the best fixed delay, in order.
pub const FIRST_DELAYS: [Duration; 2] = [FIRST_DELAY, SHORT_DELAY];

/// Every load of (f10): the sweep, then its best delay reached after each start.
pub fn run_start() -> Vec<StartLevel> {
    let clusters = PAUSED_LOADS.map(|load| Cluster::paused_share(F10_PAUSED, load));
    let swept = run_levels(clusters.to_vec(), &swept(), false);
    let best: Vec<QueueRun> = swept
        .iter()
        .map(|level| level.best_fixed().expect("the swept delays").clone())
        .collect();
    let held = run_jobs(
        clusters
            .iter()
            .zip(&best)
            .map(|(&cluster, best)| {
                let then = best.swept_delay();
                let schemes = FIRST_DELAYS
                    .into_iter()
                    .flat_map(|first| {
                        HELD_FOR.map(|until| Scheme::HeldStart { first, until, then })
                    })
                    .collect();
                (cluster, schemes)
            })
            .collect(),
        false,
    );
    held.into_iter()
        .zip(best)
        .map(|(level, best)| StartLevel {
            load: level.cluster.utilisation,
            best,
            held: level.runs,
        })
        .collect()
}

/// The table `--start` prints: per first delay and how long it holds, the p99 at each
/// load and its ratio to the best fixed delay's.
pub fn start_table(levels: &[StartLevel]) -> String {
    let mut out = format!(
        "**(f10) the first second**: replicas paused {:.0}% of the time, 30 s runs; the best \
         of fixed 0.5-40 ms with the same budget on the run (10%, 50 in flight), and the same \
         delay reached only after a first delay held from the run's start (p99, and the ratio \
         to the best)\n\n",
        F10_PAUSED * 100.0
    );
    let loads = levels
        .iter()
        .map(|level| format!("{:>21}", format!("{:.0}% load", level.load * 100.0)));
    out += &format!(
        "| first delay      | held  | {} |\n",
        loads.collect::<Vec<_>>().join(" | ")
    );
    out += &format!(
        "|------------------|-------|{}|\n",
        vec!["-----------------------"; levels.len()].join("|")
    );
    let best = levels
        .iter()
        .map(|level| format!("{:>21}", level.best.p99_at_swept_delay()));
    out += &format!(
        "| best fixed delay | –     | {} |\n",
        best.collect::<Vec<_>>().join(" | ")
    );
    for (first_at, first) in FIRST_DELAYS.iter().enumerate() {
        for (until_at, until) in HELD_FOR.iter().enumerate() {
            let at = first_at * HELD_FOR.len() + until_at;
            let cells = levels.iter().map(|level| {
                let held = &level.held[at];
                let p99 = ms_text(held.percentile(0.99));
                format!("{:>21}", format!("{p99} ({:.2}x)", level.ratio(held)))
            });
            out += &format!(
                "| {:<16} | {:.1} s | {} |\n",
                ms_text(*first),
                until.as_secs_f64(),
                cells.collect::<Vec<_>>().join(" | ")
            );
        }
    }
    out
}
