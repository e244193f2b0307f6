//! The suite for the overhead bench.

#[allow(unused_imports)]
use super::*;

/// What a case is measured against in the table.
#[derive(Clone, Copy)]
pub(crate) struct Row {
    pub(crate) id: &'static str,
    /// The bare case of the same workload.
    pub(crate) bare: &'static str,
    /// The bare case plus this timer's own work, for hedged cases that arm one.
    pub(crate) timer_alone: Option<&'static str>,
    /// For a peer: our case on the same workload and timer.
    pub(crate) ours: Option<&'static str>,
    pub(crate) allocations: f64,
    /// For our cases: hedges started per call over the whole run (0 on these workloads).
    pub(crate) hedges_per_call: Option<f64>,
}

pub(crate) enum Mode {
    Bench(Box<Criterion>),
    Profile { case: String, iters: u64 },
}

pub(crate) struct Suite {
    pub(crate) mode: Mode,
    pub(crate) rows: Vec<Row>,
}

impl Suite {
    fn case<R>(
        &mut self,
        row: (
            &'static str,
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
        ),
        mut call: impl FnMut() -> R,
    ) {
        let (id, bare, timer_alone, ours) = row;
        match &mut self.mode {
            Mode::Profile { case, iters } => {
                if case == id {
                    for _ in 0..*iters {
                        black_box(call());
                    }
                }
            }
            Mode::Bench(criterion) => {
                let allocations = allocations_per_call(&mut call);
                criterion.bench_function(id, |b| b.iter(&mut call));
                self.rows.push(Row {
                    id,
                    bare,
                    timer_alone,
                    ours,
                    allocations,
                    hedges_per_call: None,
                });
            }
        }
    }

    /// A case of ours: also records how many hedges its calls started.
    fn hedged_case<T: Timer, R>(
        &mut self,
        row: (
            &'static str,
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
        ),
        policy: &Policy<T>,
        call: impl FnMut() -> R,
    ) {
        policy.reset_stats();
        self.case(row, call);
        let stats = policy.stats();
        if let Some(row) = self.rows.last_mut().filter(|last| last.id == row.0) {
            row.hedges_per_call = Some(stats.hedges as f64 / stats.calls.max(1) as f64);
        }
    }

    /// A case run on `threads` threads at once; `per_thread(calls)` runs `calls` calls
    /// on each and returns the slowest thread's time.
    fn threads_case(
        &mut self,
        (id, bare, threads): (&'static str, &'static str, u64),
        per_thread: impl Fn(u64) -> Duration,
    ) {
        match &mut self.mode {
            Mode::Profile { case, iters } => {
                if case == id {
                    black_box(per_thread(*iters));
                }
            }
            Mode::Bench(criterion) => {
                // Spawning the threads allocates too: a few per run of 10,000 calls each.
                const CALLS: u64 = 10_000;
                let before = ALLOCATIONS.load(Relaxed);
                per_thread(CALLS);
                let allocations =
                    (ALLOCATIONS.load(Relaxed) - before) as f64 / (CALLS * threads) as f64;
                criterion.bench_function(id, |b| b.iter_custom(&per_thread));
                self.rows.push(Row {
                    id,
                    bare,
                    timer_alone: None,
                    ours: None,
                    allocations,
                    hedges_per_call: None,
                });
            }
        }
    }
}

pub(crate) fn ready_reply(key: u64) -> std::future::Ready<Reply> {
    ready(Ok(key))
}

pub(crate) fn ready_cases(suite: &mut Suite) {
    const BARE: &str = "ready/bare";
    const OURS: &str = "ready/hedging_2_copies_tokio";
    let one = policy(1, FuturesTimer);
    let three = policy(3, FuturesTimer);
    let two_tokio = policy(2, TokioTimer::new());

    suite.case((BARE, BARE, None, None), || {
        drive(ready_reply(black_box(7)))
    });
    suite.hedged_case(("ready/hedging_1_copy", BARE, None, None), &one, || {
        drive((|| ready_reply(black_box(7))).hedged(&one))
    });
    suite.hedged_case(("ready/hedging_3_copies", BARE, None, None), &three, || {
        drive((|| ready_reply(black_box(7))).hedged(&three))
    });
    suite.hedged_case((OURS, BARE, None, None), &two_tokio, || {
        drive((|| ready_reply(black_box(7))).hedged(&two_tokio))
    });

    // A keyed call on a policy with keys, against the same call unkeyed: the key is
    // looked up only by a race, so the ready path does the hash alone.
    let keyed = keyed_policy(TokioTimer::new());
    suite.hedged_case(("ready/adaptive_unkeyed", BARE, None, None), &keyed, || {
        drive((|| ready_reply(black_box(7))).hedged(&keyed))
    });
    suite.hedged_case(("ready/adaptive_keyed", BARE, None, None), &keyed, || {
        drive(
            (|| ready_reply(black_box(7)))
                .hedged(&keyed)
                .key(black_box(KEY)),
        )
    });

    let mut tower = tower_hedge(tower::service_fn(|key: u64| ready_reply(key)));
    suite.case(("ready/tower_hedge", BARE, None, Some(OURS)), || {
        call_service(&mut tower, black_box(7)).map_err(drop)
    });
    let mut resilience = resilience_hedge(tower::service_fn(|key: u64| ready_reply(key)));
    suite.case(
        ("ready/tower_resilience_hedge", BARE, None, Some(OURS)),
        || call_service(&mut resilience, black_box(7)).map_err(drop),
    );
    let hedged = hedged_crate();
    suite.case(("ready/hedged", BARE, None, Some(OURS)), || {
        drive(hedged.send(|| ready_reply(black_box(7)))).0
    });
}

/// The timer's own part of the armed path, with no combinator: make the sleep, poll it
/// once (it registers), run the request, drop the sleep.
#[inline(always)]
pub(crate) fn bare_with_timer<T: Timer>(timer: &T) -> Reply {
    let mut sleep = pin!(timer.sleep(DELAY));
    let mut cx = Context::from_waker(Waker::noop());
    if sleep.as_mut().poll(&mut cx).is_ready() {
        EARLY_FIRES.fetch_add(1, Relaxed);
    }
    drive(PendingOnce::new(Ok(black_box(7))))
}

/// Sleeps of `DELAY` that were ready on their first poll, made by `bare_with_timer`.
pub(crate) static EARLY_FIRES: AtomicU64 = AtomicU64::new(0);

pub(crate) fn pending_once_cases(suite: &mut Suite) {
    const BARE: &str = "pending_once/bare";
    const FUTURES_TIMER: &str = "pending_once/bare+futures_timer";
    const ASYNC_IO: &str = "pending_once/bare+async_io";
    const TOKIO: &str = "pending_once/bare+tokio_sleep";
    const OURS: &str = "pending_once/hedging_tokio";
    let futures_timer = policy(2, FuturesTimer);
    let async_io = policy(2, AsyncIoTimer);
    let tokio = policy(2, TokioTimer::new());

    suite.case((BARE, BARE, None, None), || {
        drive(PendingOnce::new(Ok(black_box(7))))
    });
    suite.case((FUTURES_TIMER, BARE, None, None), || {
        bare_with_timer(&FuturesTimer)
    });
    suite.case((ASYNC_IO, BARE, None, None), || {
        bare_with_timer(&AsyncIoTimer)
    });
    let tokio_timer = TokioTimer::new();
    suite.case((TOKIO, BARE, None, None), || bare_with_timer(&tokio_timer));

    // Hedging off: one copy, pending once. No timer is armed, so it is compared with bare.
    let one = policy(1, FuturesTimer);
    suite.hedged_case(
        ("pending_once/hedging_1_copy", BARE, None, None),
        &one,
        || drive((|| PendingOnce::new(Ok(black_box(7)))).hedged(&one)),
    );

    let row = (
        "pending_once/hedging_futures_timer",
        BARE,
        Some(FUTURES_TIMER),
        None,
    );
    suite.hedged_case(row, &futures_timer, || {
        drive((|| PendingOnce::new(Ok(black_box(7)))).hedged(&futures_timer))
    });
    let row = ("pending_once/hedging_async_io", BARE, Some(ASYNC_IO), None);
    suite.hedged_case(row, &async_io, || {
        drive((|| PendingOnce::new(Ok(black_box(7)))).hedged(&async_io))
    });
    suite.hedged_case((OURS, BARE, Some(TOKIO), None), &tokio, || {
        drive((|| PendingOnce::new(Ok(black_box(7)))).hedged(&tokio))
    });

    // The armed path of an adaptive delay with keys: unkeyed, the policy-wide estimate;
    // keyed, the key's own, looked up for the delay and again for the record.
    let keyed = keyed_policy(TokioTimer::new());
    let row = (
        "pending_once/adaptive_unkeyed_tokio",
        BARE,
        Some(TOKIO),
        None,
    );
    suite.hedged_case(row, &keyed, || {
        drive((|| PendingOnce::new(Ok(black_box(7)))).hedged(&keyed))
    });
    let row = ("pending_once/adaptive_keyed_tokio", BARE, Some(TOKIO), None);
    suite.hedged_case(row, &keyed, || {
        drive(
            (|| PendingOnce::new(Ok(black_box(7))))
                .hedged(&keyed)
                .key(black_box(KEY)),
        )
    });

    let mut tower = tower_hedge(tower::service_fn(|key: u64| PendingOnce::new(Ok(key))));
    suite.case(
        ("pending_once/tower_hedge", BARE, Some(TOKIO), Some(OURS)),
        || call_service(&mut tower, black_box(7)).map_err(drop),
    );
    let mut resilience = resilience_hedge(tower::service_fn(|key: u64| PendingOnce::new(Ok(key))));
    suite.case(
        (
            "pending_once/tower_resilience_hedge",
            BARE,
            Some(TOKIO),
            Some(OURS),
        ),
        || call_service(&mut resilience, black_box(7)).map_err(drop),
    );
    let hedged = hedged_crate();
    suite.case(
        ("pending_once/hedged", BARE, Some(TOKIO), Some(OURS)),
        || drive(hedged.send(|| PendingOnce::new(Ok(black_box(7))))).0,
    );
}

/// A timer that fires at its first poll, on a real clock: every call whose original is
/// pending has its hedge due at once, and the race asks the budget for it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FiresAtOnce {
    pub(crate) origin: Instant,
}

impl Timer for FiresAtOnce {
    type Sleep = std::future::Ready<()>;

    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn sleep(&self, _after: Duration) -> Self::Sleep {
        ready(())
    }
}

/// Calls that need no copy per hedged call in the budget cases: at a ratio of 0.1, ten of
/// them earn the token one hedge takes, so a budget admits every hedge.
pub(crate) const EARNERS_PER_HEDGE: usize = 10;

/// One turn of the budget cases: ten calls whose original is ready at once, then one whose
/// original is pending once while its hedge, started by the timer, asks the budget.
#[inline(always)]
pub(crate) fn hedged_with_earners(policy: &Policy<FiresAtOnce>) -> Reply {
    for _ in 0..EARNERS_PER_HEDGE {
        let _ = black_box(drive((|| ready_reply(black_box(7))).hedged(policy)));
    }
    drive((|| PendingOnce::new(Ok(black_box(7)))).hedged(policy))
}

/// The budget's cost on the hedging path: the same turn without a budget, with a token
/// bucket whose savings follow the traffic, and with one of a fixed burst.
pub(crate) fn budget_cases(suite: &mut Suite) {
    const NO_BUDGET: &str = "hedged/no_budget";
    let timer = FiresAtOnce {
        origin: Instant::now(),
    };
    let unbounded = policy(2, timer);
    suite.hedged_case((NO_BUDGET, NO_BUDGET, None, None), &unbounded, || {
        hedged_with_earners(&unbounded)
    });
    for (id, budget) in [
        ("hedged/budget_0_1", Budget::new(0.1)),
        ("hedged/budget_0_1_burst_10", Budget::new(0.1).burst(10.0)),
    ] {
        let bounded = Policy::builder()
            .max_copies(2)
            .delay(DELAY)
            .budget(&budget)
            .timer(timer)
            .build();
        suite.hedged_case((id, NO_BUDGET, None, None), &bounded, || {
            hedged_with_earners(&bounded)
        });
        let stats = bounded.stats();
        assert_eq!(
            stats.budget_denied, 0,
            "{id}: the budget admits every hedge"
        );
        let turns = stats.calls / (EARNERS_PER_HEDGE as u64 + 1);
        assert_eq!(stats.hedges, turns, "{id}: every turn starts its hedge");
    }
}

/// Runs `calls` fast-path calls on each of `policies` at once, one thread per entry
/// (`None`: a bare call); returns the slowest thread's time.
pub(crate) fn on_threads(calls: u64, policies: &[Option<&Policy>]) -> Duration {
    let barrier = Barrier::new(policies.len());
    std::thread::scope(|scope| {
        let threads: Vec<_> = policies
            .iter()
            .map(|policy| {
                let barrier = &barrier;
                scope.spawn(move || {
                    // The thread's first call claims its stats shard; keep it off the clock.
                    if let Some(policy) = policy {
                        black_box(drive((|| ready_reply(black_box(7))).hedged(*policy)).ok());
                    }
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..calls {
                        match policy {
                            Some(policy) => black_box(
                                drive((|| ready_reply(black_box(7))).hedged(*policy)).ok(),
                            ),
                            None => black_box(drive(ready_reply(black_box(7))).ok()),
                        };
                    }
                    start.elapsed()
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("a benchmark thread panicked"))
            .max()
            .expect("at least one thread")
    })
}

pub(crate) fn shared_policy_cases(suite: &mut Suite) {
    const BARE: &str = "threads/bare_2_threads";
    let shared = policy(3, FuturesTimer);
    let own = policy(3, FuturesTimer);
    suite.threads_case(("threads/1_thread", "threads/bare_1_thread", 1), |calls| {
        on_threads(calls, &[Some(&shared)])
    });
    suite.threads_case(
        ("threads/bare_1_thread", "threads/bare_1_thread", 1),
        |calls| on_threads(calls, &[None]),
    );
    suite.threads_case((BARE, BARE, 2), |calls| on_threads(calls, &[None, None]));
    suite.threads_case(("threads/2_threads_own_policies", BARE, 2), |calls| {
        on_threads(calls, &[Some(&shared), Some(&own)])
    });
    suite.threads_case(("threads/2_threads_one_policy", BARE, 2), |calls| {
        on_threads(calls, &[Some(&shared), Some(&shared)])
    });
}
