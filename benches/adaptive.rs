//! What `adaptive_delay` adds to a call: the latency recording, measured on the path it
//! runs on (the original is pending at its first poll, then wins), against the same
//! policy with a fixed delay, in the same run.
//!
//! `cargo bench --bench adaptive`. The clock is a counter (no system call), so the
//! difference between the two is the tracker's own cost plus one extra clock read.
//!
//! `cargo bench --bench adaptive -- contention`: the same armed call on one thread and on
//! two at once, through one policy and through a policy each (`docs/performance.md`,
//! "Threads calling at once").
//!
//! For instruction counts that do not depend on the machine's load, run the same calls
//! under callgrind without criterion: `HEDGING_BENCH_LOOP=<fixed_delay|adaptive_delay>:<calls>`
//! makes the binary run that many calls and exit; the difference between two call counts
//! divided by their difference is the cost of one call:
//!
//! ```sh
//! cargo bench --bench adaptive --no-run   # prints the binary's path
//! HEDGING_BENCH_LOOP=adaptive_delay:100000 valgrind --tool=callgrind --callgrind-out-file=/dev/null <binary>
//! ```

use std::cell::Cell;
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::Barrier;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use hedging::timer::Timer;
use hedging::{Hedgeable, Policy};

/// A clock that moves 1 µs per reading, per thread (so the clock adds no contention of
/// its own); its sleeps never fire.
#[derive(Clone, Debug, Default)]
struct CounterClock;

thread_local! {
    static MICROS: Cell<u64> = const { Cell::new(0) };
}

impl Timer for CounterClock {
    type Sleep = std::future::Pending<()>;

    fn now(&self) -> Duration {
        Duration::from_micros(MICROS.with(|micros| micros.replace(micros.get() + 1)))
    }

    fn sleep(&self, _after: Duration) -> Self::Sleep {
        std::future::pending()
    }
}

/// Pending on its first poll, `Ok` on its second.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = Result<u32, ()>;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(Ok(1))
        } else {
            Poll::Pending
        }
    }
}

/// One call: the original is pending at first, then wins on the second poll.
#[inline]
fn pending_then_wins(policy: &Policy<CounterClock>, cx: &mut Context<'_>) -> u32 {
    let mut call = std::pin::pin!((|| YieldOnce(false)).hedged(policy));
    assert!(call.as_mut().poll(cx).is_pending());
    match call.as_mut().poll(cx) {
        Poll::Ready(Ok(value)) => value,
        _ => unreachable!("the original wins on its second poll"),
    }
}

fn policies() -> [(&'static str, Policy<CounterClock>); 2] {
    let builder = || {
        Policy::builder()
            .max_copies(2)
            .delay(Duration::from_millis(10))
            .timer(CounterClock)
    };
    [
        ("fixed_delay", builder().build()),
        ("adaptive_delay", builder().adaptive_delay(0.95).build()),
    ]
}

fn one_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("pending_then_wins");
    let mut cx = Context::from_waker(Waker::noop());
    for (name, policy) in policies() {
        group.bench_function(name, |b| {
            b.iter(|| black_box(pending_then_wins(black_box(&policy), &mut cx)))
        });
    }
    group.finish();
}

/// A contention case: its name, how its policy is made, and whether its calls are keyed.
type Case<'a> = (&'a str, &'a dyn Fn() -> Policy<CounterClock>, bool);

/// One armed call on `policy`, keyed by a host name when `keyed`.
#[inline]
fn armed_call(policy: &Policy<CounterClock>, keyed: bool, cx: &mut Context<'_>) -> u32 {
    if !keyed {
        return pending_then_wins(policy, cx);
    }
    let mut call = std::pin::pin!((|| YieldOnce(false))
        .hedged(policy)
        .key("replica-1.internal"));
    assert!(call.as_mut().poll(cx).is_pending());
    match call.as_mut().poll(cx) {
        Poll::Ready(Ok(value)) => value,
        _ => unreachable!("the original wins on its second poll"),
    }
}

/// Runs `calls` armed calls on each of `policies` at once, a thread each, started together;
/// returns the slowest thread's time, so a case's time per call is a thread's.
fn on_threads(calls: u64, policies: &[&Policy<CounterClock>], keyed: bool) -> Duration {
    let start = Barrier::new(policies.len());
    std::thread::scope(|scope| {
        let threads: Vec<_> = policies
            .iter()
            .map(|&policy| {
                let start = &start;
                scope.spawn(move || {
                    let mut cx = Context::from_waker(Waker::noop());
                    // The thread's first call claims its stats shard and stripe: off the clock.
                    black_box(armed_call(policy, keyed, &mut cx));
                    start.wait();
                    let began = Instant::now();
                    for _ in 0..calls {
                        black_box(armed_call(policy, keyed, &mut cx));
                    }
                    began.elapsed()
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("a caller finishes"))
            .max()
            .expect("one thread at least")
    })
}

/// What threads calling at once cost each other: the armed path (the original pending at
/// first, then winning) on one thread, on two threads through one policy, and on two
/// threads each through a policy of its own, for a fixed delay, an adaptive delay and an
/// adaptive delay with keys. On one policy the threads share the stats' and the
/// histogram's stripes only where their thread slots collide, the budget-free policy's
/// settings (read only), and, keyed, the key's place and its one-stripe histogram.
fn contention(c: &mut Criterion) {
    let mut group = c.benchmark_group("contention");
    let builder = || {
        Policy::builder()
            .max_copies(2)
            .delay(Duration::from_millis(10))
            .timer(CounterClock)
    };
    let cases: [Case<'_>; 3] = [
        ("fixed_delay", &|| builder().build(), false),
        (
            "adaptive_delay",
            &|| builder().adaptive_delay(0.95).build(),
            false,
        ),
        (
            "adaptive_keyed",
            &|| builder().adaptive_delay(0.95).adaptive_keys(16).build(),
            true,
        ),
    ];
    for (name, make, keyed) in cases {
        let (shared, own) = (make(), make());
        let runs: [(&str, Vec<&Policy<CounterClock>>); 3] = [
            ("1_thread", vec![&shared]),
            ("2_threads_one_policy", vec![&shared, &shared]),
            ("2_threads_own_policies", vec![&shared, &own]),
        ];
        for (threads, policies) in runs {
            group.bench_function(format!("{name}/{threads}"), |b| {
                b.iter_custom(|calls| on_threads(calls, &policies, keyed))
            });
        }
    }
    group.finish();
}

/// Runs `calls` calls through the named policy, for an instruction count under callgrind.
fn run_loop(spec: &str) {
    let (name, calls) = spec
        .split_once(':')
        .expect("HEDGING_BENCH_LOOP=<policy>:<calls>");
    let calls: u64 = calls.parse().expect("a number of calls");
    let policy = policies()
        .into_iter()
        .find_map(|(named, policy)| (named == name).then_some(policy))
        .expect("fixed_delay or adaptive_delay");
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..calls {
        black_box(pending_then_wins(black_box(&policy), &mut cx));
    }
}

/// What one choice of `optimal_delay` costs, made once per quarter window (per key) by
/// the call that turns the window: the model over the tracker's 592 classes (16 per
/// power of two from 16 µs), a window of a 1 ms log-normal body and a tenth of calls
/// paused 20-100 ms, some of them censored; p99, two copies, a 10% budget.
fn one_choice(c: &mut Criterion) {
    use hedging::model::{kaplan_meier, Goal, Survival};
    let edges: Vec<u64> = (0..592u64)
        .map(|bucket| {
            let micros = if bucket < 16 {
                bucket + 1
            } else {
                let above = bucket - 16;
                let power = above / 16 + 4;
                (16 + above % 16 + 1) << (power - 4)
            };
            micros * 1000
        })
        .collect();
    let (mut ended, mut censored) = (vec![0u64; 592], vec![0u64; 592]);
    let mut rng = 7u64;
    for call in 0..10_000u64 {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let uniform = (rng >> 11) as f64 / (1u64 << 53) as f64;
        let micros = if call % 10 == 9 {
            20_000.0 + 80_000.0 * uniform
        } else {
            1000.0 * (0.6 + 0.8 * uniform)
        };
        let bucket = edges.partition_point(|&edge| edge < (micros * 1000.0) as u64);
        if call % 20 == 19 {
            censored[(bucket / 2).max(64)] += 1;
        } else {
            ended[bucket] += 1;
        }
    }
    let mut above = vec![0.0; 592];
    let goal = Goal::new(0.99)
        .budget(0.10)
        .bounds(Duration::from_micros(100), Duration::from_millis(200));
    c.bench_function("optimal_delay/one_choice", |b| {
        b.iter(|| {
            kaplan_meier(black_box(&ended), black_box(&censored), &mut above);
            black_box(Survival::new(&edges, &above).choose(&goal))
        })
    });
}

criterion_group!(benches, one_thread, contention, one_choice);

fn main() {
    if let Ok(spec) = std::env::var("HEDGING_BENCH_LOOP") {
        return run_loop(&spec);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
