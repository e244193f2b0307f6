//! The lab's workloads of replicas paused a tenth and a fifth of the time, at 10-50% load:
//! the lines the demo holds on them, asserted on the same deterministic figures, and the
//! sweep of fixed delays the line against the best fixed delay reads.

#[path = "../../examples/lab/mod.rs"]
mod lab;

use std::sync::OnceLock;
use std::time::Duration;

use lab::{QueueReport, Scheme};

/// Both workloads, run once for every test.
fn reports() -> &'static [QueueReport; 2] {
    static REPORTS: OnceLock<[QueueReport; 2]> = OnceLock::new();
    REPORTS.get_or_init(|| [0.10, 0.20].map(lab::run_paused_share))
}

#[test]
fn paused_replicas_the_recommended_configuration_is_never_worse_than_unhedged() {
    for report in reports() {
        assert_eq!(report.levels.len(), lab::PAUSED_LOADS.len());
        for level in &report.levels {
            let (recommended, unhedged) = (level.recommended(), level.unhedged());
            for quantile in [0.5, 0.99] {
                assert!(
                    recommended.percentile(quantile) <= unhedged.percentile(quantile).mul_f64(1.05),
                    "({}) p{} at {}: {:?} vs {:?}",
                    report.key,
                    quantile * 100.0,
                    level.cluster.utilisation,
                    recommended.percentile(quantile),
                    unhedged.percentile(quantile)
                );
            }
        }
        assert!(
            report.checks.iter().all(|check| check.holds),
            "{:?}",
            report.checks
        );
    }
}

#[test]
fn paused_replicas_pause_the_share_of_time_their_workload_names() {
    for (report, share) in reports().iter().zip([0.10, 0.20]) {
        let cluster = report.levels[0].cluster;
        let paused = paused_between(&cluster, Duration::ZERO, Duration::from_secs(30));
        assert!(
            (paused - share).abs() < 0.03,
            "({}) {paused:.3}",
            report.key
        );
    }
}

#[test]
fn paused_replicas_a_longer_run_has_as_many_calls_and_pauses_to_its_end() {
    // `tail_latency -- --windows` runs (f10) for up to 240 s: the pauses must not stop
    // after the 30 s run's horizon.
    let short = lab::Cluster::paused_share(0.10, 0.1);
    let long = short.lasting(Duration::from_secs(240));
    assert_eq!(
        long.calls / 8,
        short.calls,
        "the same rate, eight times as long"
    );
    let last = paused_between(&long, Duration::from_secs(210), Duration::from_secs(240));
    assert!((last - 0.10).abs() < 0.03, "{last:.3}");
}

/// The share of `from..to` the cluster's replicas spent paused.
fn paused_between(cluster: &lab::Cluster, from: Duration, to: Duration) -> f64 {
    let paused: f64 = (0..cluster.servers)
        .map(|server| {
            cluster
                .pauses(server)
                .iter()
                .filter(|(start, end)| *start < to && *end > from)
                .map(|(start, end)| (*end.min(&to) - *start.max(&from)).as_secs_f64())
                .sum::<f64>()
        })
        .sum();
    paused / (cluster.servers as f64 * (to - from).as_secs_f64())
}

#[test]
fn paused_replicas_the_best_fixed_delay_is_taken_from_every_swept_delay_up_to_half_load() {
    for report in reports() {
        for level in &report.levels {
            let swept: Vec<&lab::QueueRun> = level
                .runs
                .iter()
                .filter(|run| matches!(run.scheme, Scheme::FixedBudget(_)))
                .collect();
            assert_eq!(swept.len(), lab::SWEPT_DELAYS_US.len());
            let best = level.best_fixed().expect("swept");
            assert!(swept
                .iter()
                .all(|run| run.percentile(0.99) >= best.percentile(0.99)));
            // A budget is a budget: no swept row hedges much more than its ratio.
            assert!(swept
                .iter()
                .all(|run| run.extra_ratio() <= lab::BUDGET_RATIO + 0.01));
        }
        // The line against it is measured on every load (it may still be OPEN).
        let line = &report.targets[0];
        assert_eq!(line.measured.matches("extra, delay at the end").count(), 3);
    }
}

#[test]
fn paused_replicas_seed_by_seed_the_one_delay_is_the_least_geometric_mean_not_the_least_sum() {
    // Three seeds at one load: the first swept delay is 10, 10 and 50 ms, the second 20 ms
    // on each, the rest 100 ms. The sum prefers the second (60 < 70), one seed's long tail
    // deciding; the geometric mean the first (17.1 < 20), the least mean ratio to each
    // run's own best.
    let ms = Duration::from_millis;
    let runs: Vec<lab::SeedRun> = [(1, 10), (2, 10), (3, 50)]
        .into_iter()
        .map(|(seed, first)| seed_run(seed, lab::PAUSED_LOADS[0], first))
        .collect();
    let at_one_load: Vec<&lab::SeedRun> = runs.iter().collect();
    assert_eq!(lab::one_delay(&at_one_load), 0);
    assert_eq!(
        runs.iter().map(lab::SeedRun::best).collect::<Vec<_>>(),
        [ms(10), ms(10), ms(20)]
    );
}

#[test]
fn paused_replicas_seed_by_seed_the_table_holds_each_ratio_and_their_summaries() {
    // The same three seeds at every load, as `run_paused_seeds` returns them.
    let runs: Vec<lab::SeedRun> = [(1, 10), (2, 10), (3, 50)]
        .into_iter()
        .flat_map(|(seed, first)| lab::PAUSED_LOADS.map(|load| seed_run(seed, load, first)))
        .collect();
    let table = lab::paused_seeds_table(&runs);
    assert!(
        table.contains("| 10%: optimal | 10%: fixed 0.50 ms |"),
        "{table}"
    );
    // Seed by seed: 30 ms against each run's best (10, 10, 20 ms), and the one delay's
    // 10, 10, 50 ms against it; then the geometric mean and the worst of each column.
    for row in [
        "| 1 | 3.00x | 1.00x |",
        "| 3 | 1.50x | 2.50x |",
        "| geometric mean | 2.38x | 1.36x |",
        "| worst | 3.00x | 2.50x |",
    ] {
        assert!(table.contains(row), "{row} in {table}");
    }
}

/// A run of `seed` at `load` whose recommended row took 30 ms and whose swept delays took
/// `first` ms, 20 ms, then 100 ms each.
fn seed_run(seed: u64, load: f64, first: u64) -> lab::SeedRun {
    let ms = Duration::from_millis;
    let mut swept = vec![ms(100); lab::SWEPT_DELAYS_US.len()];
    swept[0] = ms(first);
    swept[1] = ms(20);
    lab::SeedRun {
        seed,
        load,
        recommended: ms(30),
        swept,
    }
}

#[test]
fn paused_replicas_a_held_start_hedges_at_its_first_delay_before_its_time_and_the_other_after() {
    // Three seconds of (f10) at 10% load: a held start is the fixed delay it holds, and
    // from its time on the one it reaches, call for call.
    let cluster = lab::Cluster::paused_share(lab::F10_PAUSED, 0.1).lasting(Duration::from_secs(3));
    let (first, then) = (Duration::from_millis(20), Duration::from_millis(8));
    let latencies = |scheme| lab::simulate_queue(&cluster, scheme, false).latencies;
    let held = |until| lab::Scheme::HeldStart { first, until, then };
    let at_first = latencies(Scheme::FixedBudget(first));
    let at_then = latencies(Scheme::FixedBudget(then));
    assert_ne!(at_first, at_then);
    assert_eq!(latencies(held(Duration::ZERO)), at_then);
    assert_eq!(latencies(held(Duration::from_secs(10))), at_first);
    let switched = latencies(held(Duration::from_secs(1)));
    assert_ne!(switched, at_first);
    assert_ne!(switched, at_then);
}

#[test]
fn paused_replicas_the_first_second_costs_the_line_before_any_delay_has_learnt() {
    let levels = lab::run_start();
    assert_eq!(levels.len(), lab::PAUSED_LOADS.len());
    let table = lab::start_table(&levels);
    let rows = lab::FIRST_DELAYS.len() * lab::HELD_FOR.len();
    assert_eq!(table.matches(" s | ").count(), rows, "{table}");
    for level in &levels {
        assert_eq!(level.held.len(), rows);
        for (at, held) in level.held.iter().enumerate() {
            // A first delay that is the best fixed delay itself holds the run to it.
            let first = lab::FIRST_DELAYS[at / lab::HELD_FOR.len()];
            if first == level.best.swept_delay() {
                assert_eq!(held.latencies, level.best.latencies);
            }
        }
    }
    // At 10% load 0.6 s at the README's first delay, then the best delay in hindsight,
    // is already past the line's 1.1x: what the docs say of (f10).
    let (ten, six_tenths) = (&levels[0], &levels[0].held[1]);
    assert_eq!(lab::HELD_FOR[1], Duration::from_millis(600));
    assert!(ten.ratio(six_tenths) > 1.1, "{table}");
}
