//! Workloads (e) and (f) run: replica servers, each a FIFO queue in front of one worker,
//! so every extra copy is real load and a slow service delays whatever queues behind it.
//! The clusters are [`cluster`](super::cluster)'s, the rows [`scheme`](super::scheme)'s.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures::StreamExt;
use hedging::timer::ManualTimer;
use hedging::{Attempt, Hedgeable, HedgeableStream, Policy};

use super::cluster::{Cluster, Slowness, HINDSIGHT_LOADS, PAUSED_LOADS, UTILISATIONS};
use super::engine::{self, Task};
use super::queue_report::check_queueing;
use super::scheme::{swept, Scheme, TIE};
use super::servers::{serve, Farm, Reply, Request};
use super::{ms_text, nearest_rank, Check};

/// What one row did at one load.
#[derive(Clone, Debug)]
pub struct QueueRun {
    pub scheme: Scheme,
    pub abort_in_service: bool,
    /// Per call, in arrival order.
    pub latencies: Vec<Duration>,
    pub calls: u64,
    pub extra_copies: u64,
    pub budget_denied: u64,
    /// Calls whose hedge `min_win_rate` withheld.
    pub withheld: u64,
    /// The share of the servers' time they were busy, up to the last arrival.
    pub busy: f64,
    /// Worker time spent beyond what the originals need (negative when aborted losers
    /// saved some), as a share of what they need.
    pub extra_work: f64,
    /// The worker time the originals need, in seconds: what `extra_work` is a share of.
    pub needed: f64,
    /// Calls that had two or more of their copies served: each paid a second service.
    pub served_twice: u64,
    /// The policy's delay when the last call ended.
    pub delay_at_end: Option<Duration>,
    /// `latencies`, sorted once for the percentiles.
    sorted: Vec<Duration>,
}

impl QueueRun {
    pub fn percentile(&self, quantile: f64) -> Duration {
        nearest_rank(&self.sorted, quantile)
    }

    /// Worker time spent beyond what the originals need, in seconds.
    pub fn extra_seconds(&self) -> f64 {
        self.extra_work * self.needed
    }

    pub fn extra_ratio(&self) -> f64 {
        self.extra_copies as f64 / self.calls as f64
    }

    /// The delay of a row of the sweep of fixed delays with the budget
    /// ([`Scheme::FixedBudget`]), such as the best of them.
    pub fn swept_delay(&self) -> Duration {
        match self.scheme {
            Scheme::FixedBudget(delay) => delay,
            _ => unreachable!("a row of the sweep"),
        }
    }

    /// A row of the sweep as the tables beside the demo print the best of them: its p99
    /// and its delay ("14.20 ms at 8.00 ms").
    pub fn p99_at_swept_delay(&self) -> String {
        format!(
            "{} at {}",
            ms_text(self.percentile(0.99)),
            ms_text(self.swept_delay())
        )
    }
}

/// Runs `scheme` on `cluster` in virtual time.
pub fn simulate_queue(cluster: &Cluster, scheme: Scheme, abort_in_service: bool) -> QueueRun {
    simulate_queue_with(cluster, scheme, abort_in_service, 0.0)
}

/// [`simulate_queue`] with [`min_win_rate`](hedging::PolicyBuilder::min_win_rate) set to
/// `min_win_rate` (0: off) on the hedging policy.
pub fn simulate_queue_with(
    cluster: &Cluster,
    scheme: Scheme,
    abort_in_service: bool,
    min_win_rate: f64,
) -> QueueRun {
    let timer = ManualTimer::new();
    let policy = scheme.policy(timer.clone(), min_win_rate);
    let tie = scheme.tie(timer.clone());
    let arrivals = cluster.arrivals();
    let horizon = *arrivals.last().expect("at least one call");
    let farm = Rc::new(RefCell::new(Farm::new(
        timer.clone(),
        cluster,
        abort_in_service,
        horizon,
    )));
    let latencies = Rc::new(RefCell::new(vec![Duration::ZERO; cluster.calls]));
    let spawn = |call: usize| -> Task {
        let (timer, farm, latencies, cluster) = (
            timer.clone(),
            Rc::clone(&farm),
            Rc::clone(&latencies),
            *cluster,
        );
        let (policy, tie) = (policy.clone(), tie.clone());
        Box::pin(async move {
            let arrived = timer.now();
            let tried = RefCell::new(Vec::with_capacity(4));
            let send = |copy: usize| Request::send(&farm, &cluster, call, copy, &tried);
            let answer = match scheme {
                Scheme::Tied(_) => tied(|attempt: Attempt| send(attempt.index()), &policy).await,
                Scheme::TiedPair(_) => {
                    let tie = tie.as_ref().expect("a tied pair has its tie policy");
                    // Copy k of the hedge is a pair: copy k, served as copy k of every
                    // hedged row, and its tied twin, copy k + 2, a service of its own.
                    let pair = |hedge: Attempt| {
                        let send = &send;
                        tied(
                            move |tied: Attempt| send(hedge.index() + 2 * tied.index()),
                            tie,
                        )
                    };
                    pair.hedged(&policy).await
                }
                _ => {
                    (|attempt: Attempt| send(attempt.index()))
                        .hedged(&policy)
                        .await
                }
            };
            assert_eq!(answer, Ok(()), "simulated copies always succeed");
            latencies.borrow_mut()[call] = timer.now() - arrived;
        })
    };
    let servers = (0..cluster.servers)
        .map(|server| serve(Rc::clone(&farm), server))
        .collect();
    engine::drive(&timer, cluster.calls, |call| arrivals[call], spawn, servers);
    let stats = policy.stats();
    let tied_extra = tie.as_ref().map_or(0, |tie| tie.stats().hedges);
    let (busy, spent) = farm.borrow_mut().settle();
    let served_twice = farm.borrow().served_twice();
    let needed = cluster.originals_work().as_secs_f64();
    let latencies = latencies.take();
    let mut sorted = latencies.clone();
    sorted.sort_unstable();
    QueueRun {
        scheme,
        abort_in_service,
        latencies,
        sorted,
        needed,
        served_twice,
        delay_at_end: policy.delay(),
        calls: stats.calls,
        extra_copies: stats.hedges + tied_extra,
        budget_denied: stats.budget_denied,
        withheld: stats.withheld,
        busy,
        extra_work: (spent.as_secs_f64() - needed) / needed,
    }
}

/// A tied request: races the copies `send` makes, as `policy` says, until one starts
/// service, then waits for that copy's answer.
async fn tied(
    send: impl FnMut(Attempt) -> Request,
    policy: &Policy<ManualTimer>,
) -> Result<(), ()> {
    let mut replies = send.hedged_stream(policy);
    assert_eq!(replies.next().await, Some(Ok(Reply::Started)));
    assert_eq!(replies.next().await, Some(Ok(Reply::Answer)));
    Ok(())
}

/// Every row of workload (e) at one load.
#[derive(Clone, Debug)]
pub struct Level {
    pub cluster: Cluster,
    pub runs: Vec<QueueRun>,
}

impl Level {
    /// The run of the first row `scheme` matches.
    pub fn run(&self, scheme: impl Fn(&Scheme) -> bool) -> &QueueRun {
        self.runs
            .iter()
            .find(|run| scheme(&run.scheme))
            .expect("every scheme has a row")
    }

    pub fn unhedged(&self) -> &QueueRun {
        self.run(|scheme| *scheme == Scheme::Off)
    }

    pub fn fixed(&self) -> &QueueRun {
        self.run(|scheme| matches!(scheme, Scheme::Fixed(_)))
    }

    /// The README's recommendation: `optimal_delay(0.99)` with its budget.
    pub fn recommended(&self) -> &QueueRun {
        self.run(|scheme| *scheme == Scheme::Recommended { budget: true })
    }

    /// The recommendation's delay without its budget.
    pub fn unbudgeted(&self) -> &QueueRun {
        self.run(|scheme| *scheme == Scheme::Recommended { budget: false })
    }

    /// The recommendation's copies, each a tied pair.
    pub fn tied_pairs(&self) -> &QueueRun {
        self.run(|scheme| matches!(scheme, Scheme::TiedPair(_)))
    }

    /// The rows of the README's configurations and the peers': not the sweep of fixed
    /// delays with the budget.
    pub fn readme_rows(&self) -> impl Iterator<Item = &QueueRun> {
        self.runs
            .iter()
            .filter(|run| !matches!(run.scheme, Scheme::FixedBudget(_)))
    }

    /// The fixed delay with the recommended row's budget whose p99 is the lowest, where
    /// the load swept them.
    pub fn best_fixed(&self) -> Option<&QueueRun> {
        self.runs
            .iter()
            .filter(|run| matches!(run.scheme, Scheme::FixedBudget(_)))
            .min_by_key(|run| run.percentile(0.99))
    }
}

/// Workload (e) or (f): every row at every load, and the acceptance checks.
#[derive(Clone, Debug)]
pub struct QueueReport {
    /// The workload's letter: `e`, `f`, or `f10` and `f20` for replicas paused a tenth
    /// and a fifth of the time.
    pub key: String,
    /// Whether this is (e), services slow on their own, or (f), replicas that pause.
    pub slowness: Slowness,
    /// The unloaded p95 of service: the fixed delay, and the tied rows' later second copy.
    pub p95: Duration,
    /// Per load, every row, in-service losers served to their end.
    pub levels: Vec<Level>,
    pub checks: Vec<Check>,
    /// Lines of work under way, measured and printed (PASS or OPEN) but not yet held.
    pub targets: Vec<Check>,
}

/// The rows of the queueing table, in order.
pub fn schemes(p95: Duration) -> Vec<Scheme> {
    vec![
        Scheme::Off,
        Scheme::Fixed(p95),
        Scheme::Recommended { budget: false },
        Scheme::Recommended { budget: true },
        Scheme::AdaptiveP95,
        Scheme::Tied(Duration::ZERO),
        Scheme::Tied(p95),
        Scheme::TiedPair(TIE),
    ]
}

/// The unloaded p95 every load shares: over the largest sample of services.
pub fn unloaded_p95() -> Duration {
    Cluster::at(UTILISATIONS[UTILISATIONS.len() - 1]).unloaded(0.95)
}

/// Workload (e): every row at every load, in-service losers served to their end, and the
/// acceptance lines.
pub fn run_queueing() -> QueueReport {
    run_cluster("e", UTILISATIONS.map(Cluster::at).to_vec(), &schemes)
}

/// Workload (f), correlated slowness: every row at every load on replicas that pause,
/// in-service losers served to their end, and the acceptance lines.
pub fn run_paused() -> QueueReport {
    run_cluster("f", UTILISATIONS.map(Cluster::paused_at).to_vec(), &schemes)
}

/// Workload (f) with each replica paused `share` of the time, at 10–50% load: the rows
/// that hedge without tying, and the acceptance lines.
pub fn run_paused_share(share: f64) -> QueueReport {
    let clusters = PAUSED_LOADS
        .map(|load| Cluster::paused_share(share, load))
        .to_vec();
    let rows = |p95| {
        let mut rows = schemes(p95);
        rows.retain(|scheme| !scheme.is_tied());
        rows
    };
    run_cluster(&format!("f{:.0}", share * 100.0), clusters, &rows)
}

fn run_cluster(
    key: &str,
    clusters: Vec<Cluster>,
    rows: &dyn Fn(Duration) -> Vec<Scheme>,
) -> QueueReport {
    let busiest = clusters.last().expect("loads");
    let p95 = busiest.unloaded(0.95);
    let slowness = busiest.slowness;
    // The fixed delays with the recommended row's budget, at the loads it is held to the
    // best of them.
    let jobs: Vec<(Cluster, Vec<Scheme>)> = clusters
        .iter()
        .map(|&cluster| {
            let mut schemes = rows(p95);
            if cluster.utilisation <= HINDSIGHT_LOADS + 1e-9 {
                schemes.extend(swept());
            }
            (cluster, schemes)
        })
        .collect();
    let levels = run_jobs(jobs, false);
    let mut report = QueueReport {
        key: key.to_string(),
        slowness,
        p95,
        levels,
        checks: Vec::new(),
        targets: Vec::new(),
    };
    check_queueing(&mut report);
    report
}

/// The hedged rows at every load, with in-service losers aborted: what cancellation that
/// reaches a copy in service is worth.
pub fn run_aborted(p95: Duration) -> Vec<Level> {
    // Tied requests alone drop their losers before service but for a start at the same
    // instant; under a hedge, the hedge's losers do reach service.
    let schemes: Vec<Scheme> = schemes(p95)
        .into_iter()
        .filter(|scheme| !matches!(scheme, Scheme::Off | Scheme::Tied(_)))
        .collect();
    sweep(&schemes, true)
}

/// Every row at `utilisation`, once per seed in `seeds`: how much of a comparison at one
/// load is the draw of arrivals and services.
pub fn run_seeds(utilisation: f64, seeds: std::ops::RangeInclusive<u64>) -> Vec<Level> {
    let clusters: Vec<Cluster> = seeds
        .map(|seed| Cluster {
            seed,
            ..Cluster::at(utilisation)
        })
        .collect();
    run_levels(clusters, &schemes(unloaded_p95()), false)
}

fn sweep(schemes: &[Scheme], abort_in_service: bool) -> Vec<Level> {
    let clusters = UTILISATIONS.iter().map(|&load| Cluster::at(load)).collect();
    run_levels(clusters, schemes, abort_in_service)
}

/// Every row of `schemes` on every cluster, the simulations spread over the machine's
/// cores.
pub fn run_levels(
    clusters: Vec<Cluster>,
    schemes: &[Scheme],
    abort_in_service: bool,
) -> Vec<Level> {
    let jobs = clusters
        .into_iter()
        .map(|cluster| (cluster, schemes.to_vec()))
        .collect();
    run_jobs(jobs, abort_in_service)
}

/// Each cluster's rows, the simulations spread over the machine's cores.
pub(super) fn run_jobs(
    clusters: Vec<(Cluster, Vec<Scheme>)>,
    abort_in_service: bool,
) -> Vec<Level> {
    let jobs: Vec<(Cluster, Scheme)> = clusters
        .iter()
        .flat_map(|(cluster, schemes)| schemes.iter().map(move |&scheme| (*cluster, scheme)))
        .collect();
    let mut runs = engine::parallel_map(&jobs, |(cluster, scheme)| {
        simulate_queue(cluster, *scheme, abort_in_service)
    })
    .into_iter();
    clusters
        .into_iter()
        .map(|(cluster, schemes)| Level {
            cluster,
            runs: runs.by_ref().take(schemes.len()).collect(),
        })
        .collect()
}
