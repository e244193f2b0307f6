//! The same hedged call on every runtime, with the real timers.
//!
//! These are the only tests on the real clock: the original never answers, the hedge is
//! due after 5 ms and answers at once, and the bound is generous (the call takes ~5 ms; a
//! lost timer would hang until the 10 s watchdog in `within`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use hedging::timer::{AsyncIoTimer, FuturesTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy};

const DELAY: Duration = Duration::from_millis(5);
const GENEROUS: Duration = Duration::from_secs(5);

fn policy<T: Timer>(timer: T) -> Policy<T> {
    Policy::builder()
        .max_copies(2)
        .delay(DELAY)
        .timer(timer)
        .build()
}

/// The original never answers; the hedge answers with its index.
async fn stalled_original(attempt: Attempt) -> Result<usize, ()> {
    if attempt.index() == 0 {
        std::future::pending::<()>().await;
    }
    Ok(attempt.index())
}

/// Runs one hedged call and checks that the hedge won, soon after its delay.
async fn hedged_call<T: Timer>(policy: &Policy<T>) {
    let started = Instant::now();
    let answer = stalled_original.hedged(policy).await;
    let took = started.elapsed();
    assert_eq!(answer, Ok(1));
    assert!(took >= DELAY, "the hedge went out early: {took:?}");
    assert!(took < GENEROUS, "the hedge went out late: {took:?}");
}

/// Runs `test` on a thread of its own and fails if it has not finished in 10 s.
fn within(test: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let runner = thread::spawn(move || {
        test();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(10)) {
        Ok(()) => runner.join().unwrap(),
        Err(_) if runner.is_finished() => std::panic::resume_unwind(runner.join().unwrap_err()),
        Err(_) => panic!("the hedged call did not finish in 10 s: a lost wake-up or timer"),
    }
}

#[test]
fn smol_with_futures_timer() {
    within(|| smol::block_on(hedged_call(&policy(FuturesTimer))));
}

#[test]
fn smol_with_async_io_timer() {
    within(|| smol::block_on(hedged_call(&policy(AsyncIoTimer))));
}

#[test]
fn smol_executor_runs_an_owned_hedge_as_a_task() {
    within(|| {
        let executor = smol::Executor::new();
        let policy = policy(AsyncIoTimer);
        let task = executor.spawn(stalled_original.hedged(policy.clone()));
        assert_eq!(smol::block_on(executor.run(task)), Ok(1));
        assert_eq!(policy.stats().hedge_wins, 1);
    });
}

#[test]
fn async_std_with_futures_timer() {
    within(|| async_std::task::block_on(hedged_call(&policy(FuturesTimer))));
}

#[test]
fn async_std_with_async_io_timer() {
    within(|| async_std::task::block_on(hedged_call(&policy(AsyncIoTimer))));
}

#[test]
fn tokio_current_thread() {
    within(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(hedged_call(&policy(FuturesTimer)));
    });
}

#[test]
fn tokio_multi_thread_spawned_task() {
    within(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let policy = policy(FuturesTimer);
        let owned = policy.clone();
        let answer = runtime.block_on(async move {
            // An owned policy makes the Hedge `Send + 'static`, so it can be spawned.
            tokio::spawn(stalled_original.hedged(owned)).await.unwrap()
        });
        assert_eq!(answer, Ok(1));
        let stats = policy.stats();
        assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
    });
}

#[test]
fn futures_executor_with_futures_timer() {
    within(|| futures::executor::block_on(hedged_call(&policy(FuturesTimer))));
}

#[test]
fn futures_executor_with_async_io_timer() {
    within(|| futures::executor::block_on(hedged_call(&policy(AsyncIoTimer))));
}

/// The least an executor can be: poll on the current thread, park until woken. It never
/// spawns, which is what an embedded executor looks like.
fn park_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

#[test]
fn minimal_single_threaded_executor_that_never_spawns() {
    within(|| {
        let policy = policy(FuturesTimer);
        park_on(hedged_call(&policy));
        park_on(hedged_call(&policy));
        assert_eq!(policy.stats().hedge_wins, 2);
    });
}

#[test]
fn minimal_executor_polls_a_pinned_hedge_by_hand() {
    within(|| {
        let policy = policy(AsyncIoTimer);
        let mut call = Box::pin(stalled_original.hedged(&policy));
        let answer = park_on(std::future::poll_fn(|cx| Pin::as_mut(&mut call).poll(cx)));
        assert_eq!(answer, Ok(1));
    });
}
