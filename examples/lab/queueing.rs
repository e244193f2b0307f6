//! Workload (e): replica servers, each a FIFO queue in front of one worker, so every
//! extra copy is real load and a slow service delays whatever queues behind it.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures::StreamExt;
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Budget, Hedgeable, HedgeableStream, Policy};

use super::engine::{self, Task};
use super::queue_report::check_queueing;
use super::servers::{serve, Farm, Reply, Request};
use super::{ms_text, nearest_rank, percentile, Check, BUDGET_RATIO, MS, STALL_RATE};

/// Replica servers behind the balancer.
pub const SERVERS: usize = 10;
/// The offered loads swept, as shares of capacity counting original copies only.
pub const UTILISATIONS: [f64; 6] = [0.1, 0.3, 0.5, 0.7, 0.8, 0.9];
/// Virtual time each load runs for: long enough for the queues of a busy cluster to show.
const RUN: Duration = Duration::from_secs(30);
/// The log-normal body's σ, as in the other workloads.
const SIGMA: f64 = 0.3;
/// The tie of the tied pair row: the pair's second copy goes out unless the first
/// started within this. The Tail at Scale waits twice a network message's delay, so an
/// idle first server can start and cancel the second; this model's messages take no
/// time, so the tie waits the services' resolution, one microsecond.
pub const TIE: Duration = Duration::from_micros(1);

/// Replicas of the correlated workload (f).
pub const PAUSED_SERVERS: usize = 8;
/// (f): the mean time a replica runs between two pauses.
pub const PAUSE_EVERY: Duration = Duration::from_millis(2_500);
/// (f): the shortest and longest pause, drawn uniformly.
pub const PAUSE_LENGTH: (Duration, Duration) =
    (Duration::from_millis(20), Duration::from_millis(100));

/// Where a slow call comes from, and how the balancer picks a replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slowness {
    /// (e): a service on its own is slow now and then (`STALL_RATE` of them hiccup); each
    /// copy goes to the replica with the shortest queue.
    Independent,
    /// (f): a replica pauses now and then (a GC pause, a compaction), stalling the copy in
    /// service and everything queued behind it, while arrivals keep queueing; services
    /// never hiccup on their own, and the balancer, blind to queues, sends each copy to a
    /// random replica the call has not tried.
    Correlated,
}

/// The loads of the workloads of replicas paused a tenth and a fifth of the time.
pub const PAUSED_LOADS: [f64; 3] = [0.1, 0.3, 0.5];
/// The fixed delays swept with the recommended row's budget, for the best in hindsight.
pub const SWEPT_DELAYS_US: [u64; 10] = [
    500, 1_000, 1_500, 2_000, 3_000, 5_000, 8_000, 13_000, 20_000, 40_000,
];
/// (f10)'s share of the time each replica is paused, for the runs beside the demo's.
pub const F10_PAUSED: f64 = 0.10;

/// The fixed delays of [`SWEPT_DELAYS_US`] with the recommended row's budget, in order:
/// the rows the best fixed delay in hindsight is taken from.
pub fn swept() -> [Scheme; SWEPT_DELAYS_US.len()] {
    SWEPT_DELAYS_US.map(|micros| Scheme::FixedBudget(Duration::from_micros(micros)))
}

/// The highest load the recommended row is held to the best fixed delay at.
pub const HINDSIGHT_LOADS: f64 = 0.5;

/// The cluster and its traffic at one offered load.
#[derive(Clone, Copy, Debug)]
pub struct Cluster {
    pub calls: usize,
    /// The median service time.
    pub median: Duration,
    /// The offered load, originals only: arrival rate × mean service time / servers.
    pub utilisation: f64,
    pub seed: u64,
    pub servers: usize,
    pub slowness: Slowness,
    /// (f): the mean time a replica runs between two pauses.
    pub pause_every: Duration,
}

impl Cluster {
    /// The lab's cluster (e) at `utilisation`: 1 ms median service, 30 s of arrivals.
    pub fn at(utilisation: f64) -> Cluster {
        Cluster::new(utilisation, SERVERS, Slowness::Independent)
    }

    /// The correlated workload (f) at `utilisation`: 8 replicas that pause, 1 ms median
    /// service, 30 s of arrivals.
    pub fn paused_at(utilisation: f64) -> Cluster {
        Cluster {
            seed: 6,
            ..Cluster::new(utilisation, PAUSED_SERVERS, Slowness::Correlated)
        }
    }

    /// Workload (f) with each replica paused `share` of the time (the pauses as long,
    /// closer together), at `utilisation`.
    pub fn paused_share(share: f64, utilisation: f64) -> Cluster {
        let (shortest, longest) = PAUSE_LENGTH;
        let pause = (shortest + longest) / 2;
        Cluster {
            pause_every: pause.mul_f64((1.0 - share) / share),
            ..Cluster::paused_at(utilisation)
        }
    }

    /// The cluster with `run` of arrivals instead of 30 s; its replicas pause as long.
    pub fn lasting(self, run: Duration) -> Cluster {
        Cluster {
            calls: (self.rate() * run.as_secs_f64()) as usize,
            ..self
        }
    }

    /// The share of the time a replica is paused (about).
    pub fn paused_share_of_time(&self) -> f64 {
        if self.slowness == Slowness::Independent {
            return 0.0;
        }
        let (shortest, longest) = PAUSE_LENGTH;
        let pause = ((shortest + longest) / 2).as_secs_f64();
        pause / (pause + self.pause_every.as_secs_f64())
    }

    fn new(utilisation: f64, servers: usize, slowness: Slowness) -> Cluster {
        let mut cluster = Cluster {
            calls: 0,
            median: MS,
            utilisation,
            seed: 5,
            servers,
            slowness,
            pause_every: PAUSE_EVERY,
        };
        cluster.calls = (cluster.rate() * RUN.as_secs_f64()) as usize;
        cluster
    }

    /// The share of services that hiccup: none where the slowness is the replicas'.
    fn hiccup_rate(&self) -> f64 {
        match self.slowness {
            Slowness::Independent => STALL_RATE,
            Slowness::Correlated => 0.0,
        }
    }

    /// The mean service time: the log-normal body's mean and the hiccups' (55× the
    /// median on average), weighted by their shares.
    pub fn mean_service(&self) -> Duration {
        let body = (SIGMA * SIGMA / 2.0).exp();
        let hiccup = (10.0 + 100.0) / 2.0;
        let hiccups = self.hiccup_rate();
        self.median
            .mul_f64((1.0 - hiccups) * body + hiccups * hiccup)
    }

    /// Calls per second at the offered load.
    pub fn rate(&self) -> f64 {
        self.utilisation * self.servers as f64 / self.mean_service().as_secs_f64()
    }

    /// Server `server`'s pauses over the run and a little beyond, as (start, end), in
    /// order: none for (e). Gaps between pauses are exponential around
    /// [`PAUSE_EVERY`], lengths uniform over [`PAUSE_LENGTH`].
    pub fn pauses(&self, server: usize) -> Vec<(Duration, Duration)> {
        if self.slowness == Slowness::Independent {
            return Vec::new();
        }
        let mut rng = self.rng(usize::MAX - 1 - server, usize::MAX);
        let (shortest, longest) = PAUSE_LENGTH;
        let run = self.calls as f64 / self.rate();
        let until = run.max(RUN.as_secs_f64()) * 2.0;
        let mut now = 0.0;
        let mut pauses = Vec::new();
        loop {
            now += -(1.0 - rng.f64()).ln() * self.pause_every.as_secs_f64();
            if now > until {
                return pauses;
            }
            let length = shortest.as_secs_f64()
                + (longest.as_secs_f64() - shortest.as_secs_f64()) * rng.f64();
            let start = Duration::from_micros((now * 1e6).round() as u64);
            let end = start + Duration::from_micros((length * 1e6).round() as u64);
            pauses.push((start, end));
            now += length;
        }
    }

    /// Every call's arrival: a Poisson stream at [`rate`](Cluster::rate).
    pub fn arrivals(&self) -> Vec<Duration> {
        let mut rng = fastrand::Rng::with_seed(self.seed);
        let mean_gap = 1.0 / self.rate();
        let mut now = 0.0;
        (0..self.calls)
            .map(|_| {
                now += -(1.0 - rng.f64()).ln() * mean_gap;
                Duration::from_nanos((now * 1e9).round() as u64)
            })
            .collect()
    }

    fn rng(&self, call: usize, copy: usize) -> fastrand::Rng {
        fastrand::Rng::with_seed(
            self.seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add((call as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
                .wrapping_add((copy as u64).wrapping_mul(0x94d0_49bb_1331_11eb)),
        )
    }

    /// Where the balancer starts its scan for call `call`, so ties between equally loaded
    /// replicas go to a random one.
    pub(super) fn first_choice(&self, call: usize) -> usize {
        self.rng(call, usize::MAX).usize(0..self.servers)
    }

    /// (f)'s blind balancer: a random replica for copy `copy` of `call`, drawn from those
    /// the call has not tried.
    pub(super) fn random_choice(&self, call: usize, copy: usize, untried: usize) -> usize {
        self.rng(call, usize::MAX - 1 - copy).usize(0..untried)
    }

    /// The service time of copy `copy` of call `call`: a log-normal body (σ = 0.3) around
    /// the median, or for `STALL_RATE` of them a hiccup of 10–100× the median. It depends
    /// only on the seed, the call and the copy, so every row sees the same services.
    pub fn service(&self, call: usize, copy: usize) -> Duration {
        let mut rng = self.rng(call, copy);
        let median = self.median.as_secs_f64();
        let seconds = if rng.f64() < self.hiccup_rate() {
            median * (10.0 + 90.0 * rng.f64())
        } else {
            let (u1, u2) = (1.0 - rng.f64(), rng.f64());
            let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            median * (SIGMA * normal).exp()
        };
        Duration::from_micros((seconds * 1e6).round() as u64)
    }

    /// The `quantile` of the originals' service times: the latency an idle cluster shows.
    pub fn unloaded(&self, quantile: f64) -> Duration {
        let services: Vec<Duration> = (0..self.calls).map(|call| self.service(call, 0)).collect();
        percentile(&services, quantile)
    }

    /// The worker time the originals need: what the servers spend without hedging.
    pub fn originals_work(&self) -> Duration {
        (0..self.calls).map(|call| self.service(call, 0)).sum()
    }
}

/// How one row of the queueing table uses the cluster; at most two copies per call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scheme {
    /// One copy per call.
    Off,
    /// A hedge this long after the original.
    Fixed(Duration),
    /// A hedge this long after the original, with the recommended row's budget: the
    /// sweep the best fixed delay in hindsight is taken from.
    FixedBudget(Duration),
    /// The README's production configuration, `optimal_delay(0.99)`, with or without its
    /// budget (see [`recommended`]).
    Recommended { budget: bool },
    /// The README's production configuration with its budget and this `adaptive_window`
    /// instead of the default 10 s (see [`windows`](super::windows)).
    RecommendedWindow(Duration),
    /// The configuration the README recommended before `optimal_delay`, an adaptive p95
    /// delay with the budget (see [`adaptive_p95`]).
    AdaptiveP95,
    /// Tied requests: a second copy this long after the first unless the first started;
    /// the first copy to start service wins and the other leaves its queue.
    Tied(Duration),
    /// A hedge `first` after the original for the calls that start before `until`, `then`
    /// after it for the rest, with the recommended row's budget: what a delay costs that
    /// reaches the best fixed delay only at `until` (see [`start`](super::start)).
    HeldStart {
        first: Duration,
        until: Duration,
        then: Duration,
    },
    /// Tied requests under the recommended hedge: each of its copies is a tied pair,
    /// the pair's second copy this long after its first unless the first started, so the
    /// pair cuts queueing and the hedge a slow service.
    TiedPair(Duration),
}

impl Scheme {
    pub fn label(&self) -> String {
        let ms = |delay: Duration| format!("{:.2} ms", delay.as_secs_f64() * 1e3);
        match self {
            Scheme::Off => "no hedging".to_string(),
            Scheme::Fixed(delay) => format!("fixed {}", ms(*delay)),
            Scheme::FixedBudget(delay) => {
                format!("fixed {} + {:.0}% budget", ms(*delay), BUDGET_RATIO * 100.0)
            }
            Scheme::Recommended { budget: false } => "optimal p99".to_string(),
            Scheme::Recommended { budget: true } => {
                format!("optimal p99 + {:.0}% budget", BUDGET_RATIO * 100.0)
            }
            Scheme::RecommendedWindow(window) => format!(
                "optimal p99 + {:.0}% budget, {} s window",
                BUDGET_RATIO * 100.0,
                window.as_secs()
            ),
            Scheme::AdaptiveP95 => format!("adaptive p95 + {:.0}% budget", BUDGET_RATIO * 100.0),
            Scheme::HeldStart { first, until, then } => format!(
                "{} until {:.1} s, then {} + {:.0}% budget",
                ms(*first),
                until.as_secs_f64(),
                ms(*then),
                BUDGET_RATIO * 100.0
            ),
            Scheme::Tied(delay) => format!("tied, second at {}", ms(*delay)),
            Scheme::TiedPair(_) => "tied pairs, optimal p99 + budget".to_string(),
        }
    }

    /// The policy a call hedges with (for tied requests, the one that ties its copies).
    fn policy(&self, timer: ManualTimer, min_win_rate: f64) -> Policy<ManualTimer> {
        let builder = Policy::builder()
            .timer(timer.clone())
            .min_win_rate(min_win_rate);
        match *self {
            Scheme::Off => builder.max_copies(1).build(),
            Scheme::Fixed(delay) | Scheme::Tied(delay) => {
                builder.max_copies(2).delay(delay).build()
            }
            Scheme::FixedBudget(delay) => builder
                .max_copies(2)
                .delay(delay)
                .budget(&recommended_budget())
                .build(),
            Scheme::Recommended { budget } => recommended(builder, budget),
            Scheme::RecommendedWindow(window) => recommended(builder.adaptive_window(window), true),
            Scheme::AdaptiveP95 => adaptive_p95(builder),
            Scheme::HeldStart { first, until, then } => builder
                .max_copies(2)
                .delay_fn(move |_| Some(if timer.now() < until { first } else { then }))
                .budget(&recommended_budget())
                .build(),
            // The pairs are hedged as the recommended row hedges its copies.
            Scheme::TiedPair(_) => recommended(builder, true),
        }
    }

    /// The policy that ties each copy of a [`TiedPair`](Scheme::TiedPair) call.
    fn tie(&self, timer: ManualTimer) -> Option<Policy<ManualTimer>> {
        match *self {
            Scheme::TiedPair(delay) => Some(Scheme::Tied(delay).policy(timer, 0.0)),
            _ => None,
        }
    }

    /// Whether a call's copies are tied (commit at the first to start service).
    pub fn is_tied(&self) -> bool {
        matches!(self, Scheme::Tied(_) | Scheme::TiedPair(_))
    }
}

/// The configuration the README recommends for production, on `builder`'s timer:
/// `optimal_delay(0.99)` bounded to 0.1–200 ms (20 ms until 100 latencies are known) over
/// the default 10 s window, and with `budget`, at most 10% extra copies and 50 in flight.
/// The README adds `min_win_rate`, left out here: what it changes on these rows is
/// [`run_withheld`](super::heavy::run_withheld)'s table.
pub fn recommended<T: Timer>(builder: hedging::PolicyBuilder<T>, budget: bool) -> Policy<T> {
    let builder = optimal_bounded(builder, 0.99);
    if budget {
        builder.budget(&recommended_budget()).build()
    } else {
        builder.build()
    }
}

/// The configuration the README recommended before `optimal_delay`: an adaptive p95 delay
/// bounded to 2–200 ms (20 ms until 100 latencies are known) over the default 10 s window,
/// with the recommended budget.
pub fn adaptive_p95<T: Timer>(builder: hedging::PolicyBuilder<T>) -> Policy<T> {
    builder
        .adaptive_delay(0.95)
        .min_delay(Duration::from_millis(2))
        .max_delay(Duration::from_millis(200))
        .delay(FIRST_DELAY)
        .budget(&recommended_budget())
        .build()
}

/// `optimal_delay(quantile)` bounded to 0.1–200 ms, 20 ms until 100 latencies are known:
/// the optimal rows of every workload.
pub fn optimal_bounded<T: Timer>(
    builder: hedging::PolicyBuilder<T>,
    quantile: f64,
) -> hedging::PolicyBuilder<T> {
    builder
        .optimal_delay(quantile)
        .min_delay(Duration::from_micros(100))
        .max_delay(Duration::from_millis(200))
        .delay(FIRST_DELAY)
}

/// The delay the README's adaptive configurations hedge at until 100 latencies are known.
pub const FIRST_DELAY: Duration = Duration::from_millis(20);

/// The README's budget: 10% extra copies, at most 50 in flight.
pub fn recommended_budget() -> Budget {
    Budget::new(BUDGET_RATIO).max_outstanding(50)
}

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
