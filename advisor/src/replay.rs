//! The replay: the recorded calls run again in virtual time through the real `Hedge`
//! future, on `ManualTimer`, with the real budget. Each call arrives when it was made and
//! its original takes the latency it had; a copy started at `t` takes the latency of a
//! call made near `t` (one of the [`NEIGHBOURS`] nearest in time), so slowness that came
//! in clusters (a paused replica, a brownout) reaches the copies too.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Budget, Hedgeable, Policy};

/// How many calls nearest in time a copy's latency is drawn from.
pub const NEIGHBOURS: usize = 16;

/// What the replay measured for one delay.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    /// Call latency at the p50, p99 and p99.9 (nearest rank).
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The 99.9th percentile.
    pub p999: Duration,
    /// Call latency at the quantile the replay was asked for (the target).
    pub at_target: Duration,
    /// Extra copies per call the policy started.
    pub extra: f64,
    /// Copies the budget refused, per call.
    pub refused: f64,
    /// Calls replayed.
    pub calls: usize,
}

/// Replays `calls` ((made at, latency) in nanoseconds, by the moment made) with up to
/// `copies` copies `delay` apart and a budget of `budget` extra copies per call (`None`:
/// none); [`Replayed::at_target`] is the call latency at `target`.
pub fn replay(
    calls: &[(u64, u64)],
    copies: usize,
    delay: Duration,
    budget: Option<f64>,
    target: f64,
) -> Replayed {
    let timer = ManualTimer::new();
    let builder = Policy::builder()
        .timer(timer.clone())
        .max_copies(copies.max(1))
        .delay(delay);
    let policy = match budget {
        Some(ratio) => builder.budget(&Budget::new(ratio)).build(),
        None => builder.build(),
    };
    let first = calls.first().map_or(0, |&(at, _)| at);
    let arrivals: Vec<Duration> = calls
        .iter()
        .map(|&(at, _)| Duration::from_nanos(at - first))
        .collect();
    let latencies = Rc::new(RefCell::new(vec![Duration::ZERO; calls.len()]));
    let arrivals_ref = &arrivals;
    let spawn = |call: usize| -> Task<'_> {
        let (timer, policy, latencies) = (timer.clone(), policy.clone(), Rc::clone(&latencies));
        Box::pin(async move {
            let arrived = timer.now();
            let factory = {
                let timer = timer.clone();
                move |attempt: Attempt| {
                    let latency = match attempt.index() {
                        0 => calls[call].1,
                        copy => calls[neighbour(arrivals_ref, call, copy, timer.now())].1,
                    };
                    let sleep = timer.sleep(Duration::from_nanos(latency));
                    async move {
                        sleep.await;
                        Ok::<(), ()>(())
                    }
                }
            };
            let _ = factory.hedged(&policy).await;
            latencies.borrow_mut()[call] = timer.now() - arrived;
        })
    };
    drive(&timer, calls.len(), |call| arrivals[call], spawn);
    let stats = policy.stats();
    let mut latencies = latencies.take();
    latencies.sort_unstable();
    let at = |quantile: f64| nearest_rank(&latencies, quantile);
    let per_call = |count: u64| count as f64 / calls.len().max(1) as f64;
    Replayed {
        p50: at(0.5),
        p99: at(0.99),
        p999: at(0.999),
        at_target: at(target),
        extra: per_call(stats.hedges),
        refused: per_call(stats.budget_denied),
        calls: calls.len(),
    }
}

/// The call whose latency copy `copy` of call `call`, started at `now`, takes: one of the
/// [`NEIGHBOURS`] calls made nearest `now`, never the call itself, drawn the same way in
/// every replay.
fn neighbour(arrivals: &[Duration], call: usize, copy: usize, now: Duration) -> usize {
    if arrivals.len() < 2 {
        return call;
    }
    let at = arrivals.partition_point(|&arrival| arrival <= now);
    let half = NEIGHBOURS / 2;
    let low = at
        .saturating_sub(half)
        .min(arrivals.len().saturating_sub(NEIGHBOURS));
    let high = (low + NEIGHBOURS).min(arrivals.len());
    let mut rng = fastrand::Rng::with_seed(
        (call as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (copy as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9),
    );
    loop {
        let pick = rng.usize(low..high);
        if pick != call {
            return pick;
        }
    }
}

/// The nearest-rank `quantile` of `sorted`.
fn nearest_rank(sorted: &[Duration], quantile: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((quantile * sorted.len() as f64 - 1e-9).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// A replayed call.
type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Wakes a task by queueing its index.
struct TaskWaker {
    task: usize,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        if let Ok(mut ready) = self.ready.lock() {
            ready.push_back(self.task);
        }
    }
}

/// Runs `calls` calls to their end, call `call` spawned when the clock reaches
/// `arrival(call)` (non-decreasing); a task is polled only when woken, and the clock
/// jumps to the next arrival or deadline, so a replay is the same on every run.
fn drive<'a>(
    timer: &ManualTimer,
    calls: usize,
    arrival: impl Fn(usize) -> Duration,
    mut spawn: impl FnMut(usize) -> Task<'a>,
) {
    let ready = Arc::new(Mutex::new(VecDeque::new()));
    let pop =
        |ready: &Mutex<VecDeque<usize>>| ready.lock().ok().and_then(|mut ready| ready.pop_front());
    let mut tasks: Vec<Option<(Task<'a>, Waker)>> = Vec::with_capacity(calls);
    let (mut next_call, mut finished) = (0, 0);
    while finished < calls {
        let now = timer.now();
        while next_call < calls && arrival(next_call) <= now {
            let waker = Waker::from(Arc::new(TaskWaker {
                task: next_call,
                ready: Arc::clone(&ready),
            }));
            tasks.push(Some((spawn(next_call), waker)));
            if let Ok(mut ready) = ready.lock() {
                ready.push_back(next_call);
            }
            next_call += 1;
        }
        while let Some(task) = pop(&ready) {
            let slot = &mut tasks[task];
            let Some((future, waker)) = slot else {
                continue;
            };
            if future
                .as_mut()
                .poll(&mut Context::from_waker(waker))
                .is_ready()
            {
                *slot = None;
                finished += 1;
            }
        }
        if finished == calls {
            break;
        }
        let next_arrival = (next_call < calls).then(|| arrival(next_call));
        let next = match (timer.next_deadline(), next_arrival) {
            (Some(deadline), Some(arrival)) => deadline.min(arrival),
            (deadline, arrival) => match deadline.or(arrival) {
                Some(next) => next,
                // Every call waits on a sleep of the timer: nothing is left to wait for.
                None => break,
            },
        };
        timer.advance(next.saturating_sub(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_lone_stall_is_cut_by_a_copy_from_its_healthy_neighbours() {
        // A call every ms, each 1 ms, but one in a hundred takes 100 ms on its own.
        let calls: Vec<(u64, u64)> = (0..10_000)
            .map(|call| (call * MS, if call % 100 == 7 { 100 * MS } else { MS }))
            .collect();
        let unhedged = replay(&calls, 1, Duration::from_millis(5), None, 0.99);
        assert_eq!(unhedged.p999, Duration::from_millis(100));
        let hedged = replay(&calls, 2, Duration::from_millis(5), None, 0.99);
        assert_eq!(hedged.p999, Duration::from_millis(6));
        assert!((hedged.extra - 0.01).abs() < 1e-9, "{}", hedged.extra);
    }

    #[test]
    fn a_clustered_stall_reaches_the_copies_too() {
        // The same share of slow calls, but all in one stretch: a copy drawn near the same
        // moment is slow too.
        let calls: Vec<(u64, u64)> = (0..10_000)
            .map(|call| {
                (
                    call * MS,
                    if (5_000..5_100).contains(&call) {
                        100 * MS
                    } else {
                        MS
                    },
                )
            })
            .collect();
        let hedged = replay(&calls, 2, Duration::from_millis(5), None, 0.99);
        assert!(hedged.p999 > Duration::from_millis(90), "{:?}", hedged.p999);
    }
}
