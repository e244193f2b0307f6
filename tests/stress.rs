//! Concurrency stress: one policy shared by 8 threads × 10⁵ calls mixing wins, failures,
//! hedge wins and cancellations, while another thread keeps reading the stats. At the end
//! every counter is exact. And 8 threads on one budget capped at 2 extra copies in flight,
//! with losers whose `Drop` yields: never more than 2 hedges alive.
//!
//! The calls need no real time: the policy's timer says every sleep is already over, so a
//! call whose original is pending hedges in the same `poll`, through the timer path.

use std::future::{self, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use hedging::timer::Timer;
use hedging::{Attempt, Hedgeable, Policy, Stats};

const THREADS: u64 = 8;
const CALLS_PER_THREAD: u64 = 100_000;

/// A clock that stands still and whose sleeps are over at once: every due hedge starts in
/// the poll that finds it due.
#[derive(Clone, Copy, Debug, Default)]
struct ElapsedTimer;

impl Timer for ElapsedTimer {
    type Sleep = future::Ready<()>;

    fn now(&self) -> Duration {
        Duration::ZERO
    }

    fn sleep(&self, _after: Duration) -> Self::Sleep {
        future::ready(())
    }
}

/// What call `n` does, and what it adds to the stats.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// The original answers at once.
    Win,
    /// Every copy fails at once: the failures start the next copy at once.
    AllFail,
    /// The original is pending, the hedge due at once wins.
    HedgeWins,
    /// The original and the first hedge are pending, the second hedge wins.
    SecondHedgeWins,
    /// A non-retryable error ends the race at once.
    Fatal,
    /// Every copy is pending; the call is dropped after one poll.
    Cancelled,
}

const KINDS: [Kind; 6] = [
    Kind::Win,
    Kind::AllFail,
    Kind::HedgeWins,
    Kind::SecondHedgeWins,
    Kind::Fatal,
    Kind::Cancelled,
];

impl Kind {
    fn of(thread: u64, call: u64) -> Kind {
        KINDS[((call * 7 + thread * 3) % KINDS.len() as u64) as usize]
    }

    /// What copy `index` returns: `None` stays pending.
    fn copy(self, index: usize) -> Option<Result<u64, u64>> {
        match (self, index) {
            (Kind::Win, _) => Some(Ok(0)),
            (Kind::AllFail, _) => Some(Err(index as u64)),
            (Kind::HedgeWins, 0) | (Kind::SecondHedgeWins, 0 | 1) | (Kind::Cancelled, _) => None,
            (Kind::HedgeWins | Kind::SecondHedgeWins, _) => Some(Ok(index as u64)),
            (Kind::Fatal, _) => Some(Err(u64::MAX)),
        }
    }

    fn expected(self) -> Stats {
        match self {
            Kind::Win => Stats {
                calls: 1,
                wins: 1,
                ..Stats::default()
            },
            Kind::AllFail => Stats {
                calls: 1,
                failures: 1,
                hedges: 2,
                ..Stats::default()
            },
            Kind::HedgeWins => Stats {
                calls: 1,
                wins: 1,
                hedges: 1,
                hedge_wins: 1,
                ..Stats::default()
            },
            Kind::SecondHedgeWins => Stats {
                calls: 1,
                wins: 1,
                hedges: 2,
                hedge_wins: 1,
                ..Stats::default()
            },
            Kind::Fatal => Stats {
                calls: 1,
                failures: 1,
                ..Stats::default()
            },
            Kind::Cancelled => Stats {
                calls: 1,
                cancelled: 1,
                hedges: 2,
                ..Stats::default()
            },
        }
    }
}

fn add(total: &mut Stats, call: Stats) {
    total.calls += call.calls;
    total.wins += call.wins;
    total.failures += call.failures;
    total.cancelled += call.cancelled;
    total.hedges += call.hedges;
    total.hedge_wins += call.hedge_wins;
}

fn noop_context() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

/// Runs call `call` of thread `thread` through `policy`; panics if its answer is wrong.
fn one_call(policy: &Policy<ElapsedTimer>, thread: u64, call: u64) -> Kind {
    let kind = Kind::of(thread, call);
    let make = |attempt: Attempt| {
        let answer = kind.copy(attempt.index());
        future::poll_fn(move |_| match answer {
            Some(result) => Poll::Ready(result),
            None => Poll::Pending,
        })
    };
    let mut hedge = make.hedged(policy).when(|error: &u64| *error != u64::MAX);
    let polled = Pin::new(&mut hedge).poll(&mut noop_context());
    let expected = match kind {
        Kind::Win => Poll::Ready(Ok(0)),
        Kind::AllFail => Poll::Ready(Err(0)),
        Kind::HedgeWins => Poll::Ready(Ok(1)),
        Kind::SecondHedgeWins => Poll::Ready(Ok(2)),
        Kind::Fatal => Poll::Ready(Err(u64::MAX)),
        Kind::Cancelled => Poll::Pending,
    };
    assert_eq!(polled, expected, "thread {thread} call {call}: {kind:?}");
    kind
}

fn stress(threads: u64, calls_per_thread: u64) {
    let hooked = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&hooked);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_millis(5))
        .on_hedge(move |_| {
            counted.fetch_add(1, SeqCst);
        })
        .timer(ElapsedTimer)
        .build();

    // A reader takes snapshots all along: each counter only ever grows.
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (policy, done) = (policy.clone(), Arc::clone(&done));
        thread::spawn(move || {
            let mut last = Stats::default();
            let mut snapshots = 0u64;
            while !done.load(SeqCst) {
                let now = policy.stats();
                let grew = [
                    (now.calls, last.calls),
                    (now.wins, last.wins),
                    (now.failures, last.failures),
                    (now.cancelled, last.cancelled),
                    (now.hedges, last.hedges),
                    (now.hedge_wins, last.hedge_wins),
                ];
                assert!(
                    grew.iter().all(|(now, last)| now >= last),
                    "{last:?} then {now:?}"
                );
                last = now;
                snapshots += 1;
            }
            snapshots
        })
    };

    // Every worker lives from the first call of any to the last call of all, so more
    // than 32 workers really share the overflow shard.
    let (start, end) = (
        Arc::new(Barrier::new(threads as usize)),
        Arc::new(Barrier::new(threads as usize)),
    );
    let workers: Vec<_> = (0..threads)
        .map(|thread| {
            let (policy, start, end) = (policy.clone(), Arc::clone(&start), Arc::clone(&end));
            thread::spawn(move || {
                start.wait();
                let mut expected = Stats::default();
                for call in 0..calls_per_thread {
                    add(&mut expected, one_call(&policy, thread, call).expected());
                }
                end.wait();
                expected
            })
        })
        .collect();
    let mut expected = Stats::default();
    for worker in workers {
        add(&mut expected, worker.join().expect("a worker panicked"));
    }
    done.store(true, SeqCst);
    assert!(reader.join().expect("the reader panicked") > 0);

    assert_eq!(expected.calls, threads * calls_per_thread);
    assert_eq!(policy.stats(), expected);
    assert_eq!(
        hooked.load(SeqCst),
        expected.hedges,
        "on_hedge ran once per hedge"
    );
    let stats = policy.stats();
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
}

#[test]
fn eight_threads_share_one_policy_and_the_stats_are_exact() {
    stress(THREADS, CALLS_PER_THREAD);
}

#[test]
fn more_threads_than_stat_shards_still_count_exactly() {
    // Past 32 live threads, callers share an overflow shard with atomic adds; threads
    // that exit hand their shard to the next.
    for _round in 0..2 {
        stress(48, 2_000);
    }
}

const RATIO: f64 = 0.25;
const BURST: f64 = 10.0;

/// One policy and one budget shared by 8 threads: half the calls answer at once, half
/// need their hedge. Only the calls answered at once earn, so the budget can pay for
/// about a quarter of the hedges asked for and refusals are certain; every counter still
/// adds up and no slot is left taken.
#[test]
fn eight_threads_share_one_budget_and_it_is_never_overdrawn() {
    // A fixed burst of 10 loses what a policy credits in lumps larger than that: at least
    // half of the supply is spent.
    shared_budget(
        hedging::Budget::new(RATIO).burst(BURST).max_outstanding(4),
        0.5,
    );
}

/// The same with the savings following the traffic (no explicit burst): the last
/// second's calls, counted by every thread at once, set what may be saved.
#[test]
fn eight_threads_share_one_traffic_following_budget_and_it_is_never_overdrawn() {
    shared_budget(hedging::Budget::new(RATIO).max_outstanding(4), 0.8);
}

/// Runs the shared-budget stress on `budget`, which must spend at least `least_spent` of
/// what the earning calls deposit.
fn shared_budget(budget: hedging::Budget, least_spent: f64) {
    let hooked = Arc::new(AtomicU64::new(0));
    let counted = Arc::clone(&hooked);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(Duration::from_millis(5))
        .budget(&budget)
        .on_hedge(move |_| {
            counted.fetch_add(1, SeqCst);
        })
        .timer(ElapsedTimer)
        .build();

    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let policy = policy.clone();
            thread::spawn(move || {
                let (mut hedged, mut refused) = (0u64, 0u64);
                for n in 0..CALLS_PER_THREAD {
                    let needs_hedge = (n + thread) % 2 == 0;
                    let make = move |attempt: Attempt| {
                        future::poll_fn(move |_| match (needs_hedge, attempt.index()) {
                            (true, 0) => Poll::Pending,
                            (_, index) => Poll::Ready(Ok::<_, ()>(index)),
                        })
                    };
                    let mut call = make.hedged(&policy);
                    match Pin::new(&mut call).poll(&mut noop_context()) {
                        Poll::Ready(Ok(0)) => assert!(!needs_hedge),
                        Poll::Ready(Ok(1)) => hedged += 1,
                        // The hedge was refused; the original never answers.
                        Poll::Pending => refused += 1,
                        other => panic!("thread {thread} call {n}: {other:?}"),
                    }
                }
                (hedged, refused)
            })
        })
        .collect();
    let (mut hedged, mut refused) = (0, 0);
    for worker in workers {
        let (h, r) = worker.join().expect("a worker panicked");
        hedged += h;
        refused += r;
    }

    let calls = THREADS * CALLS_PER_THREAD;
    let stats = policy.stats();
    assert_eq!(stats.calls, calls);
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
    assert_eq!((stats.hedges, stats.hedge_wins), (hedged, hedged));
    assert_eq!((stats.cancelled, stats.budget_denied), (refused, refused));
    assert_eq!(
        hooked.load(SeqCst),
        hedged,
        "on_hedge ran once per hedge started"
    );
    // Never more tokens spent than the start plus the deposits of the earning calls: the
    // half answered at once.
    let earners = calls / 2;
    let supply = BURST + RATIO * earners as f64;
    assert!(
        hedged as f64 <= supply,
        "{hedged} hedges from a supply of {supply}"
    );
    // Demand (half the calls) is four times the supply: most of it is spent.
    assert!(
        hedged as f64 >= least_spent * RATIO * earners as f64,
        "only {hedged} hedges"
    );
    assert!(refused > 0);
    assert_eq!(
        budget.outstanding(),
        0,
        "every slot of max_outstanding came back"
    );
    assert!(budget.tokens() <= supply - hedged as f64 + 1e-6);
}

/// Counts the hedges alive: made by the factory and not yet fully dropped.
struct AliveHedge {
    alive: Arc<AtomicU64>,
}

impl AliveHedge {
    fn new(alive: &Arc<AtomicU64>, most: &AtomicU64) -> Self {
        let now = alive.fetch_add(1, SeqCst) + 1;
        most.fetch_max(now, SeqCst);
        AliveHedge {
            alive: Arc::clone(alive),
        }
    }
}

impl Drop for AliveHedge {
    fn drop(&mut self) {
        // A loser whose drop does work (sends a cancel): give other threads the chance to
        // take a slot it still holds.
        thread::yield_now();
        thread::yield_now();
        self.alive.fetch_sub(1, SeqCst);
    }
}

/// A copy's error; a copy that runs out of time fails with it too.
#[derive(Debug)]
struct Gone;

impl From<hedging::Elapsed> for Gone {
    fn from(_: hedging::Elapsed) -> Self {
        Gone
    }
}

/// 8 threads share one budget capped at 2 extra copies in flight. Hedges win, lose, fail,
/// time out and are cancelled, and every hedge's `Drop` yields the thread before it is
/// gone: at no moment are more than 2 hedges alive, and every slot comes back.
#[test]
fn hedges_alive_never_exceed_max_outstanding_across_threads() {
    const CAP: u64 = 2;
    const CALLS: u64 = 20_000;
    let budget = hedging::Budget::new(1.0)
        .burst(1e9)
        .max_outstanding(CAP as usize);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_millis(5))
        .budget(&budget)
        .timer(ElapsedTimer)
        .build();
    let alive = Arc::new(AtomicU64::new(0));
    let most = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(THREADS as usize));

    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (policy, alive, most, start) = (
                policy.clone(),
                Arc::clone(&alive),
                Arc::clone(&most),
                Arc::clone(&start),
            );
            thread::spawn(move || {
                start.wait();
                for n in 0..CALLS {
                    // 0: the original wins at the second poll, its hedges lose;
                    // 1: the first hedge wins; 2: the hedges fail, the original wins at
                    // the third poll; 3: the call is dropped after one poll; 4: every
                    // copy runs out of its attempt timeout (the timer is always over).
                    let plan = (n + thread) % 5;
                    let make = |attempt: Attempt| {
                        let guard = attempt.is_hedge().then(|| AliveHedge::new(&alive, &most));
                        let mut polls = 0;
                        future::poll_fn(move |_| {
                            let _alive = &guard;
                            polls += 1;
                            match (plan, attempt.index(), polls) {
                                (0, 0, 2..) | (2, 0, 3..) => Poll::Ready(Ok(0)),
                                (1, 1, 2..) => Poll::Ready(Ok(1)),
                                (2, 1.., 2..) => Poll::Ready(Err(Gone)),
                                _ => Poll::Pending,
                            }
                        })
                    };
                    let timeout = if plan == 4 {
                        Duration::from_millis(1)
                    } else {
                        Duration::MAX
                    };
                    let mut call = make.hedged(&policy).attempt_timeout(timeout);
                    let mut cx = noop_context();
                    for _ in 0..3 {
                        if Pin::new(&mut call).poll(&mut cx).is_ready() || plan == 3 {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker panicked");
    }

    assert!(
        most.load(SeqCst) <= CAP,
        "{} hedges alive at once under max_outstanding({CAP})",
        most.load(SeqCst)
    );
    assert_eq!(most.load(SeqCst), CAP, "the cap was reached");
    assert_eq!(alive.load(SeqCst), 0);
    assert_eq!(budget.outstanding(), 0, "every slot came back");
    let stats = policy.stats();
    assert_eq!(stats.calls, THREADS * CALLS);
    assert!(stats.budget_denied > 0, "the cap refused hedges");
}
