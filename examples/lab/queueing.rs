//! Workload (e): replica servers, each a FIFO queue in front of one worker, so every
//! extra copy is real load and a slow service delays whatever queues behind it.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use futures::StreamExt;
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Budget, Hedgeable, HedgeableStream, Policy};

use super::engine::{self, Task};
use super::report::check_queueing;
use super::servers::{serve, Farm, Reply, Request};
use super::{percentile, Check, MS, STALL_RATE};

/// Replica servers behind the balancer.
pub const SERVERS: usize = 10;
/// The offered loads swept, as shares of capacity counting original copies only.
pub const UTILISATIONS: [f64; 6] = [0.1, 0.3, 0.5, 0.7, 0.8, 0.9];
/// Virtual time each load runs for: long enough for the queues of a busy cluster to show.
const RUN: Duration = Duration::from_secs(30);
/// The log-normal body's σ, as in the other workloads.
const SIGMA: f64 = 0.3;

/// The cluster and its traffic at one offered load.
#[derive(Clone, Copy, Debug)]
pub struct Cluster {
    pub calls: usize,
    /// The median service time.
    pub median: Duration,
    /// The offered load, originals only: arrival rate × mean service time / servers.
    pub utilisation: f64,
    pub seed: u64,
}

impl Cluster {
    /// The lab's cluster at `utilisation`: 1 ms median service, 30 s of arrivals.
    pub fn at(utilisation: f64) -> Cluster {
        let mut cluster = Cluster {
            calls: 0,
            median: MS,
            utilisation,
            seed: 5,
        };
        cluster.calls = (cluster.rate() * RUN.as_secs_f64()) as usize;
        cluster
    }

    /// The mean service time: the log-normal body's mean and the hiccups' (55× the
    /// median on average), weighted by their shares.
    pub fn mean_service(&self) -> Duration {
        let body = (SIGMA * SIGMA / 2.0).exp();
        let hiccup = (10.0 + 100.0) / 2.0;
        self.median
            .mul_f64((1.0 - STALL_RATE) * body + STALL_RATE * hiccup)
    }

    /// Calls per second at the offered load.
    pub fn rate(&self) -> f64 {
        self.utilisation * SERVERS as f64 / self.mean_service().as_secs_f64()
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
        self.rng(call, usize::MAX).usize(0..SERVERS)
    }

    /// The service time of copy `copy` of call `call`: a log-normal body (σ = 0.3) around
    /// the median, or for `STALL_RATE` of them a hiccup of 10–100× the median. It depends
    /// only on the seed, the call and the copy, so every row sees the same services.
    pub fn service(&self, call: usize, copy: usize) -> Duration {
        let mut rng = self.rng(call, copy);
        let median = self.median.as_secs_f64();
        let seconds = if rng.f64() < STALL_RATE {
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
    /// The README's adaptive delay, with or without its budget (see [`recommended`]).
    Adaptive { budget: bool },
    /// Tied requests: a second copy this long after the first unless the first started;
    /// the first copy to start service wins and the other leaves its queue.
    Tied(Duration),
}

impl Scheme {
    pub fn label(&self) -> String {
        let ms = |delay: Duration| format!("{:.2} ms", delay.as_secs_f64() * 1e3);
        match self {
            Scheme::Off => "no hedging".to_string(),
            Scheme::Fixed(delay) => format!("fixed {}", ms(*delay)),
            Scheme::Adaptive { budget: false } => "adaptive p95".to_string(),
            Scheme::Adaptive { budget: true } => "adaptive p95 + 5% budget".to_string(),
            Scheme::Tied(delay) => format!("tied, second at {}", ms(*delay)),
        }
    }

    fn policy(&self, timer: ManualTimer) -> Policy<ManualTimer> {
        let builder = Policy::builder().timer(timer);
        match *self {
            Scheme::Off => builder.max_copies(1).build(),
            Scheme::Fixed(delay) | Scheme::Tied(delay) => {
                builder.max_copies(2).delay(delay).build()
            }
            Scheme::Adaptive { budget } => recommended(builder, budget),
        }
    }
}

/// The configuration the README recommends for production, on `builder`'s timer: an
/// adaptive p95 delay bounded to 2–200 ms (20 ms until 100 latencies are known) over the
/// default 10 s window, and with `budget`, at most 5% extra copies and 50 in flight.
pub fn recommended<T: Timer>(builder: hedging::PolicyBuilder<T>, budget: bool) -> Policy<T> {
    let builder = builder
        .adaptive_delay(0.95)
        .min_delay(Duration::from_millis(2))
        .max_delay(Duration::from_millis(200))
        .delay(Duration::from_millis(20));
    if budget {
        builder
            .budget(&Budget::new(0.05).max_outstanding(50))
            .build()
    } else {
        builder.build()
    }
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
    /// The share of the servers' time they were busy, up to the last arrival.
    pub busy: f64,
    /// Worker time spent beyond what the originals need (negative when aborted losers
    /// saved some), as a share of what they need.
    pub extra_work: f64,
}

impl QueueRun {
    pub fn percentile(&self, quantile: f64) -> Duration {
        percentile(&self.latencies, quantile)
    }

    pub fn extra_ratio(&self) -> f64 {
        self.extra_copies as f64 / self.calls as f64
    }
}

/// Runs `scheme` on `cluster` in virtual time.
pub fn simulate_queue(cluster: &Cluster, scheme: Scheme, abort_in_service: bool) -> QueueRun {
    let timer = ManualTimer::new();
    let policy = scheme.policy(timer.clone());
    let arrivals = cluster.arrivals();
    let horizon = *arrivals.last().expect("at least one call");
    let farm = Rc::new(RefCell::new(Farm::new(
        timer.clone(),
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
        let policy = policy.clone();
        Box::pin(async move {
            let arrived = timer.now();
            let tried = RefCell::new(Vec::with_capacity(2));
            let send =
                |attempt: Attempt| Request::send(&farm, &cluster, call, attempt.index(), &tried);
            if let Scheme::Tied(_) = scheme {
                let mut replies = send.hedged_stream(&policy);
                assert_eq!(replies.next().await, Some(Ok(Reply::Started)));
                assert_eq!(replies.next().await, Some(Ok(Reply::Answer)));
            } else {
                let answer = send.hedged(&policy).await;
                assert_eq!(answer, Ok(()), "simulated copies always succeed");
            }
            latencies.borrow_mut()[call] = timer.now() - arrived;
        })
    };
    let servers = (0..SERVERS)
        .map(|server| serve(Rc::clone(&farm), server))
        .collect();
    engine::drive(&timer, cluster.calls, |call| arrivals[call], spawn, servers);
    let stats = policy.stats();
    let (busy, spent) = farm.borrow_mut().settle();
    let needed = cluster.originals_work().as_secs_f64();
    QueueRun {
        scheme,
        abort_in_service,
        latencies: latencies.take(),
        calls: stats.calls,
        extra_copies: stats.hedges,
        budget_denied: stats.budget_denied,
        busy,
        extra_work: (spent.as_secs_f64() - needed) / needed,
    }
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

    /// The README's recommendation: the adaptive delay with its budget.
    pub fn recommended(&self) -> &QueueRun {
        self.run(|scheme| *scheme == Scheme::Adaptive { budget: true })
    }
}

/// Workload (e): every row at every load, and the acceptance checks.
#[derive(Clone, Debug)]
pub struct QueueReport {
    /// The unloaded p95 of service: the fixed delay, and the tied rows' later second copy.
    pub p95: Duration,
    /// Per load, every row, in-service losers served to their end.
    pub levels: Vec<Level>,
    pub checks: Vec<Check>,
}

/// The rows of the queueing table, in order.
pub fn schemes(p95: Duration) -> [Scheme; 6] {
    [
        Scheme::Off,
        Scheme::Fixed(p95),
        Scheme::Adaptive { budget: false },
        Scheme::Adaptive { budget: true },
        Scheme::Tied(Duration::ZERO),
        Scheme::Tied(p95),
    ]
}

/// The unloaded p95 every load shares: over the largest sample of services.
pub fn unloaded_p95() -> Duration {
    Cluster::at(UTILISATIONS[UTILISATIONS.len() - 1]).unloaded(0.95)
}

/// Runs every row at every load, in-service losers served to their end, and checks the
/// acceptance lines.
pub fn run_queueing() -> QueueReport {
    let p95 = unloaded_p95();
    let levels = sweep(&schemes(p95), false);
    let mut report = QueueReport {
        p95,
        levels,
        checks: Vec::new(),
    };
    check_queueing(&mut report);
    report
}

/// The hedged rows at every load, with in-service losers aborted: what cancellation that
/// reaches a copy in service is worth.
pub fn run_aborted(p95: Duration) -> Vec<Level> {
    // Tied requests drop their losers before service but for a start at the same instant.
    let schemes: Vec<Scheme> = schemes(p95)
        .into_iter()
        .filter(|scheme| !matches!(scheme, Scheme::Off | Scheme::Tied(_)))
        .collect();
    sweep(&schemes, true)
}

fn sweep(schemes: &[Scheme], abort_in_service: bool) -> Vec<Level> {
    UTILISATIONS
        .iter()
        .map(|&utilisation| {
            let cluster = Cluster::at(utilisation);
            let runs = schemes
                .iter()
                .map(|&scheme| simulate_queue(&cluster, scheme, abort_in_service))
                .collect();
            Level { cluster, runs }
        })
        .collect()
}
