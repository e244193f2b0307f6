//! Workload (g): one client over two backends of different speed, a 1 ms one and a 20 ms
//! one, each copy drawn on its own as in (a). One adaptive policy for both, the same
//! policy keyed by host (`adaptive_keys`), and a policy per host, on the same samples.
//! Also the engine of routed runs that (h) and (i) share: calls at [`RATE`], each through
//! one of several policies with a key.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy};

use super::engine::{self, Task};
use super::independent::{draw, rng};
use super::{ms_text, nearest_rank, Check, Config, Delay, MS, QUANTILE, RATE, STALL_RATE};

/// The hosts' medians: the fast host's, then the slow host's.
pub const MEDIANS: [Duration; 2] = [MS, Duration::from_millis(20)];
/// The slow host's shares of calls the lab runs.
pub const SLOW_SHARES: [f64; 2] = [0.5, 0.1];
/// The keys the keyed policy may track: a client in front of a few backends.
pub const KEYS: usize = 16;
/// The most a keyed host's p99 may be over a policy per host's, and the most points of
/// extra copies it may add.
pub const KEYED_COST: (f64, f64) = (1.1, 0.01);

/// What a routed run did, call by call.
#[derive(Clone, Debug)]
pub struct Calls {
    /// Per call, in arrival order.
    pub latencies: Vec<Duration>,
    /// Whether the call started an extra copy.
    pub hedged: Vec<bool>,
    /// Calls whose hedge `min_win_rate` withheld, over every policy.
    pub withheld: u64,
}

impl Calls {
    /// The `quantile` of the latencies of the calls `which` picks.
    pub fn percentile_of(&self, quantile: f64, which: impl Fn(usize) -> bool) -> Duration {
        let mut picked: Vec<Duration> = (0..self.latencies.len())
            .filter(|&call| which(call))
            .map(|call| self.latencies[call])
            .collect();
        picked.sort_unstable();
        nearest_rank(&picked, quantile)
    }

    /// Extra copies per call of the calls `which` picks.
    pub fn extra_of(&self, which: impl Fn(usize) -> bool) -> f64 {
        let (calls, hedged) = (0..self.hedged.len())
            .filter(|&call| which(call))
            .fold((0usize, 0usize), |(calls, hedged), call| {
                (calls + 1, hedged + usize::from(self.hedged[call]))
            });
        hedged as f64 / calls.max(1) as f64
    }
}

/// When call `call` of a routed run arrives: [`RATE`] calls per second.
pub fn arrival(call: usize) -> Duration {
    Duration::from_nanos(call as u64 * 1_000_000_000 / RATE)
}

/// Runs `calls` calls in virtual time: call `call` goes through policy `route(call).0`
/// of those `policies` makes on the run's timer, with key `route(call).1`, and copy `copy`
/// of it takes `latency(call, copy)`.
pub fn simulate_routed(
    calls: usize,
    policies: impl FnOnce(&ManualTimer) -> Vec<Policy<ManualTimer>>,
    route: impl Fn(usize) -> (usize, usize),
    latency: impl Fn(usize, usize) -> Duration + 'static,
) -> Calls {
    let timer = ManualTimer::new();
    let policies = policies(&timer);
    let latency: Rc<dyn Fn(usize, usize) -> Duration> = Rc::new(latency);
    let latencies = Rc::new(RefCell::new(vec![Duration::ZERO; calls]));
    let hedged = Rc::new(RefCell::new(vec![false; calls]));
    let spawn = |call: usize| -> Task {
        let (index, key) = route(call);
        let policy = policies[index].clone();
        let (timer, latencies, hedged, latency) = (
            timer.clone(),
            Rc::clone(&latencies),
            Rc::clone(&hedged),
            Rc::clone(&latency),
        );
        Box::pin(async move {
            let arrived = timer.now();
            let factory = {
                let timer = timer.clone();
                move |attempt: Attempt| {
                    if attempt.is_hedge() {
                        hedged.borrow_mut()[call] = true;
                    }
                    let sleep = timer.sleep(latency(call, attempt.index()));
                    async move {
                        sleep.await;
                        Ok::<(), ()>(())
                    }
                }
            };
            let answer = factory.hedged(&policy).key(&key).await;
            assert_eq!(answer, Ok(()), "simulated copies always succeed");
            latencies.borrow_mut()[call] = timer.now() - arrived;
        })
    };
    engine::drive(&timer, calls, arrival, spawn, Vec::new());
    Calls {
        latencies: latencies.take(),
        hedged: hedged.take(),
        withheld: policies.iter().map(|policy| policy.stats().withheld).sum(),
    }
}

/// (g)'s traffic: which host each call goes to, and how long each copy takes there.
#[derive(Clone, Copy, Debug)]
pub struct TwoHosts {
    /// The share of calls that go to the slow host.
    pub slow_share: f64,
    pub calls: usize,
    pub seed: u64,
}

impl TwoHosts {
    /// (g) with `slow_share` of the calls to the slow host: 40,000 calls, 10 s.
    pub fn at(slow_share: f64) -> TwoHosts {
        TwoHosts {
            slow_share,
            calls: 40_000,
            seed: 7,
        }
    }

    /// The host of call `call`: 0 the fast one, 1 the slow one.
    pub fn host(&self, call: usize) -> usize {
        usize::from(rng(self.seed, call, usize::MAX).f64() < self.slow_share)
    }

    /// Copy `copy` of call `call`: the log-normal body around its host's median, or for
    /// [`STALL_RATE`] of copies a stall of 10–100× it.
    pub fn latency(&self, call: usize, copy: usize) -> Duration {
        draw(
            &mut rng(self.seed, call, copy),
            MEDIANS[self.host(call)],
            STALL_RATE,
        )
    }
}

/// How (g)'s client hedges its two hosts: adaptive p95, a 1 s window, no budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routing {
    /// One policy, one estimate over both hosts.
    OnePolicy,
    /// One policy keyed by host: an estimate per host.
    Keyed,
    /// A policy per host.
    PerHost,
}

impl Routing {
    pub fn label(&self) -> &'static str {
        match self {
            Routing::OnePolicy => "one policy",
            Routing::Keyed => "one policy keyed by host",
            Routing::PerHost => "a policy per host",
        }
    }
}

/// One routing's run on (g).
#[derive(Clone, Debug)]
pub struct HostRun {
    pub routing: Routing,
    pub calls: Calls,
}

/// (g) at one slow share: every routing, and the acceptance lines.
#[derive(Clone, Debug)]
pub struct TwoHostsReport {
    pub hosts: TwoHosts,
    pub runs: Vec<HostRun>,
    pub checks: Vec<Check>,
}

impl TwoHostsReport {
    pub fn run(&self, routing: Routing) -> &HostRun {
        self.runs
            .iter()
            .find(|run| run.routing == routing)
            .expect("every routing has a run")
    }

    /// `host`'s `quantile` under `routing`.
    pub fn percentile(&self, routing: Routing, host: usize, quantile: f64) -> Duration {
        let hosts = self.hosts;
        self.run(routing)
            .calls
            .percentile_of(quantile, |call| hosts.host(call) == host)
    }

    /// `host`'s extra copies per call under `routing`.
    pub fn extra(&self, routing: Routing, host: usize) -> f64 {
        let hosts = self.hosts;
        self.run(routing)
            .calls
            .extra_of(|call| hosts.host(call) == host)
    }
}

/// Runs `routing` on `hosts`.
pub fn simulate_hosts(hosts: &TwoHosts, routing: Routing) -> HostRun {
    let config = Config {
        delay: Delay::Adaptive(QUANTILE),
        budget: false,
    };
    let hosts = *hosts;
    let policies = |timer: &ManualTimer| match routing {
        Routing::OnePolicy => vec![config.policy(timer.clone())],
        Routing::Keyed => vec![config.builder(timer.clone()).adaptive_keys(KEYS).build()],
        Routing::PerHost => vec![config.policy(timer.clone()), config.policy(timer.clone())],
    };
    let route = |call: usize| {
        let host = hosts.host(call);
        let policy = if routing == Routing::PerHost { host } else { 0 };
        (policy, host)
    };
    let calls = simulate_routed(hosts.calls, policies, route, move |call, copy| {
        hosts.latency(call, copy)
    });
    HostRun { routing, calls }
}

/// (g) at every slow share, the runs spread over the machine's cores.
pub fn run_two_hosts() -> Vec<TwoHostsReport> {
    const ROUTINGS: [Routing; 3] = [Routing::OnePolicy, Routing::Keyed, Routing::PerHost];
    let jobs: Vec<(TwoHosts, Routing)> = SLOW_SHARES
        .iter()
        .flat_map(|&share| ROUTINGS.map(|routing| (TwoHosts::at(share), routing)))
        .collect();
    let mut runs =
        engine::parallel_map(&jobs, |(hosts, routing)| simulate_hosts(hosts, *routing)).into_iter();
    SLOW_SHARES
        .iter()
        .map(|&share| {
            let mut report = TwoHostsReport {
                hosts: TwoHosts::at(share),
                runs: runs.by_ref().take(ROUTINGS.len()).collect(),
                checks: Vec::new(),
            };
            check_two_hosts(&mut report);
            report
        })
        .collect()
}

const HOSTS: [&str; 2] = ["fast host", "slow host"];

fn share_text(hosts: &TwoHosts) -> String {
    format!("{:.0}% slow", hosts.slow_share * 100.0)
}

/// (g): keyed, each host's p99 within 1.1x of a policy per host and its extra copies
/// within +1 point; unkeyed, the mixture's cost to the fast host.
fn check_two_hosts(report: &mut TwoHostsReport) {
    let p99 = |routing, host| report.percentile(routing, host, 0.99).as_secs_f64();
    let mut holds = true;
    let mut measured = Vec::new();
    for (host, name) in HOSTS.iter().enumerate() {
        let ratio = p99(Routing::Keyed, host) / p99(Routing::PerHost, host);
        let (keyed, own) = (
            report.extra(Routing::Keyed, host),
            report.extra(Routing::PerHost, host),
        );
        holds &= ratio <= KEYED_COST.0 && keyed <= own + KEYED_COST.1;
        measured.push(format!(
            "{name} p99 {} vs {} ({ratio:.2}x), extra {:.2}% vs {:.2}%",
            ms_text(report.percentile(Routing::Keyed, host, 0.99)),
            ms_text(report.percentile(Routing::PerHost, host, 0.99)),
            keyed * 100.0,
            own * 100.0
        ));
    }
    let share = share_text(&report.hosts);
    let mixture = p99(Routing::OnePolicy, 0) / p99(Routing::PerHost, 0);
    report.checks = vec![
        Check {
            claim: format!(
                "(g) {share}: one policy keyed by host: each host's p99 <= {:.1}x a policy per host's, extra copies <= +{:.0} point",
                KEYED_COST.0,
                KEYED_COST.1 * 100.0
            ),
            measured: measured.join("; "),
            holds,
        },
        Check {
            claim: format!(
                "(g) {share}: one policy unkeyed shows the mixture's cost (fast host p99 >= 5x a policy per host's)"
            ),
            measured: format!(
                "{} vs {} ({mixture:.1}x); slow host extra {:.2}% vs {:.2}%",
                ms_text(report.percentile(Routing::OnePolicy, 0, 0.99)),
                ms_text(report.percentile(Routing::PerHost, 0, 0.99)),
                report.extra(Routing::OnePolicy, 1) * 100.0,
                report.extra(Routing::PerHost, 1) * 100.0
            ),
            holds: mixture >= 5.0,
        },
    ];
}

/// (g)'s tables, one per slow share.
pub fn keyed_table(reports: &[TwoHostsReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "(g) one client, two backends: medians {} and {}, 2% of copies stall 10-100x; adaptive p95, 1 s window, no budget",
        ms_text(MEDIANS[0]),
        ms_text(MEDIANS[1])
    );
    for report in reports {
        let _ = writeln!(
            out,
            "\n{} of {} calls to the slow host, at {}/s",
            share_text(&report.hosts),
            report.hosts.calls,
            RATE
        );
        let _ = writeln!(
            out,
            "| {:<26} | {:>9} | {:>9} | {:>9} | {:>7} | {:>9} | {:>9} | {:>9} | {:>7} |",
            "configuration",
            "fast p50",
            "fast p99",
            "p99.9",
            "extra",
            "slow p50",
            "slow p99",
            "p99.9",
            "extra"
        );
        let _ = writeln!(
            out,
            "|{:-<28}|{:->11}|{:->11}|{:->11}|{:->9}|{:->11}|{:->11}|{:->11}|{:->9}|",
            "", "", "", "", "", "", "", "", ""
        );
        for run in &report.runs {
            let mut cells = Vec::new();
            for host in 0..2 {
                for quantile in [0.5, 0.99, 0.999] {
                    cells.push(format!(
                        "{:>9}",
                        ms_text(report.percentile(run.routing, host, quantile))
                    ));
                }
                cells.push(format!("{:>6.2}%", report.extra(run.routing, host) * 100.0));
            }
            let _ = writeln!(
                out,
                "| {:<26} | {} |",
                run.routing.label(),
                cells.join(" | ")
            );
        }
    }
    out
}
