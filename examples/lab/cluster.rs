//! The replica clusters of workloads (e) and (f): how many replicas, what a service
//! costs, when a replica pauses, and when the calls arrive. Every row of a load runs on
//! the same cluster, so the rows differ only in how they hedge.

use std::time::Duration;

use super::{percentile, MS, STALL_RATE};

/// Replica servers behind the balancer.
pub const SERVERS: usize = 10;
/// The offered loads swept, as shares of capacity counting original copies only.
pub const UTILISATIONS: [f64; 6] = [0.1, 0.3, 0.5, 0.7, 0.8, 0.9];
/// Virtual time each load runs for: long enough for the queues of a busy cluster to show.
const RUN: Duration = Duration::from_secs(30);
/// The log-normal body's σ, as in the other workloads.
const SIGMA: f64 = 0.3;

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
