//! The tail-latency lab: what hedging does to p50/p99/p99.9 on four simulated workloads,
//! with a fixed delay and an adaptive one, with and without a 10% budget, beside the ideal
//! model (the same samples, zero overhead); on two clusters of queueing replicas swept
//! from 10% to 90% load, where extra copies are real load and tied requests join the
//! rows; on one client over two backends, with a delay learnt per host; and on slowness
//! the request carries, where `min_win_rate` withholds the hedges that cannot win.
//!
//! ```sh
//! cargo run --release --example tail_latency                          # simulated, deterministic
//! cargo run --release --example tail_latency --features async-io -- --real  # (a) on smol, real clock
//! cargo run --release --example tail_latency -- --seeds 12            # (e)'s tied line, seed by seed
//! cargo run --release --example tail_latency -- --windows             # (f10) over longer windows
//! cargo run --release --example tail_latency -- --paused-seeds 8      # (f10), seed by seed
//! cargo run --release --example tail_latency -- --start               # (f10)'s first second
//! ```
//!
//! The default run drives every call on `ManualTimer` (virtual time), so its figures are
//! the same on every machine; `lab/tests/lab.rs` asserts its acceptance lines. It writes the
//! latency CDFs to `target/tail_latency.svg`.

#[path = "lab/mod.rs"]
mod lab;

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|arg| arg == "--real") {
        real::run();
        return;
    }
    if let Some(at) = args.iter().position(|arg| arg == "--seeds") {
        let seeds = seed_count(&args, at, "--seeds");
        print!(
            "{}",
            lab::tied_seed_table(&lab::run_seeds(lab::TIED_LOAD, 1..=seeds))
        );
        return;
    }
    if let Some(at) = args.iter().position(|arg| arg == "--paused-seeds") {
        let seeds = seed_count(&args, at, "--paused-seeds");
        print!(
            "{}",
            lab::paused_seeds_table(&lab::run_paused_seeds(1..=seeds))
        );
        return;
    }
    if args.iter().any(|arg| arg == "--start") {
        print!("{}", lab::start_table(&lab::run_start()));
        return;
    }
    if args.iter().any(|arg| arg == "--windows") {
        print!("{}", lab::windows_table(&lab::run_windows()));
        return;
    }
    let started = Instant::now();
    let reports: Vec<lab::Report> = lab::Workload::all(1).iter().map(lab::run).collect();
    for report in &reports {
        println!("{}", lab::table(report));
    }
    let queueing = lab::run_queueing();
    println!("{}", lab::queue_table(&queueing, &queueing.levels, false));
    let aborted = lab::run_aborted(queueing.p95);
    println!("{}", lab::queue_table(&queueing, &aborted, true));
    let paused = lab::run_paused();
    println!("{}", lab::queue_table(&paused, &paused.levels, false));
    let paused_more = [0.10, 0.20].map(lab::run_paused_share);
    for report in &paused_more {
        println!("{}", lab::queue_table(report, &report.levels, false));
    }
    let two_hosts = lab::run_two_hosts();
    println!("{}", lab::keyed_table(&two_hosts));
    let (heavy, switch) = (lab::run_heavy(), lab::run_switch());
    println!("{}", lab::heavy_table(&heavy));
    println!("{}", lab::heavy_table(&switch));
    let withheld = lab::run_withheld(&reports, &[&queueing, &paused]);
    println!("{}", lab::withheld_table(&withheld));
    println!("Acceptance:");
    let mut all_hold = true;
    let checks = reports.iter().map(|report| &report.checks);
    let keyed = two_hosts.iter().map(|report| &report.checks);
    for checks in checks
        .chain([&queueing.checks, &paused.checks])
        .chain(paused_more.iter().map(|report| &report.checks))
        .chain(keyed)
        .chain([&heavy.checks, &switch.checks, &withheld.checks])
    {
        print!("{}", lab::acceptance(checks));
        all_hold &= checks.iter().all(|check| check.holds);
    }
    println!("\nTargets (lines of work under way: measured, OPEN until they hold, not yet held by the demo):");
    for report in &reports {
        print!("{}", lab::targets(&[lab::run_hindsight(report).target]));
    }
    for report in [&queueing, &paused].into_iter().chain(&paused_more) {
        print!("{}", lab::targets(&report.targets));
    }
    print!("{}", lab::targets(&lab::two_hosts_hindsight()));
    for heavy in [lab::Heavy::requests(), lab::Heavy::switching()] {
        print!("{}", lab::targets(&[lab::heavy_hindsight(heavy)]));
    }
    let svg = lab::svg(&reports, &queueing);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tail_latency.svg");
    match std::fs::create_dir_all(path.parent().expect("target/ has a parent"))
        .and_then(|()| std::fs::write(&path, svg))
    {
        Ok(()) => println!("\nLatency CDFs: target/tail_latency.svg"),
        Err(error) => eprintln!("\ncould not write target/tail_latency.svg: {error}"),
    }
    println!(
        "Simulated in {:.1} s of real time.",
        started.elapsed().as_secs_f64()
    );
    if !all_hold {
        std::process::exit(1);
    }
}

/// The count of seeds `flag` (at `at` in `args`) takes, or an exit with how to give it.
fn seed_count(args: &[String], at: usize, flag: &str) -> u64 {
    args.get(at + 1)
        .and_then(|count| count.parse().ok())
        .filter(|&count| count > 0)
        .unwrap_or_else(|| {
            eprintln!("{flag} takes a count of seeds, e.g. {flag} 8");
            std::process::exit(2)
        })
}

/// Workload (a) on smol with `AsyncIoTimer` and the real clock, beside the same workload
/// simulated: the simulation's figures should hold within 10%.
#[cfg(feature = "async-io")]
mod real {
    use std::time::{Duration, Instant};

    use hedging::timer::AsyncIoTimer;
    use hedging::{Attempt, Hedgeable};

    use crate::lab::{self, Config, Delay};

    /// Latencies ×20 (a 20 ms median): timers wake up to about a millisecond late, which
    /// would swamp a 1 ms median.
    const SCALE: u32 = 20;
    const CALLS: usize = 20_000;

    pub(crate) fn run() {
        let workload = lab::Workload::stalls(SCALE, CALLS);
        let p95 = workload.hindsight_delay(0.95);
        println!(
            "(a) on smol with AsyncIoTimer and the real clock: {CALLS} calls, {} calls/s, latencies x{SCALE}",
            lab::RATE
        );
        println!(
            "| {:<27} | {:>24} | {:>24} | {:>24} | {:>17} |",
            "configuration",
            "p50 real / sim",
            "p99 real / sim",
            "p99.9 real / sim",
            "extra real / sim"
        );
        println!(
            "|{:-<29}|{:->26}|{:->26}|{:->26}|{:->19}|",
            "", "", "", "", ""
        );
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
                delay: Delay::Adaptive(lab::QUANTILE),
                budget: true,
            },
        ];
        let mut within = true;
        for config in configs {
            let simulated = lab::simulate(&workload, config);
            let real = run_real(&workload, config);
            let mut cells = Vec::new();
            for quantile in [0.5, 0.99, 0.999] {
                let (real_at, sim_at) = (real.percentile(quantile), simulated.percentile(quantile));
                let ratio = real_at.as_secs_f64() / sim_at.as_secs_f64();
                if quantile < 0.999 {
                    within &= (ratio - 1.0).abs() <= 0.10;
                }
                cells.push(format!(
                    "{:.1} / {:.1} ms {:+.0}%",
                    real_at.as_secs_f64() * 1e3,
                    sim_at.as_secs_f64() * 1e3,
                    (ratio - 1.0) * 100.0
                ));
            }
            println!(
                "| {:<27} | {:>24} | {:>24} | {:>24} | {:>7.2}% / {:.2}% |",
                config.label(),
                cells[0],
                cells[1],
                cells[2],
                real.extra_ratio() * 100.0,
                simulated.extra_ratio() * 100.0
            );
        }
        let verdict = if within { "PASS" } else { "FAIL" };
        println!("\n{verdict}  real p50 and p99 within 10% of the simulation in every row");
    }

    /// Runs `config` on `workload` in real time: calls arrive on schedule as smol tasks on
    /// one thread, each copy sleeps its latency on the async-io reactor.
    fn run_real(workload: &lab::Workload, config: Config) -> lab::Run {
        let policy = config.policy(AsyncIoTimer::new());
        let executor = smol::LocalExecutor::new();
        let origin = Instant::now();
        let tasks: Vec<_> = (0..workload.calls)
            .map(|call| {
                let (policy, workload) = (policy.clone(), *workload);
                executor.spawn(async move {
                    smol::Timer::at(origin + workload.arrival(call)).await;
                    let arrived = Instant::now();
                    let factory = |attempt: Attempt| {
                        let latency = workload.latency(call, attempt.index(), arrived - origin);
                        async move {
                            smol::Timer::after(latency).await;
                            Ok::<(), ()>(())
                        }
                    };
                    factory
                        .hedged(&policy)
                        .await
                        .expect("copies always succeed");
                    arrived.elapsed()
                })
            })
            .collect();
        let latencies: Vec<Duration> = smol::block_on(executor.run(async {
            let mut latencies = Vec::with_capacity(tasks.len());
            for task in tasks {
                latencies.push(task.await);
            }
            latencies
        }));
        let stats = policy.stats();
        lab::Run {
            config,
            latencies,
            calls: stats.calls,
            extra_copies: stats.hedges,
            budget_denied: stats.budget_denied,
            withheld: stats.withheld,
            per_second: Vec::new(),
        }
    }
}

#[cfg(not(feature = "async-io"))]
mod real {
    pub(crate) fn run() {
        eprintln!("--real runs on smol's reactor: rerun with `--features async-io`");
        std::process::exit(2);
    }
}
