//! What hedging costs: `Hedge` against a bare `.await` and against peer crates, on the
//! same workloads, in one run.
//!
//! ```sh
//! nice -n 10 cargo bench --all-features --bench overhead
//! ```
//!
//! runs every case under criterion, then measures allocations per call (a counting
//! global allocator), the hedge's launch lateness under a real clock, and future sizes,
//! and prints one markdown table of medians and ratios (README, "Performance").
//!
//! `HEDGING_BENCH_PROFILE=<case> HEDGING_BENCH_ITERS=<n>` runs one case `n` times and
//! nothing else, for `valgrind --tool=callgrind` (see `benches/instructions.sh`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::{ready, Future};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Barrier;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use criterion::Criterion;
use futures::future::Either;
use hedging::timer::{AsyncIoTimer, FuturesTimer, Timer, TokioTimer};
use hedging::{Attempt, Budget, Hedgeable, Policy};
use tower::{Layer, Service};

// ---------------------------------------------------------------------------------------
// Allocation counting

/// The system allocator, counting every allocation made by any thread.
struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees are the caller's; the counter has no effect on memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations (and reallocations) per call, averaged over enough calls to hide the
/// one-off ones (a thread's first stats shard, a timer thread's start).
fn allocations_per_call<R>(call: &mut impl FnMut() -> R) -> f64 {
    const WARM_UP: u64 = 100;
    const CALLS: u64 = 10_000;
    for _ in 0..WARM_UP {
        black_box(call());
    }
    let before = ALLOCATIONS.load(Relaxed);
    for _ in 0..CALLS {
        black_box(call());
    }
    (ALLOCATIONS.load(Relaxed) - before) as f64 / CALLS as f64
}

// ---------------------------------------------------------------------------------------
// Workloads

/// The copies' error: `Clone` and `std::error::Error`, as the peers require.
#[derive(Clone, Copy, Debug)]
struct BackendError;

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("backend error")
    }
}

impl std::error::Error for BackendError {}

type Reply = Result<u64, BackendError>;

/// A request that answers on the executor's next turn: `Pending` on its first poll (after
/// waking its task), ready on the second.
#[derive(Debug)]
struct PendingOnce {
    reply: Option<Reply>,
    yielded: bool,
}

impl PendingOnce {
    fn new(reply: Reply) -> Self {
        PendingOnce {
            reply: Some(reply),
            yielded: false,
        }
    }
}

impl Future for PendingOnce {
    type Output = Reply;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        if self.yielded {
            Poll::Ready(
                self.reply
                    .take()
                    .expect("`PendingOnce` polled after completion"),
            )
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// A typical copy future: an `async fn` that holds its request while it waits.
async fn fetch(key: u64) -> Reply {
    PendingOnce::new(Ok(key)).await
}

/// Polls `future` with a no-op waker until it is ready, as an executor whose task is
/// woken at once would. The waker is hidden from the optimiser, as a real executor's is:
/// seen through, a bare future that yields once folds to nothing and its wake-up and
/// second poll would count against the hedged case alone.
#[inline(always)]
fn drive<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(black_box(Waker::noop()));
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// The delay every policy uses on the micro-benchmarks: far beyond a call's length, so
/// the first copy always wins and the timer never fires.
const DELAY: Duration = Duration::from_millis(10);

/// The delay of the launch-lateness runs.
const LATENESS_DELAY: Duration = Duration::from_millis(1);

fn policy<T: Timer>(max_copies: usize, timer: T) -> Policy<T> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(DELAY)
        .timer(timer)
        .build()
}

/// tower's hedge, told its latency percentile is `DELAY` so that it arms a hedge.
fn tower_hedge<S>(service: S) -> tower::hedge::Hedge<S, ClonePolicy>
where
    S: Service<u64, Error = BackendError> + Clone,
{
    let latencies = [DELAY.as_millis() as u64; 20];
    tower::hedge::Hedge::new_with_mock_latencies(
        service,
        ClonePolicy,
        1,
        0.9,
        Duration::from_secs(60),
        &latencies,
    )
}

#[derive(Clone, Copy, Debug)]
struct ClonePolicy;

impl tower::hedge::Policy<u64> for ClonePolicy {
    fn clone_request(&self, request: &u64) -> Option<u64> {
        Some(*request)
    }

    fn can_retry(&self, _request: &u64) -> bool {
        true
    }
}

fn resilience_hedge<S>(service: S) -> tower_resilience_hedge::Hedge<S>
where
    S: Service<u64, Error = BackendError>,
{
    tower_resilience_hedge::HedgeLayer::builder()
        .delay(DELAY)
        .max_hedged_attempts(2)
        .build()
        .layer(service)
}

fn hedged_crate() -> hedged::Hedge {
    // One sample per `u64::MAX` calls: the delay stays `DELAY` for the whole run.
    hedged::Hedge::new(7, 64, DELAY, u64::MAX, 0.95).expect("valid histogram settings")
}

/// One call through a tower service: `poll_ready`, `call`, and the response driven.
#[inline(always)]
fn call_service<S: Service<u64>>(service: &mut S, request: u64) -> Result<S::Response, S::Error> {
    let mut cx = Context::from_waker(Waker::noop());
    match service.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {}
        Poll::Ready(Err(error)) => return Err(error),
        Poll::Pending => unreachable!("the benchmark services are always ready"),
    }
    drive(service.call(request))
}

// ---------------------------------------------------------------------------------------
// The suite

/// What a case is measured against in the table.
#[derive(Clone, Copy)]
struct Row {
    id: &'static str,
    /// The bare case of the same workload.
    bare: &'static str,
    /// The bare case plus this timer's own work, for hedged cases that arm one.
    timer_alone: Option<&'static str>,
    /// For a peer: our case on the same workload and timer.
    ours: Option<&'static str>,
    allocations: f64,
    /// For our cases: hedges started per call over the whole run (0 on these workloads).
    hedges_per_call: Option<f64>,
}

enum Mode {
    Bench(Box<Criterion>),
    Profile { case: String, iters: u64 },
}

struct Suite {
    mode: Mode,
    rows: Vec<Row>,
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

fn ready_reply(key: u64) -> std::future::Ready<Reply> {
    ready(Ok(key))
}

fn ready_cases(suite: &mut Suite) {
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
fn bare_with_timer<T: Timer>(timer: &T) -> Reply {
    let mut sleep = pin!(timer.sleep(DELAY));
    let mut cx = Context::from_waker(Waker::noop());
    if sleep.as_mut().poll(&mut cx).is_ready() {
        EARLY_FIRES.fetch_add(1, Relaxed);
    }
    drive(PendingOnce::new(Ok(black_box(7))))
}

/// Sleeps of `DELAY` that were ready on their first poll, made by `bare_with_timer`.
static EARLY_FIRES: AtomicU64 = AtomicU64::new(0);

fn pending_once_cases(suite: &mut Suite) {
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
struct FiresAtOnce {
    origin: Instant,
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
const EARNERS_PER_HEDGE: usize = 10;

/// One turn of the budget cases: ten calls whose original is ready at once, then one whose
/// original is pending once while its hedge, started by the timer, asks the budget.
#[inline(always)]
fn hedged_with_earners(policy: &Policy<FiresAtOnce>) -> Reply {
    for _ in 0..EARNERS_PER_HEDGE {
        let _ = black_box(drive((|| ready_reply(black_box(7))).hedged(policy)));
    }
    drive((|| PendingOnce::new(Ok(black_box(7)))).hedged(policy))
}

/// The budget's cost on the hedging path: the same turn without a budget, with a token
/// bucket whose savings follow the traffic, and with one of a fixed burst.
fn budget_cases(suite: &mut Suite) {
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
fn on_threads(calls: u64, policies: &[Option<&Policy>]) -> Duration {
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

fn shared_policy_cases(suite: &mut Suite) {
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

// ---------------------------------------------------------------------------------------
// Launch lateness under a real clock

/// One call whose original never answers, so the hedge wins; returns how long after its
/// due time the hedge started. The due time is counted from just before the original
/// was made, so the figure errs on the late side.
async fn hedge_lateness<T: Timer>(policy: &Policy<T>) -> Duration {
    let original_started = Cell::new(None);
    let hedge_started = Cell::new(None);
    let reply = (|attempt: Attempt| {
        if attempt.is_hedge() {
            hedge_started.set(Some(Instant::now()));
            Either::Left(ready_reply(7))
        } else {
            original_started.set(Some(Instant::now()));
            Either::Right(std::future::pending::<Reply>())
        }
    })
    .hedged(policy)
    .await;
    assert_eq!(reply.ok(), Some(7));
    let started = |cell: Cell<Option<Instant>>| cell.get().expect("the copy started");
    (started(hedge_started) - started(original_started)).saturating_sub(LATENESS_DELAY)
}

/// The same for the timer alone: how long after its deadline a sleep's task resumes.
async fn timer_lateness<T: Timer>(timer: &T) -> Duration {
    let start = Instant::now();
    timer.sleep(LATENESS_DELAY).await;
    start.elapsed().saturating_sub(LATENESS_DELAY)
}

struct Lateness {
    timer: &'static str,
    executor: &'static str,
    calls: usize,
    /// (p50, p99) of the timer alone.
    timer_alone: (Duration, Duration),
    /// (p50, p99) of the hedge's launch.
    hedge: (Duration, Duration),
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort_unstable();
    let at = |quantile: f64| samples[((samples.len() - 1) as f64 * quantile).round() as usize];
    (at(0.5), at(0.99))
}

fn measure_lateness<T: Timer>(
    timer: T,
    timer_name: &'static str,
    executor: &'static str,
    calls: usize,
    block_on: impl Fn(Pin<&mut dyn Future<Output = Duration>>) -> Duration,
) -> Lateness {
    let policy = Policy::builder()
        .max_copies(2)
        .delay(LATENESS_DELAY)
        .timer(timer.clone())
        .build();
    let timer_alone = (0..calls)
        .map(|_| block_on(pin!(timer_lateness(&timer))))
        .collect();
    let hedge = (0..calls)
        .map(|_| block_on(pin!(hedge_lateness(&policy))))
        .collect();
    Lateness {
        timer: timer_name,
        executor,
        calls,
        timer_alone: percentiles(timer_alone),
        hedge: percentiles(hedge),
    }
}

fn lateness(calls: usize) -> Vec<Lateness> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    vec![
        measure_lateness(
            FuturesTimer,
            "futures-timer",
            "futures::executor",
            calls,
            |call| futures::executor::block_on(call),
        ),
        measure_lateness(
            AsyncIoTimer,
            "async-io",
            "async_io::block_on",
            calls,
            |call| async_io::block_on(call),
        ),
        measure_lateness(
            TokioTimer::new(),
            "tokio (`TokioTimer`)",
            "tokio current-thread",
            calls,
            |call| tokio.block_on(call),
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Sizes

fn sizes() -> Vec<(&'static str, usize)> {
    let futures_timer = policy(2, FuturesTimer);
    let async_io = policy(2, AsyncIoTimer);
    let tokio = policy(2, TokioTimer::new());
    let mut tower = tower_hedge(tower::service_fn(fetch));
    let hedged = hedged_crate();
    let key = black_box(7);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(tower.poll_ready(&mut cx).is_ready());
    let sizes = vec![
        (
            "copy future alone (`async fn fetch(key: u64)`)",
            size_of_val(&fetch(key)),
        ),
        (
            "`Hedge`, `&Policy<FuturesTimer>`",
            size_of_val(&(move || fetch(key)).hedged(&futures_timer)),
        ),
        (
            "`Hedge`, `&Policy<AsyncIoTimer>`",
            size_of_val(&(move || fetch(key)).hedged(&async_io)),
        ),
        (
            "`Hedge`, `&Policy<TokioTimer>`",
            size_of_val(&(move || fetch(key)).hedged(&tokio)),
        ),
        (
            "`Hedge`, owned `Policy<FuturesTimer>`",
            size_of_val(&(move || fetch(key)).hedged(futures_timer.clone())),
        ),
        (
            "`tower::hedge` response future",
            size_of_val(&tower.call(key)),
        ),
        (
            "`hedged::Hedge::send` future",
            size_of_val(&hedged.send(move || fetch(key))),
        ),
    ];
    sizes
}

// ---------------------------------------------------------------------------------------
// The table

/// Median nanoseconds per call of every case this run measured, from criterion's files.
fn medians(dir: &Path, since: SystemTime) -> BTreeMap<String, f64> {
    let mut medians = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if !(path.ends_with("new/benchmark.json")) {
                continue;
            }
            let estimates = path.with_file_name("estimates.json");
            let fresh = std::fs::metadata(&estimates)
                .and_then(|meta| meta.modified())
                .is_ok_and(|modified| modified >= since);
            if !fresh {
                continue;
            }
            let read = |path: &Path| -> Option<serde_json::Value> {
                serde_json::from_slice(&std::fs::read(path).ok()?).ok()
            };
            let (Some(benchmark), Some(estimates)) = (read(&path), read(&estimates)) else {
                continue;
            };
            let id = benchmark["full_id"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| benchmark["group_id"].as_str().map(str::to_owned));
            let median = estimates["median"]["point_estimate"].as_f64();
            if let (Some(id), Some(median)) = (id, median) {
                medians.insert(id, median);
            }
        }
    }
    medians
}

fn ns(value: f64) -> String {
    if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

fn us(value: Duration) -> String {
    format!("{:.1}", value.as_secs_f64() * 1e6)
}

fn table(
    rows: &[Row],
    medians: &BTreeMap<String, f64>,
    lateness: &[Lateness],
    sizes: &[(&str, usize)],
) -> String {
    let mut out = String::new();
    let median = |id: &str| medians.get(id).copied();
    let cell = |value: Option<String>| value.unwrap_or_else(|| "–".to_owned());

    out.push_str("| case | median ns/call | over bare, ns | × bare | over timer alone, ns | peer ÷ hedging | allocations/call | hedges/call |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in rows {
        let this = median(row.id);
        let bare = median(row.bare);
        let over = |base: Option<f64>| this.zip(base).map(|(this, base)| ns(this - base));
        let times_bare = this
            .zip(bare)
            .map(|(this, bare)| format!("{:.2}", this / bare));
        let over_bare = (row.id != row.bare).then(|| over(bare)).flatten();
        let over_timer = row.timer_alone.and_then(|timer| over(median(timer)));
        let peer = row
            .ours
            .and_then(median)
            .zip(this)
            .map(|(ours, this)| format!("{:.1}", this / ours));
        let allocations = (!row.allocations.is_nan()).then(|| format!("{:.2}", row.allocations));
        let hedges = row.hedges_per_call.map(|hedges| format!("{hedges:.4}"));
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            row.id,
            cell(this.map(ns)),
            cell(over_bare),
            cell(times_bare),
            cell(over_timer),
            cell(peer),
            cell(allocations),
            cell(hedges),
        );
    }
    let early = EARLY_FIRES.load(Relaxed);
    if early > 0 {
        let _ = writeln!(out, "\n{early} sleeps of {DELAY:?} in the `bare+…` cases were ready on their first poll (the thread was descheduled past their deadline).");
    }

    out.push_str("\n| performance budget | measured | held |\n|---|---:|:---:|\n");
    let over = |id: &str, base: &str| median(id).zip(median(base)).map(|(a, b)| a - b);
    let mut budget = |what: String,
                      measured: Option<f64>,
                      shown: &dyn Fn(f64) -> String,
                      held: &dyn Fn(f64) -> bool| {
        let (shown, held) = match measured {
            Some(value) => (shown(value), if held(value) { "yes" } else { "no" }),
            None => ("–".to_owned(), "–"),
        };
        let _ = writeln!(out, "| {what} | {shown} | {held} |");
    };
    let plus_ns = |value: f64| format!("{} ns", ns(value));
    // The ready and hedging-off budgets are in instructions (`benches/instructions.sh`);
    // here, their allocations.
    let allocations = |id: &str| {
        rows.iter()
            .find(|row| row.id == id)
            .map(|row| row.allocations)
    };
    for case in [
        "ready/hedging_1_copy",
        "ready/hedging_3_copies",
        "pending_once/hedging_1_copy",
    ] {
        budget(
            format!("`{case}` allocates nothing"),
            allocations(case),
            &|value| format!("{value:.2} per call"),
            &|value| value == 0.0,
        );
    }
    for (case, timer) in [
        (
            "pending_once/hedging_futures_timer",
            "pending_once/bare+futures_timer",
        ),
        (
            "pending_once/hedging_async_io",
            "pending_once/bare+async_io",
        ),
        (
            "pending_once/hedging_tokio",
            "pending_once/bare+tokio_sleep",
        ),
    ] {
        budget(
            format!("`{case}` within 45 ns of the timer alone"),
            over(case, timer),
            &plus_ns,
            &|v| v <= 45.0,
        );
    }
    let share =
        |ours: Option<f64>, tower: Option<f64>| ours.zip(tower).map(|(ours, tower)| ours / tower);
    let fraction = |value: f64| format!("{value:.3} of tower's");
    budget(
        "armed path: our overhead ≤ 1/2 of `tower::hedge`'s (same tokio timer)".to_owned(),
        share(
            over("pending_once/hedging_tokio", "pending_once/bare"),
            over("pending_once/tower_hedge", "pending_once/bare"),
        ),
        &fraction,
        &|v| v <= 0.5,
    );

    if !lateness.is_empty() {
        out.push_str("\n| timer (executor) | calls | timer alone p50 / p99, µs | hedge launch p50 / p99, µs | hedge − timer p50 / p99, µs |\n");
        out.push_str("|---|---:|---:|---:|---:|\n");
        let gap = |hedge: Duration, timer: Duration| {
            format!("{:.1}", (hedge.as_secs_f64() - timer.as_secs_f64()) * 1e6)
        };
        for row in lateness {
            let _ = writeln!(
                out,
                "| {} ({}) | {} | {} / {} | {} / {} | {} / {} |",
                row.timer,
                row.executor,
                row.calls,
                us(row.timer_alone.0),
                us(row.timer_alone.1),
                us(row.hedge.0),
                us(row.hedge.1),
                gap(row.hedge.0, row.timer_alone.0),
                gap(row.hedge.1, row.timer_alone.1),
            );
        }
    }

    out.push_str("\n| future | size_of, bytes |\n|---|---:|\n");
    for (what, size) in sizes {
        let _ = writeln!(out, "| {what} | {size} |");
    }
    out
}

// ---------------------------------------------------------------------------------------

/// Where criterion keeps its results: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else `target/criterion` (cargo runs benches from the package root).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    target.join("criterion")
}

fn main() {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    // tokio's sleeps, tower's hedge and the `hedged` crate need a runtime in context;
    // nothing drives it here, and no sleep on these paths is ever due.
    let _tokio_context = tokio.enter();

    let mode = match std::env::var("HEDGING_BENCH_PROFILE") {
        Ok(case) => {
            let iters = std::env::var("HEDGING_BENCH_ITERS")
                .ok()
                .and_then(|iters| iters.parse().ok())
                .unwrap_or(100_000);
            Mode::Profile { case, iters }
        }
        Err(_) => Mode::Bench(Box::new(
            Criterion::default()
                .output_directory(&criterion_dir())
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(3))
                .configure_from_args(),
        )),
    };
    let started = SystemTime::now();
    let mut suite = Suite {
        mode,
        rows: Vec::new(),
    };
    ready_cases(&mut suite);
    pending_once_cases(&mut suite);
    shared_policy_cases(&mut suite);
    budget_cases(&mut suite);
    let Mode::Bench(criterion) = suite.mode else {
        let early = EARLY_FIRES.load(Relaxed);
        if early > 0 {
            eprintln!("{early} sleeps were ready on their first poll");
        }
        return;
    };
    criterion.final_summary();
    drop(_tokio_context);

    // `cargo bench -- --test` (a smoke run) measures nothing: keep the rest short too.
    let smoke = std::env::args().any(|arg| arg == "--test" || arg == "--list");
    let lateness = lateness(if smoke { 10 } else { 1_000 });
    let medians = medians(&criterion_dir(), started);
    println!("\n## hedging overhead (medians of this run)\n");
    println!(
        "{}",
        table(&suite.rows, &medians, &lateness, &sizes_in_context(&tokio))
    );
}

fn sizes_in_context(tokio: &tokio::runtime::Runtime) -> Vec<(&'static str, usize)> {
    let _context = tokio.enter();
    sizes()
}
