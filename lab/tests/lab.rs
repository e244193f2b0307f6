//! The tail-latency lab's acceptance lines, asserted on the same deterministic figures
//! `cargo run --release --example tail_latency` prints.

#[path = "../../examples/lab/mod.rs"]
mod lab;

use std::sync::OnceLock;

use lab::{Cluster, Config, Delay, Kind, Level, Scheme, Workload};

fn workload(key: char) -> Workload {
    *Workload::all(1)
        .iter()
        .find(|workload| workload.key == key)
        .expect("a lab workload")
}

/// Workloads (a)-(d), each run once for every test that reads it.
fn reports() -> &'static [lab::Report] {
    static REPORTS: OnceLock<Vec<lab::Report>> = OnceLock::new();
    REPORTS.get_or_init(|| Workload::all(1).iter().map(lab::run).collect())
}

fn report(key: char) -> &'static lab::Report {
    reports()
        .iter()
        .find(|report| report.workload.key == key)
        .expect("a lab workload")
}

fn assert_checks_hold(report: &lab::Report) {
    assert!(
        !report.checks.is_empty(),
        "workload ({}) has acceptance lines",
        report.workload.key
    );
    for check in &report.checks {
        assert!(check.holds, "{}: {}", check.claim, check.measured);
    }
}

#[test]
fn a_stalls_p99_is_10x_lower_for_at_most_5_percent_extra_copies() {
    let report = report('a');
    assert_checks_hold(report);
    let unhedged = report.unhedged().percentile(0.99);
    for hedged in [
        report.fixed(false),
        report.fixed(true),
        report.adaptive(false),
        report.adaptive(true),
    ] {
        let p99 = hedged.percentile(0.99);
        assert!(
            unhedged >= p99 * 10,
            "{}: {p99:?} vs {unhedged:?}",
            hedged.config.label()
        );
        assert!(
            hedged.extra_ratio() <= 0.05 + 10.0 / hedged.calls as f64,
            "{}",
            hedged.config.label()
        );
    }
    // The fixed p95 delay sends exactly the calls slower than it: 5% of them at most.
    assert!(report.fixed(false).extra_ratio() <= 0.05);
}

#[test]
fn a_fixed_delay_costs_nothing_over_the_ideal_model() {
    let workload = workload('a');
    let p95 = workload.hindsight_delay(0.95);
    let run = lab::simulate(
        &workload,
        Config {
            delay: Delay::Fixed(p95),
            budget: false,
        },
    );
    // Virtual time: every hedge starts exactly at its due time, call by call.
    assert_eq!(run.latencies, workload.ideal(Some(p95)));
    let ideal_extra = (workload.ideal_extra(p95) * workload.calls as f64).round() as u64;
    assert_eq!(run.extra_copies, ideal_extra);
}

/// The check of `checks` whose claim contains `says`.
fn check<'c>(checks: &'c [lab::Check], says: &str) -> &'c lab::Check {
    checks
        .iter()
        .find(|check| check.claim.contains(says))
        .unwrap_or_else(|| panic!("no acceptance line says {says:?}"))
}

#[test]
fn a_and_c_the_budget_costs_no_tail() {
    for key in ['a', 'c'] {
        let report = report(key);
        let (budgeted, unbudgeted) = (report.adaptive(true), report.adaptive(false));
        for (quantile, most) in [(0.99, 1.1), (0.999, 1.5)] {
            let (with, without) = (
                budgeted.percentile(quantile),
                unbudgeted.percentile(quantile),
            );
            assert!(
                with.as_secs_f64() <= without.as_secs_f64() * most,
                "({key}) p{}: {with:?} vs {without:?}",
                quantile * 100.0
            );
        }
        assert!(check(&report.checks, "costs no tail").holds);
    }
}

#[test]
fn the_simulation_is_deterministic() {
    // Shifting medians: the budget refuses part of the adaptive delay's catching up.
    let workload = Workload {
        calls: 24_000,
        ..workload('c')
    };
    let config = Config {
        delay: Delay::Adaptive(lab::QUANTILE),
        budget: true,
    };
    let (first, second) = (
        lab::simulate(&workload, config),
        lab::simulate(&workload, config),
    );
    assert_eq!(first.latencies, second.latencies);
    assert_eq!(
        (first.extra_copies, first.budget_denied),
        (second.extra_copies, second.budget_denied)
    );
    assert!(first.budget_denied > 0, "the budget is exercised");
}

#[test]
fn c_shifting_adaptive_p99_is_within_10_percent_of_the_best_fixed_delay() {
    let report = report('c');
    assert_checks_hold(report);
    let best = report
        .best_fixed
        .as_ref()
        .expect("the hindsight search ran");
    let adaptive = report.adaptive(false);
    assert!(
        best.extra_ratio() <= adaptive.extra_ratio() + 1e-9,
        "the best fixed delay costs no more"
    );
    assert!(adaptive.percentile(0.99).as_secs_f64() <= best.percentile(0.99).as_secs_f64() * 1.10);
}

#[test]
fn d_brownout_the_budget_bounds_extra_copies_over_the_brownout_and_in_every_second() {
    let workload = workload('d');
    let Kind::Brownout { from, until } = workload.kind else {
        unreachable!("(d) is the brownout")
    };
    let report = report('d');
    assert_checks_hold(report);
    for budgeted in [report.fixed(true), report.adaptive(true)] {
        let (mut all_calls, mut all_extra) = (0, 0);
        for second in from.as_secs()..until.as_secs() {
            let (calls, extra) = budgeted.per_second[second as usize];
            assert!(
                extra as f64 <= calls as f64 * 2.0 * lab::BUDGET_RATIO,
                "{} second {second}: {extra} extra for {calls} calls",
                budgeted.config.label()
            );
            (all_calls, all_extra) = (all_calls + calls, all_extra + extra);
        }
        assert!(
            all_extra as f64 <= all_calls as f64 * (lab::BUDGET_RATIO + 0.005),
            "{}: {all_extra} extra for {all_calls} calls",
            budgeted.config.label()
        );
    }
    // Without the budget, the fixed delay tuned before the brownout hedges most calls.
    let amplified = report.fixed(false).max_extra_per_second(from, until);
    assert!(amplified > 0.5, "{amplified}");
    assert!(report.fixed(true).budget_denied > 0);
}

/// Workload (e), the lab's longest: every test reads the one run.
fn queueing() -> &'static lab::QueueReport {
    static REPORT: OnceLock<lab::QueueReport> = OnceLock::new();
    REPORT.get_or_init(lab::run_queueing)
}

fn level(utilisation: f64) -> &'static Level {
    at(queueing(), utilisation)
}

fn at(report: &lab::QueueReport, utilisation: f64) -> &Level {
    report
        .levels
        .iter()
        .find(|level| (level.cluster.utilisation - utilisation).abs() < 1e-9)
        .expect("a swept load")
}

/// Workload (f), correlated slowness: every test reads the one run.
fn paused() -> &'static lab::QueueReport {
    static REPORT: OnceLock<lab::QueueReport> = OnceLock::new();
    REPORT.get_or_init(lab::run_paused)
}

#[test]
fn f_the_recommended_configuration_is_never_worse_than_unhedged() {
    never_worse(paused());
}

#[test]
fn f_the_recommended_configuration_cuts_p99_5x_and_p999_3x_at_light_load() {
    cuts_at_light_load(paused());
}

#[test]
fn f_the_budget_costs_no_tail_up_to_half_load() {
    budget_costs_no_tail(paused());
}

#[test]
fn f_a_pause_stalls_what_is_queued_behind_it() {
    // Unhedged, the slow calls are those a pause caught: more than the share of time the
    // replicas are paused, since what queued behind a pause waits for it too.
    let cluster = lab::Cluster {
        calls: 20_000,
        ..lab::Cluster::paused_at(0.5)
    };
    let unhedged = lab::simulate_queue(&cluster, Scheme::Off, false);
    let paused: f64 = (0..cluster.servers)
        .map(|server| {
            cluster
                .pauses(server)
                .iter()
                .map(|(start, end)| (*end - *start).as_secs_f64())
                .sum::<f64>()
        })
        .sum::<f64>()
        / (cluster.servers as f64 * 60.0); // the pauses drawn cover 60 s
    let slow = unhedged
        .latencies
        .iter()
        .filter(|latency| **latency > std::time::Duration::from_millis(10))
        .count() as f64
        / unhedged.latencies.len() as f64;
    assert!(paused > 0.01 && paused < 0.04, "{paused}");
    assert!(
        slow > paused,
        "{slow} of calls slow, {paused} of the time paused"
    );
}

fn p(run: &lab::QueueRun, quantile: f64) -> f64 {
    run.percentile(quantile).as_secs_f64()
}

#[test]
fn e_the_recommended_configuration_is_never_worse_than_unhedged() {
    never_worse(queueing());
}

/// The recommended configuration's p50 and p99 are at most 1.05x unhedged at every load.
fn never_worse(report: &lab::QueueReport) {
    assert_eq!(report.levels.len(), lab::UTILISATIONS.len());
    for level in &report.levels {
        let (recommended, unhedged) = (level.recommended(), level.unhedged());
        for quantile in [0.5, 0.99] {
            assert!(
                p(recommended, quantile) <= p(unhedged, quantile) * 1.05,
                "p{} at {}: {:?} vs {:?}",
                quantile * 100.0,
                level.cluster.utilisation,
                recommended.percentile(quantile),
                unhedged.percentile(quantile)
            );
        }
    }
    let line = check(&report.checks, "at every load");
    assert!(line.holds, "{}", line.measured);
}

#[test]
fn e_the_recommended_configuration_cuts_p99_5x_and_p999_3x_at_light_load() {
    cuts_at_light_load(queueing());
}

fn cuts_at_light_load(report: &lab::QueueReport) {
    for utilisation in [0.1, 0.3] {
        let level = at(report, utilisation);
        let (recommended, unhedged) = (level.recommended(), level.unhedged());
        for (quantile, cut) in [(0.99, 5.0), (0.999, 3.0)] {
            assert!(
                p(unhedged, quantile) >= p(recommended, quantile) * cut,
                "{utilisation} p{}: {:?} vs {:?}",
                quantile * 100.0,
                recommended.percentile(quantile),
                unhedged.percentile(quantile)
            );
        }
    }
    let line = check(&report.checks, "lower than unhedged");
    assert!(line.holds, "{}", line.measured);
}

/// The budget costs no tail up to half load: p99 <= 1.1x, p99.9 <= 1.5x the same delay
/// without it.
fn budget_costs_no_tail(report: &lab::QueueReport) {
    for level in report
        .levels
        .iter()
        .filter(|level| level.cluster.utilisation <= 0.5 + 1e-9)
    {
        let (budgeted, unbudgeted) = (level.recommended(), level.unbudgeted());
        for (quantile, most) in [(0.99, 1.1), (0.999, 1.5)] {
            assert!(
                p(budgeted, quantile) <= p(unbudgeted, quantile) * most,
                "{} p{}: {:?} vs {:?}",
                level.cluster.utilisation,
                quantile * 100.0,
                budgeted.percentile(quantile),
                unbudgeted.percentile(quantile)
            );
        }
    }
    let line = check(&report.checks, "costs no tail");
    assert!(line.holds, "{}", line.measured);
}

#[test]
fn e_the_budget_costs_no_tail_up_to_half_load() {
    budget_costs_no_tail(queueing());
}

#[test]
fn e_a_fixed_delay_makes_p99_worse_near_saturation() {
    let report = queueing();
    let worse: Vec<f64> = report
        .levels
        .iter()
        .filter(|level| p(level.fixed(), 0.99) > p(level.unhedged(), 0.99))
        .map(|level| level.cluster.utilisation)
        .collect();
    assert!(!worse.is_empty(), "the fixed delay never lost");
    // It is the extra copies that do it: the cluster works harder than it is asked to.
    let busiest = report.levels.last().expect("loads");
    assert!(busiest.fixed().busy > busiest.unhedged().busy + 0.05);
    let line = check(&report.checks, "above unhedged at some load");
    assert!(line.holds, "{}", line.measured);
}

#[test]
fn e_tied_requests_drop_their_losers_before_service() {
    for level in &queueing().levels {
        let tied = level.run(|scheme| *scheme == Scheme::Tied(queueing().p95));
        // Second copies go out under load, yet almost none is served: the first copy to
        // start takes the call and the other leaves its queue.
        assert!(
            tied.extra_work < 0.02,
            "{}: {}",
            level.cluster.utilisation,
            tied.extra_work
        );
    }
    let busiest = queueing().levels.last().expect("loads");
    assert!(
        busiest
            .run(|scheme| matches!(scheme, Scheme::Tied(delay) if !delay.is_zero()))
            .extra_ratio()
            > 0.2
    );
}

fn tied_pairs(level: &Level) -> &lab::QueueRun {
    level.run(|scheme| matches!(scheme, Scheme::TiedPair(_)))
}

#[test]
fn e_tied_pairs_are_the_hedge_alone_when_no_copy_queues() {
    // At 10% an original almost never waits, so no tie goes out: the tied pairs send the
    // copies the recommended row sends, drawn alike, and end every call alike.
    let level = level(0.1);
    let (pairs, hedged) = (tied_pairs(level), level.recommended());
    assert_eq!(pairs.latencies, hedged.latencies);
    assert_eq!(pairs.extra_copies, hedged.extra_copies);
}

#[test]
fn e_tied_pairs_cut_p99_where_queueing_makes_the_tail() {
    // At 70-90% a call's wait in a queue is much of its tail: the tie takes the shortest
    // queue as soon as the first copy waits, and the hedge still covers a slow service.
    for utilisation in [0.7, 0.8, 0.9] {
        let level = level(utilisation);
        let (pairs, hedged) = (level.tied_pairs(), level.recommended());
        assert!(
            p(pairs, 0.99) <= p(hedged, 0.99) * 0.85,
            "{utilisation}: {:?} vs {:?}",
            pairs.percentile(0.99),
            hedged.percentile(0.99)
        );
        assert!(p(pairs, 0.999) < p(hedged, 0.999), "{utilisation}");
        assert!(p(pairs, 0.99) < p(level.unhedged(), 0.99), "{utilisation}");
    }
    let line = check(&queueing().checks, "tied pairs at 70-90%");
    assert!(line.holds, "{}", line.measured);
}

#[test]
fn e_at_half_load_tied_pairs_pay_a_second_service_more_often() {
    // At 50% the tied pairs reach the lowest p99 of the README's rows (3.32 ms, the
    // recommended row 3.42), but their tie gets a call into service before the hedge goes
    // out, so fewer of their hedges replace an original still queued for free: more
    // calls are served twice, and more service-seconds spent.
    let level = level(lab::TIED_LOAD);
    let (pairs, hedged) = (tied_pairs(level), level.recommended());
    for run in level.readme_rows() {
        assert!(p(pairs, 0.99) <= p(run, 0.99), "{}", run.scheme.label());
    }
    assert!(pairs.served_twice > hedged.served_twice);
    assert!(pairs.extra_seconds() > hedged.extra_seconds());
}

#[test]
fn e_an_aborted_loser_gives_its_worker_back() {
    // A short run at 90%: the fixed delay's losers in service are hiccups more often than
    // not, and aborting them frees their workers.
    let cluster = Cluster {
        calls: 20_000,
        ..Cluster::at(0.9)
    };
    let fixed = Scheme::Fixed(lab::unloaded_p95());
    let served = lab::simulate_queue(&cluster, fixed, false);
    let aborted = lab::simulate_queue(&cluster, fixed, true);
    assert!(served.extra_work > 0.0, "{}", served.extra_work);
    assert!(aborted.extra_work < 0.0, "{}", aborted.extra_work);
    assert!(aborted.percentile(0.99) < served.percentile(0.99));
}

#[test]
fn e_the_queueing_simulation_is_deterministic() {
    let cluster = Cluster {
        calls: 5_000,
        ..Cluster::at(0.7)
    };
    let scheme = Scheme::Recommended { budget: true };
    let (first, second) = (
        lab::simulate_queue(&cluster, scheme, false),
        lab::simulate_queue(&cluster, scheme, false),
    );
    assert_eq!(first.latencies, second.latencies);
    assert_eq!(
        (first.extra_copies, first.extra_work.to_bits()),
        (second.extra_copies, second.extra_work.to_bits())
    );
}

/// Workload (g), one client over two backends: every test reads the one run.
fn two_hosts() -> &'static [lab::TwoHostsReport] {
    static REPORTS: OnceLock<Vec<lab::TwoHostsReport>> = OnceLock::new();
    REPORTS.get_or_init(lab::run_two_hosts)
}

#[test]
fn g_one_policy_keyed_by_host_is_within_1_1x_of_a_policy_per_host() {
    let reports = two_hosts();
    assert_eq!(reports.len(), 2, "the slow host at 50% and 10% of calls");
    for report in reports {
        let share = report.hosts.slow_share;
        for host in 0..2 {
            let (keyed, own) = (
                report.percentile(lab::Routing::Keyed, host, 0.99),
                report.percentile(lab::Routing::PerHost, host, 0.99),
            );
            assert!(
                keyed.as_secs_f64() <= own.as_secs_f64() * 1.1,
                "{share} host {host}: {keyed:?} vs {own:?}"
            );
            let (keyed, own) = (
                report.extra(lab::Routing::Keyed, host),
                report.extra(lab::Routing::PerHost, host),
            );
            assert!(keyed <= own + 0.01, "{share} host {host}: {keyed} vs {own}");
            // Each host hedges about its delay's share, not the mixture's.
            assert!(keyed > 0.03, "{share} host {host}: {keyed}");
        }
        let line = check(&report.checks, "keyed by host");
        assert!(line.holds, "{}", line.measured);
    }
}

#[test]
fn g_one_unkeyed_policy_hedges_the_fast_host_at_the_mixtures_delay() {
    for report in two_hosts() {
        let share = report.hosts.slow_share;
        let p99 = |routing| report.percentile(routing, 0, 0.99).as_secs_f64();
        assert!(
            p99(lab::Routing::OnePolicy) >= p99(lab::Routing::PerHost) * 5.0,
            "{share}: {} vs {}",
            p99(lab::Routing::OnePolicy),
            p99(lab::Routing::PerHost)
        );
        // The mixture's p95 is past the fast host's stalls' start: few of its calls hedge.
        assert!(report.extra(lab::Routing::OnePolicy, 0) < 0.02, "{share}");
        let line = check(&report.checks, "mixture's cost");
        assert!(line.holds, "{}", line.measured);
    }
}

#[test]
fn h_min_win_rate_sends_at_most_1_percent_extra_copies_where_no_hedge_can_win() {
    let report = lab::run_heavy();
    assert_eq!(report.checks.len(), lab::LEARNT.len());
    for config in lab::LEARNT {
        let (with, without) = (report.row(config, true), report.row(config, false));
        let all = |_: usize| true;
        let row = config.label();
        // Without it, the delay hedges its share of calls, all of them in vain.
        assert!(without.calls.extra_of(all) > 0.04, "{row}");
        assert!(with.calls.extra_of(all) <= 0.01, "{row}");
        assert!(with.calls.withheld > 0);
        let (p99, p99_without) = (
            with.calls.percentile_of(0.99, all).as_secs_f64(),
            without.calls.percentile_of(0.99, all).as_secs_f64(),
        );
        assert!(
            p99 <= p99_without * 1.05 && p99_without <= p99 * 1.05,
            "{row}: {p99} vs {p99_without}"
        );
    }
    assert_checks_of(&report.checks);
}

fn assert_checks_of(checks: &[lab::Check]) {
    assert!(!checks.is_empty());
    for check in checks {
        assert!(check.holds, "{}: {}", check.claim, check.measured);
    }
}

#[test]
fn i_after_the_switch_to_per_copy_stalls_min_win_rate_regains_their_p99() {
    let report = lab::run_switch();
    let switch_at = report.heavy.switch_at;
    let (first, second) = (|call| call < switch_at, |call| call >= switch_at);
    for config in lab::LEARNT {
        let (with, without) = (report.row(config, true), report.row(config, false));
        let row = config.label();
        let p99 = with.calls.percentile_of(0.99, second).as_secs_f64();
        let p99_without = without.calls.percentile_of(0.99, second).as_secs_f64();
        assert!(p99 <= p99_without * 1.2, "{row}: {p99} vs {p99_without}");
        // Hedges were withheld in the first half, where none could win.
        assert!(
            with.calls.extra_of(first) < without.calls.extra_of(first) / 2.0,
            "{row}"
        );
    }
    let unhedged = report
        .rows
        .iter()
        .find(|row| row.config.delay == Delay::Off)
        .expect("an unhedged row");
    // The second half's stalls are a tail hedging cuts: 10x at least.
    assert!(
        unhedged.calls.percentile_of(0.99, second).as_secs_f64()
            >= report
                .row(lab::LEARNT[0], true)
                .calls
                .percentile_of(0.99, second)
                .as_secs_f64()
                * 10.0
    );
    assert_checks_of(&report.checks);
}

#[test]
fn every_workload_min_win_rate_moves_p99_at_most_1_05x_and_extra_copies_half_a_point() {
    let withheld = lab::run_withheld(reports(), &[queueing(), paused()]);
    // (a)-(d): two adaptive rows each; (e) and (f): the recommended one at every load.
    assert_eq!(withheld.rows.len(), 4 * 2 + 2 * lab::UTILISATIONS.len());
    for row in &withheld.rows {
        let ratio = row.with.0.as_secs_f64() / row.without.0.as_secs_f64();
        assert!(
            (1.0 / 1.05..=1.05).contains(&ratio),
            "{} {}: {ratio}",
            row.workload,
            row.label
        );
        assert!(
            (row.with.1 - row.without.1).abs() <= 0.005,
            "{} {}: {} vs {}",
            row.workload,
            row.label,
            row.with.1,
            row.without.1
        );
    }
    assert_eq!(withheld.checks.len(), 6, "a line per workload");
    assert_checks_of(&withheld.checks);
}
