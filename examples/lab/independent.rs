//! Workloads (a)–(d): each copy's latency is drawn on its own, whatever the load, from a
//! log-normal body and a share of stalls; what changes between them is the median over
//! time and how many calls a request waits for.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable};

use super::engine::{self, Task};
use super::report::{check_brownout, check_shifting, check_stalls};
use super::{percentile, Check, Config, Delay, Run, LEARNT, MS, RATE, STALL_RATE};

/// What the backend does over time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// A steady median; `STALL_RATE` of copies stall.
    Stalls,
    /// Queries, each sent to `servers` servers at once and waiting for all of them.
    FanOut { servers: usize },
    /// The median moves 1 → 5 → 1 ms, a third of the run each.
    Shifting,
    /// Every copy started between `from` and `until` is 10× slower.
    Brownout { from: Duration, until: Duration },
}

/// One simulated workload: how many calls, when they arrive, and how long each copy takes.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub key: char,
    pub title: &'static str,
    pub kind: Kind,
    /// Calls (for a fan-out: queries × servers).
    pub calls: usize,
    /// The median copy latency (before any shift or brownout).
    pub median: Duration,
    pub seed: u64,
}

impl Workload {
    /// The four workloads of the lab, at `scale` times the latencies (1 in the simulation;
    /// the real-clock mode scales them up so timer precision matters less).
    pub fn all(scale: u32) -> [Workload; 4] {
        let median = MS * scale;
        [
            Workload {
                key: 'a',
                title: "2% of copies stall 10-100x the median",
                kind: Kind::Stalls,
                calls: 20_000,
                median,
                seed: 1,
            },
            Workload {
                key: 'b',
                title: "fan-out: 1,000 queries over 100 servers, wait for all",
                kind: Kind::FanOut { servers: 100 },
                calls: 100_000,
                median,
                seed: 2,
            },
            Workload {
                key: 'c',
                title: "shifting: the median moves 1 ms -> 5 ms -> 1 ms",
                kind: Kind::Shifting,
                calls: 48_000,
                median,
                seed: 3,
            },
            Workload {
                key: 'd',
                title: "brownout: every backend 10x slower from 3 s to 6 s",
                kind: Kind::Brownout {
                    from: Duration::from_secs(3),
                    until: Duration::from_secs(6),
                },
                calls: 36_000,
                median,
                seed: 4,
            },
        ]
    }

    /// Workload (a) with `calls` calls at `scale` times the latencies.
    pub fn stalls(scale: u32, calls: usize) -> Workload {
        Workload {
            calls,
            ..Workload::all(scale)[0]
        }
    }

    /// How long the run lasts, arrivals only.
    pub fn duration(&self) -> Duration {
        self.arrival(self.calls.saturating_sub(1)) + Duration::from_nanos(1)
    }

    /// Calls that make one request: the servers of a fan-out query, else 1.
    pub fn fan_out(&self) -> usize {
        match self.kind {
            Kind::FanOut { servers } => servers,
            _ => 1,
        }
    }

    /// When call `call` arrives: `RATE` calls per second, a fan-out's calls together.
    pub fn arrival(&self, call: usize) -> Duration {
        let fan_out = self.fan_out() as u64;
        let request = call as u64 / fan_out;
        Duration::from_nanos(request * fan_out * 1_000_000_000 / RATE)
    }

    /// The median of a copy started at `start`.
    fn median_at(&self, start: Duration) -> Duration {
        match self.kind {
            Kind::Shifting => {
                let third = self.duration() / 3;
                if start >= third && start < third * 2 {
                    self.median * 5
                } else {
                    self.median
                }
            }
            Kind::Brownout { from, until } if start >= from && start < until => self.median * 10,
            _ => self.median,
        }
    }

    /// How long copy `copy` of call `call` takes when started at `start`: a log-normal body
    /// (σ = 0.3) around the median, or a stall of 10–100× the median. The draw depends
    /// only on the seed, the call and the copy, so every configuration sees the same
    /// backend.
    pub fn latency(&self, call: usize, copy: usize, start: Duration) -> Duration {
        draw(
            &mut rng(self.seed, call, copy),
            self.median_at(start),
            STALL_RATE,
        )
    }

    /// The `quantile` of the originals' latencies: the delay an operator would pick in
    /// hindsight. Over the whole run, except for a brownout: there, over the calls before
    /// it, the steady state an operator tunes for.
    pub fn hindsight_delay(&self, quantile: f64) -> Duration {
        let tuned_on = |call: &usize| match self.kind {
            Kind::Brownout { from, .. } => self.arrival(*call) < from,
            _ => true,
        };
        let originals: Vec<Duration> = (0..self.calls)
            .filter(tuned_on)
            .map(|call| self.latency(call, 0, self.arrival(call)))
            .collect();
        percentile(&originals, quantile)
    }

    /// The ideal model: the same samples, a hedge at exactly `delay` after the original
    /// for every call that needs one, no budget, zero overhead. Per request (a fan-out's
    /// request waits for its slowest server).
    pub fn ideal(&self, delay: Option<Duration>) -> Vec<Duration> {
        let per_call = (0..self.calls).map(|call| {
            let start = self.arrival(call);
            let original = self.latency(call, 0, start);
            match delay {
                Some(delay) if original > delay => {
                    original.min(delay + self.latency(call, 1, start + delay))
                }
                _ => original,
            }
        });
        per_request(self.fan_out(), per_call)
    }

    /// Extra copies per call of the ideal model at `delay`: the share of originals slower
    /// than it.
    pub fn ideal_extra(&self, delay: Duration) -> f64 {
        let originals = self.sorted_originals();
        extra_above(&originals, delay)
    }

    /// Every original's latency, sorted.
    pub fn sorted_originals(&self) -> Vec<Duration> {
        let mut originals: Vec<Duration> = (0..self.calls)
            .map(|call| self.latency(call, 0, self.arrival(call)))
            .collect();
        originals.sort_unstable();
        originals
    }
}

/// The generator of copy `copy` of call `call` under `seed`: the same draw in every
/// configuration.
pub(super) fn rng(seed: u64, call: usize, copy: usize) -> fastrand::Rng {
    fastrand::Rng::with_seed(
        seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add((call as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
            .wrapping_add((copy as u64).wrapping_mul(0x94d0_49bb_1331_11eb)),
    )
}

/// A latency around `median`: for `stall_rate` of draws a stall of 10–100× it, else a
/// log-normal body (σ = 0.3).
pub(super) fn draw(rng: &mut fastrand::Rng, median: Duration, stall_rate: f64) -> Duration {
    let median = median.as_secs_f64();
    let seconds = if rng.f64() < stall_rate {
        median * (10.0 + 90.0 * rng.f64())
    } else {
        let (u1, u2) = (1.0 - rng.f64(), rng.f64());
        let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        median * (0.3 * normal).exp()
    };
    micros(seconds)
}

/// `seconds` in whole microseconds, which keep the figures exact across platforms' float
/// formatting.
pub(super) fn micros(seconds: f64) -> Duration {
    Duration::from_micros((seconds * 1e6).round() as u64)
}

/// The share of `sorted` latencies above `delay`.
pub(super) fn extra_above(sorted: &[Duration], delay: Duration) -> f64 {
    let at_or_below = sorted.partition_point(|latency| *latency <= delay);
    (sorted.len() - at_or_below) as f64 / sorted.len() as f64
}

/// A fan-out request's latency is its slowest call's.
pub(super) fn per_request(
    fan_out: usize,
    per_call: impl Iterator<Item = Duration>,
) -> Vec<Duration> {
    let per_call: Vec<Duration> = per_call.collect();
    per_call
        .chunks(fan_out)
        .map(|calls| calls.iter().copied().max().unwrap_or_default())
        .collect()
}

/// Runs `config` on `workload` in virtual time: calls arrive on schedule, each is one
/// `Hedge` polled only when woken, and the clock jumps to the next arrival or deadline.
pub fn simulate(workload: &Workload, config: Config) -> Run {
    simulate_with(workload, config, 0.0)
}

/// [`simulate`] with [`min_win_rate`](hedging::PolicyBuilder::min_win_rate) set to
/// `min_win_rate` (0: off) on the row's policy.
pub fn simulate_with(workload: &Workload, config: Config, min_win_rate: f64) -> Run {
    let timer = ManualTimer::new();
    let policy = config
        .builder(timer.clone())
        .min_win_rate(min_win_rate)
        .build();
    let seconds = workload.duration().as_secs() as usize + 1;
    let per_second = Rc::new(RefCell::new(vec![(0u64, 0u64); seconds]));
    let latencies = Rc::new(RefCell::new(vec![Duration::ZERO; workload.calls]));

    let spawn = |call: usize| -> Task {
        let (timer, per_second, latencies, workload) = (
            timer.clone(),
            Rc::clone(&per_second),
            Rc::clone(&latencies),
            *workload,
        );
        let policy = policy.clone();
        Box::pin(async move {
            let arrived = timer.now();
            per_second.borrow_mut()[arrived.as_secs() as usize].0 += 1;
            let factory = {
                let (timer, per_second) = (timer.clone(), Rc::clone(&per_second));
                move |attempt: Attempt| {
                    let start = timer.now();
                    if attempt.is_hedge() {
                        per_second.borrow_mut()[arrived.as_secs() as usize].1 += 1;
                    }
                    let sleep = timer.sleep(workload.latency(call, attempt.index(), start));
                    async move {
                        sleep.await;
                        Ok::<(), ()>(())
                    }
                }
            };
            let answer = factory.hedged(&policy).await;
            assert_eq!(answer, Ok(()), "simulated copies always succeed");
            latencies.borrow_mut()[call] = timer.now() - arrived;
        })
    };
    engine::drive(
        &timer,
        workload.calls,
        |call| workload.arrival(call),
        spawn,
        Vec::new(),
    );

    let stats = policy.stats();
    let latencies = latencies.take();
    let per_second = per_second.take();
    Run {
        config,
        latencies: per_request(workload.fan_out(), latencies.into_iter()),
        calls: stats.calls,
        extra_copies: stats.hedges,
        budget_denied: stats.budget_denied,
        withheld: stats.withheld,
        per_second,
    }
}

/// One row: a run and the ideal model beside it.
#[derive(Clone, Debug)]
pub struct Row {
    pub run: Run,
    pub ideal: Vec<Duration>,
}

/// Every row of one workload, and the acceptance checks that apply to it.
#[derive(Clone, Debug)]
pub struct Report {
    pub workload: Workload,
    /// The originals' p95 over the run: the fixed rows' delay.
    pub p95: Duration,
    pub rows: Vec<Row>,
    /// (c) only: the best fixed delay in hindsight at no more extra copies than the
    /// adaptive row, and its run.
    pub best_fixed: Option<Run>,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn row(&self, delay: fn(&Delay) -> bool, budget: bool) -> &Run {
        &self
            .rows
            .iter()
            .find(|row| delay(&row.run.config.delay) && row.run.config.budget == budget)
            .expect("every configuration has a row")
            .run
    }

    pub fn unhedged(&self) -> &Run {
        self.row(|delay| *delay == Delay::Off, false)
    }

    pub fn fixed(&self, budget: bool) -> &Run {
        self.row(|delay| matches!(delay, Delay::Fixed(_)), budget)
    }

    pub fn adaptive(&self, budget: bool) -> &Run {
        self.row(|delay| matches!(delay, Delay::Adaptive(_)), budget)
    }

    /// The README's recommendation: `optimal_delay(0.99)` with the budget.
    pub fn recommended(&self) -> &Run {
        self.row(|delay| matches!(delay, Delay::Optimal(_)), true)
    }
}

/// Runs every configuration on `workload` and checks its acceptance lines.
pub fn run(workload: &Workload) -> Report {
    let p95 = workload.hindsight_delay(0.95);
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
            delay: Delay::Fixed(p95),
            budget: true,
        },
    ]
    .into_iter()
    .chain(LEARNT);
    let ideal_off = workload.ideal(None);
    let ideal_hedged = workload.ideal(Some(p95));
    let rows = configs
        .map(|config| Row {
            ideal: if config.delay == Delay::Off {
                ideal_off.clone()
            } else {
                ideal_hedged.clone()
            },
            run: simulate(workload, config),
        })
        .collect();
    let mut report = Report {
        workload: *workload,
        p95,
        rows,
        best_fixed: None,
        checks: Vec::new(),
    };
    match workload.kind {
        Kind::Stalls => check_stalls(&mut report),
        Kind::Shifting => check_shifting(&mut report),
        Kind::Brownout { from, until } => check_brownout(&mut report, from, until),
        Kind::FanOut { .. } => {}
    }
    report
}
