//! `TokioTimer` on tokio's paused clock: hedges go out exactly when due, and
//! `tokio::time::advance` drives them. One real-time smoke test on the multi-threaded
//! runtime, with generous bounds.

mod common;

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use common::{ms, Driver};
use hedging::timer::{Timer, TokioTimer};
use hedging::{Attempt, Hedgeable, Policy};
use tokio::time::{advance, sleep, Instant};

fn policy(max_copies: usize, delay: Duration) -> Policy<TokioTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(delay)
        .timer(TokioTimer::new())
        .build()
}

/// Logs when each copy started, on tokio's clock, and how many were dropped.
#[derive(Clone)]
struct StartLog {
    origin: Instant,
    starts: Arc<Mutex<Vec<(usize, Duration)>>>,
    dropped: Arc<Mutex<usize>>,
}

impl StartLog {
    fn new() -> Self {
        StartLog {
            origin: Instant::now(),
            starts: Arc::default(),
            dropped: Arc::default(),
        }
    }

    /// A copy that answers `Ok(index)` after `latency(index)` on tokio's clock, or never.
    fn copy(
        &self,
        attempt: Attempt,
        latency: impl Fn(usize) -> Option<Duration>,
    ) -> impl Future<Output = Result<usize, ()>> {
        let index = attempt.index();
        self.starts
            .lock()
            .unwrap()
            .push((index, self.origin.elapsed()));
        let latency = latency(index);
        let guard = DropCounter(Arc::clone(&self.dropped));
        async move {
            let _guard = guard;
            match latency {
                Some(latency) => sleep(latency).await,
                None => std::future::pending().await,
            }
            Ok(index)
        }
    }

    fn starts(&self) -> Vec<(usize, Duration)> {
        self.starts.lock().unwrap().clone()
    }

    fn dropped(&self) -> usize {
        *self.dropped.lock().unwrap()
    }
}

struct DropCounter(Arc<Mutex<usize>>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        *self.0.lock().unwrap() += 1;
    }
}

#[tokio::test(start_paused = true)]
async fn hedge_starts_exactly_at_its_delay_on_a_paused_clock() {
    let policy = policy(2, ms(20));
    let log = StartLog::new();
    let started = Instant::now();
    let latency = |index| [Some(Duration::from_secs(60)), Some(ms(5))][index];

    let answer = (|a: Attempt| log.copy(a, latency)).hedged(&policy).await;

    assert_eq!(answer, Ok(1));
    assert_eq!(
        started.elapsed(),
        ms(25),
        "hedge at 20 ms, answering 5 ms later"
    );
    assert_eq!(log.starts(), vec![(0, ms(0)), (1, ms(20))]);
    assert_eq!(
        log.dropped(),
        2,
        "the stalled original is dropped with the win"
    );
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.hedge_wins, stats.wins), (1, 1, 1));
}

#[tokio::test(start_paused = true)]
async fn hedge_orig_completes_first() {
    let policy = policy(2, ms(20));
    let log = StartLog::new();
    let started = Instant::now();

    let answer = (|a: Attempt| log.copy(a, |_| Some(ms(15))))
        .hedged(&policy)
        .await;

    assert_eq!(answer, Ok(0));
    assert_eq!(started.elapsed(), ms(15));
    assert_eq!(log.starts(), vec![(0, ms(0))], "no hedge before its delay");
    assert_eq!(policy.stats().hedges, 0);
}

#[tokio::test(start_paused = true)]
async fn advance_starts_each_copy_when_due_and_wakes_the_caller() {
    let policy = policy(3, ms(10));
    let log = StartLog::new();
    let mut call = Driver::new((|a: Attempt| log.copy(a, |_| None)).hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(log.starts().len(), 1);

    advance(ms(9)).await;
    assert!(
        call.poll_if_woken().is_none(),
        "woken before the hedge was due"
    );
    assert_eq!(log.starts().len(), 1);

    advance(ms(1)).await;
    assert_eq!(
        call.poll_if_woken(),
        Some(Poll::Pending),
        "the due hedge woke the call"
    );
    assert_eq!(log.starts(), vec![(0, ms(0)), (1, ms(10))]);

    advance(ms(10)).await;
    assert_eq!(call.poll_if_woken(), Some(Poll::Pending));
    assert_eq!(log.starts(), vec![(0, ms(0)), (1, ms(10)), (2, ms(20))]);

    advance(ms(100)).await;
    assert!(
        call.poll_if_woken().is_none(),
        "no copy left to start: no more wake-ups"
    );
    drop(call);
    assert_eq!(log.dropped(), 3, "dropping the call drops every copy");
    assert_eq!(policy.stats().cancelled, 1);
}

#[tokio::test(start_paused = true)]
async fn now_follows_the_paused_clock() {
    let timer = TokioTimer::new();
    let before = timer.now();
    advance(ms(250)).await;
    assert_eq!(timer.now() - before, ms(250));
}

#[tokio::test(start_paused = true)]
async fn a_first_sleep_tells_the_reading_it_counts_from() {
    let timer = TokioTimer::new();
    advance(ms(5)).await;
    let now = timer.now();
    let mut sleep = pin!(timer.sleep_from_now(ms(10)).expect("tokio's sleeps defer"));
    assert_eq!(timer.started(&sleep, ms(10)), now);
    advance(ms(9)).await;
    assert_eq!(futures::poll!(sleep.as_mut()), Poll::Pending, "1 ms early");
    advance(ms(1)).await;
    assert_eq!(futures::poll!(sleep.as_mut()), Poll::Ready(()));
    assert!(
        timer.sleep_from_now(Duration::MAX).is_none(),
        "a deadline tokio would park elsewhere does not tell its start"
    );
}

#[tokio::test(start_paused = true)]
async fn reset_moves_the_deadline_of_the_same_sleep() {
    let timer = TokioTimer::new();
    let mut sleep = pin!(timer.sleep(ms(10)));
    timer.reset(sleep.as_mut(), ms(30));

    advance(ms(10)).await;
    assert_eq!(
        futures::poll!(sleep.as_mut()),
        Poll::Pending,
        "the old deadline is gone"
    );
    advance(ms(20)).await;
    assert_eq!(futures::poll!(sleep.as_mut()), Poll::Ready(()));
}

#[tokio::test(start_paused = true)]
async fn sleep_until_and_reset_until_fire_at_the_deadline_on_the_timer_s_clock() {
    let timer = TokioTimer::new();
    advance(ms(5)).await;
    let now = timer.now();
    let mut sleep = pin!(timer.sleep_until(now + ms(10), now));
    advance(ms(9)).await;
    assert_eq!(futures::poll!(sleep.as_mut()), Poll::Pending, "1 ms early");
    let now = timer.now();
    timer.reset_until(sleep.as_mut(), now + ms(20), now);
    advance(ms(19)).await;
    assert_eq!(futures::poll!(sleep.as_mut()), Poll::Pending, "1 ms early");
    advance(ms(1)).await;
    assert_eq!(futures::poll!(sleep.as_mut()), Poll::Ready(()));
}

#[tokio::test(start_paused = true)]
async fn failure_starts_the_next_copy_at_once() {
    let policy = policy(2, ms(50));
    let started = Instant::now();
    let answer = (|a: Attempt| async move {
        if a.index() == 0 {
            sleep(ms(3)).await;
            Err("refused")
        } else {
            sleep(ms(4)).await;
            Ok(a.index())
        }
    })
    .hedged(&policy)
    .await;

    assert_eq!(answer, Ok(1));
    assert_eq!(
        started.elapsed(),
        ms(7),
        "the hedge started at the failure, not at 50 ms"
    );
}

#[tokio::test(start_paused = true)]
async fn tokio_timer_saturates_huge_sleeps() {
    let timer = TokioTimer::new();
    let mut sleep = pin!(timer.sleep(Duration::MAX));
    timer.reset(sleep.as_mut(), Duration::MAX);
    // tokio parks deadlines it cannot represent about 30 years on, as its own `sleep` does.
    advance(Duration::from_secs(10 * 365 * 24 * 3600)).await;
    assert_eq!(futures::poll!(sleep.as_mut()), Poll::Pending, "a decade on");

    // Whatever `now` says, even one past the end of time itself.
    let mut until = pin!(timer.sleep_until(Duration::MAX, Duration::MAX));
    timer.reset_until(until.as_mut(), Duration::MAX, timer.now());
    timer.reset_until(until.as_mut(), Duration::MAX, Duration::MAX);
    advance(Duration::from_secs(10 * 365 * 24 * 3600)).await;
    assert_eq!(futures::poll!(until.as_mut()), Poll::Pending, "a decade on");
}

#[tokio::test(start_paused = true)]
async fn tokio_timer_survives_a_hedge_due_at_the_end_of_time() {
    for (policy, call) in common::huge_delay_calls(&TokioTimer::new()) {
        common::assert_huge_delay_call(&policy, call.await);
    }
}

/// Real time, real runtime: a stalled original is overtaken by its hedge. Bounds are
/// generous because the machine running the tests may be busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_real_clock_hedge_overtakes_a_stalled_original() {
    let policy = policy(2, ms(10));
    let started = std::time::Instant::now();
    let answer = (|a: Attempt| async move {
        if a.index() == 0 {
            sleep(Duration::from_secs(30)).await;
        }
        Ok::<_, ()>(a.index())
    })
    .hedged(&policy)
    .await;

    assert_eq!(answer, Ok(1));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(policy.stats().hedge_wins, 1);
}
