//! How much `optimal_delay` learns on (f10), replicas paused a tenth of the time, as its
//! window and the run grow: `tail_latency -- --windows` prints it (it is not part of the
//! demo's acceptance lines).
//!
//! There a tenth of the calls are slow and the budget grants about 9% extra copies, so the
//! delay the model chooses is the one that asks for just what the budget grants, where the
//! survival of one copy is nearly flat (about 11% of calls still running at 3 ms, 9% at
//! 13 ms). A window's share of slow calls moves with the pauses it happened to hold, and
//! the chosen delay moves by milliseconds with it. The table runs the recommended
//! configuration with longer windows, over longer runs of the same cluster, each against
//! the best fixed delay with the same budget on the same run, in hindsight.

use std::time::Duration;

use super::cluster::{Cluster, F10_PAUSED, PAUSED_LOADS};
use super::ms_text;
use super::queueing::{run_jobs, QueueRun};
use super::scheme::{swept, Scheme};

/// The runs, in seconds of arrivals: the lab's 30 s, and four and eight times it.
pub const RUNS: [u64; 3] = [30, 120, 240];
/// The windows, in seconds: the default 10 s, and four and eight times it.
pub const WINDOWS: [u64; 3] = [10, 40, 80];

/// One run length at one load: the recommended configuration over each window, and the
/// best fixed delay with the same budget.
pub struct WindowLevel {
    pub run: Duration,
    pub load: f64,
    /// One per [`WINDOWS`], in order.
    pub learnt: Vec<QueueRun>,
    /// The best of the fixed delays with the same budget, by p99.
    pub best: QueueRun,
}

impl WindowLevel {
    /// The recommended p99 over `window` against the best fixed delay's.
    pub fn ratio(&self, window: usize) -> f64 {
        let p99 = |run: &QueueRun| run.percentile(0.99).as_secs_f64();
        p99(&self.learnt[window]) / p99(&self.best)
    }
}

/// Every run length at every load of (f10).
pub fn run_windows() -> Vec<WindowLevel> {
    let learnt = WINDOWS.map(|secs| Scheme::RecommendedWindow(Duration::from_secs(secs)));
    let schemes: Vec<Scheme> = learnt.into_iter().chain(swept()).collect();
    let jobs = RUNS
        .iter()
        .flat_map(|&secs| {
            PAUSED_LOADS.map(|load| {
                let run = Duration::from_secs(secs);
                (
                    Cluster::paused_share(F10_PAUSED, load).lasting(run),
                    schemes.clone(),
                )
            })
        })
        .collect();
    // The levels come back in the jobs' order: each run length's loads in turn.
    let runs = RUNS.iter().flat_map(|&secs| PAUSED_LOADS.map(|_| secs));
    run_jobs(jobs, false)
        .into_iter()
        .zip(runs)
        .map(|(level, secs)| {
            let best = level.best_fixed().expect("the swept delays").clone();
            let learnt: Vec<QueueRun> = level.runs.into_iter().take(WINDOWS.len()).collect();
            WindowLevel {
                run: Duration::from_secs(secs),
                load: level.cluster.utilisation,
                learnt,
                best,
            }
        })
        .collect()
}

/// The table `--windows` prints: per run length and window, the recommended p99 at each
/// load and its ratio to the best fixed delay's.
pub fn windows_table(levels: &[WindowLevel]) -> String {
    let mut out = format!(
        "**(f10) the recommended configuration's window**: replicas paused {:.0}% of the time, \
         runs of {} s of arrivals; optimal p99 + 10% budget over each window against the best \
         of fixed 0.5-40 ms with the same budget on the same run (p99, and the ratio)\n\n",
        F10_PAUSED * 100.0,
        RUNS.map(|secs| secs.to_string()).join(", ")
    );
    let loads = PAUSED_LOADS.map(|load| format!("{:>21}", format!("{:.0}% load", load * 100.0)));
    out += &format!("| run   | window           | {} |\n", loads.join(" | "));
    out += &format!(
        "|-------|------------------|{}|\n",
        ["-----------------------"; 3].join("|")
    );
    for runs in levels.chunks(PAUSED_LOADS.len()) {
        let run = runs[0].run.as_secs();
        for (at, window) in WINDOWS.iter().enumerate() {
            let cells = runs.iter().map(|level| {
                let p99 = ms_text(level.learnt[at].percentile(0.99));
                format!("{:>21}", format!("{p99} ({:.2}x)", level.ratio(at)))
            });
            let label = format!("{window} s");
            out += &format!(
                "| {:>3} s | {label:<16} | {} |\n",
                run,
                cells.collect::<Vec<_>>().join(" | ")
            );
        }
        let best = runs
            .iter()
            .map(|level| format!("{:>21}", level.best.p99_at_swept_delay()));
        out += &format!(
            "| {:>3} s | best fixed delay | {} |\n",
            run,
            best.collect::<Vec<_>>().join(" | ")
        );
    }
    out
}
