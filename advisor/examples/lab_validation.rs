//! The advisor against the tail-latency lab: for each workload, the unhedged run's
//! latencies (with when each call was made) are written to a CSV file and read back by
//! the advisor, whose predictions at a delay are set beside the lab's measured hedged
//! run at that delay. Prints the table of `docs/advisor.md`; exits 1 if the model's p99
//! is more than 10% off where copies are independent (workload (a)).
//!
//! `cargo run --release -p hedging-advisor --example lab_validation [DIR]` (the files go
//! to DIR, by default the system's temporary directory).

#[path = "../../examples/lab/mod.rs"]
mod lab;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use hedging_advisor::advice::{advise, Row, Settings};
use hedging_advisor::read::{read, ReadOptions};
use lab::{Cluster, Config, Delay, Scheme, Workload};

/// What the lab measured for one hedged run.
struct Measured {
    p99: Duration,
    extra: f64,
}

/// One workload: its unhedged calls, and a way to run it hedged.
struct Case {
    name: &'static str,
    independent: bool,
    /// (made at, latency) of every unhedged call.
    calls: Vec<(Duration, Duration)>,
    run: Box<dyn Fn(Duration, bool) -> Measured>,
    /// The lab's own delay for the workload, and what it is: the fixed rows' delay, or
    /// the best fixed delay in hindsight.
    lab_delay: (Duration, &'static str),
}

fn stalls() -> Case {
    workload_case(0, "(a) 2% of copies stall 10-100x", true)
}

fn brownout() -> Case {
    workload_case(3, "(d) brownout: every copy 10x slower for 3 s", false)
}

/// The lab's workload `index` of (a)-(d): its unhedged calls, and its hedged runs at any
/// fixed delay, with or without the budget.
fn workload_case(index: usize, name: &'static str, independent: bool) -> Case {
    let workload = Workload::all(1)[index];
    let unhedged = lab::simulate(
        &workload,
        Config {
            delay: Delay::Off,
            budget: false,
        },
    );
    let calls = (0..workload.calls)
        .map(|call| (workload.arrival(call), unhedged.latencies[call]))
        .collect();
    Case {
        name,
        independent,
        calls,
        run: Box::new(move |delay, budget| {
            let run = lab::simulate(
                &workload,
                Config {
                    delay: Delay::Fixed(delay),
                    budget,
                },
            );
            Measured {
                p99: run.percentile(0.99),
                extra: run.extra_ratio(),
            }
        }),
        lab_delay: (workload.hindsight_delay(0.95), "lab's p95"),
    }
}

fn paused() -> Case {
    let cluster = Cluster::paused_at(0.3);
    let lab_delay = (cluster.unloaded(0.95), "lab's p95");
    queue_case(cluster, "(f) 8 replicas that pause, 30% load", lab_delay)
}

/// (f10) at 30% load: each replica paused a tenth of the time, its queue stalled behind
/// the pause. A hedge that wins takes its original out of that queue, so the calls behind
/// it wait less: the latencies recorded unhedged hold a backlog a hedged run does not. The
/// lab's delay is the best of its swept fixed delays with the budget, in hindsight.
fn paused_tenth() -> Case {
    let cluster = Cluster::paused_share(lab::F10_PAUSED, 0.3);
    // The lab's own comparator: its swept rows, and the best of them as the line takes it.
    let swept = lab::run_levels(vec![cluster], &lab::swept(), false);
    let best = swept[0]
        .best_fixed()
        .expect("the swept delays")
        .swept_delay();
    let name = "(f10) 8 replicas paused a tenth of the time, 30% load";
    queue_case(cluster, name, (best, "best fixed"))
}

/// A cluster of queueing replicas: its unhedged calls, and its hedged runs at any fixed
/// delay, with or without the budget.
fn queue_case(cluster: Cluster, name: &'static str, lab_delay: (Duration, &'static str)) -> Case {
    let unhedged = lab::simulate_queue(&cluster, Scheme::Off, false);
    let calls = cluster
        .arrivals()
        .into_iter()
        .zip(unhedged.latencies.iter().copied())
        .collect();
    Case {
        name,
        independent: false,
        calls,
        run: Box::new(move |delay, budget| {
            let scheme = if budget {
                Scheme::FixedBudget(delay)
            } else {
                Scheme::Fixed(delay)
            };
            let run = lab::simulate_queue(&cluster, scheme, false);
            Measured {
                p99: run.percentile(0.99),
                extra: run.extra_ratio(),
            }
        }),
        lab_delay,
    }
}

fn ms(latency: Duration) -> String {
    format!("{:.2}", latency.as_secs_f64() * 1e3)
}

fn gap(predicted: Duration, measured: Duration) -> f64 {
    predicted.as_secs_f64() / measured.as_secs_f64() - 1.0
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let mut table = String::from(
        "| workload | delay | budget | model p99 | replay p99 | measured p99 | model gap | replay gap | model extra | measured extra |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut held = true;
    for case in [stalls(), brownout(), paused(), paused_tenth()] {
        let tag = &case.name[1..case.name.find(')').unwrap_or(2)];
        let path = dir.join(format!("advisor-lab-{tag}.csv"));
        let mut csv = String::from("timestamp,latency\n");
        for (at, latency) in &case.calls {
            let _ = writeln!(csv, "{}ns,{}ns", at.as_nanos(), latency.as_nanos());
        }
        std::fs::write(&path, csv).expect("the unhedged latencies are written");
        let file = std::fs::File::open(&path).expect("and read back");
        let (latencies, _) = read(file, &ReadOptions::default()).expect("the advisor reads them");
        for budget in [false, true] {
            let mut settings = Settings {
                budget: budget.then_some(lab::BUDGET_RATIO),
                ..Settings::default()
            };
            let recommended = advise(&latencies, &settings)
                .expect("latencies")
                .recommended
                .delay;
            let (lab_delay, lab_label) = case.lab_delay;
            settings.delays = vec![lab_delay, recommended];
            let advice = advise(&latencies, &settings).expect("latencies");
            for row in &advice.rows {
                let Row {
                    delay,
                    predicted,
                    replayed,
                    extra,
                    ..
                } = row;
                let measured = (case.run)(*delay, budget);
                let predicted_p99 = predicted.p99.unwrap_or(Duration::MAX);
                let replay_p99 = replayed
                    .as_ref()
                    .map_or(Duration::ZERO, |replay| replay.p99);
                let model_gap = gap(predicted_p99, measured.p99);
                if case.independent && model_gap.abs() > 0.10 {
                    held = false;
                }
                let which = if *delay == recommended {
                    "advised"
                } else {
                    lab_label
                };
                let _ = writeln!(
                    table,
                    "| {} | {} ms ({which}) | {} | {} | {} | {} | {:+.0}% | {:+.0}% | {:.1}% | {:.1}% |",
                    case.name,
                    ms(*delay),
                    if budget { "10%" } else { "none" },
                    ms(predicted_p99),
                    ms(replay_p99),
                    ms(measured.p99),
                    model_gap * 100.0,
                    gap(replay_p99, measured.p99) * 100.0,
                    extra * 100.0,
                    measured.extra * 100.0,
                );
            }
        }
    }
    print!("{table}");
    if !held {
        eprintln!("the model's p99 is more than 10% off the lab's where copies are independent");
        std::process::exit(1);
    }
}
