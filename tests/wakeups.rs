//! No lost wake-ups: 10⁵ random calls, each polled only after its waker fired, with copies
//! woken by `ManualTimer` and copies completed and woken from another thread while the
//! call may be mid-poll. A lost wake-up shows as a stall: nothing left to wake the call.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use hedging::timer::{ManualSleep, ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy};

const SCENARIOS: u64 = 100_000;

/// How long the executor waits for another thread's wake-up before calling it a stall.
/// Generous: a wake-up normally arrives within microseconds.
const STALL: Duration = Duration::from_secs(10);

/// How one copy ends, and who wakes the call when it does.
#[derive(Clone, Copy, Debug)]
enum Copy {
    /// The timer wakes it after this many milliseconds.
    Timed {
        after_ms: u64,
        result: Result<u32, u32>,
    },
    /// Another thread completes it and wakes it, right after it is made.
    Threaded { result: Result<u32, u32> },
    /// Never completes: only another copy can end the call.
    Never,
}

impl Copy {
    fn result(self) -> Result<u32, u32> {
        match self {
            Copy::Timed { result, .. } | Copy::Threaded { result } => result,
            Copy::Never => Err(u32::MAX),
        }
    }
}

/// A copy completed from another thread: a one-shot slot with a waker.
#[derive(Default)]
struct Remote {
    state: Mutex<RemoteState>,
    /// Set after the wake-up was sent.
    delivered: AtomicBool,
}

#[derive(Default)]
struct RemoteState {
    result: Option<Result<u32, u32>>,
    waker: Option<Waker>,
}

enum CopyFuture {
    Timed(ManualSleep, Result<u32, u32>),
    Threaded(Arc<Remote>),
    Never,
}

impl Future for CopyFuture {
    type Output = Result<u32, u32>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            CopyFuture::Timed(sleep, result) => Pin::new(sleep).poll(cx).map(|()| *result),
            CopyFuture::Never => Poll::Pending,
            CopyFuture::Threaded(remote) => {
                let mut state = remote.state.lock().unwrap();
                match state.result {
                    Some(result) => Poll::Ready(result),
                    None => {
                        state.waker = Some(cx.waker().clone());
                        Poll::Pending
                    }
                }
            }
        }
    }
}

/// The other thread: completes remote copies, after a short random spin so that the
/// wake-up lands before, during or after the call's poll.
fn spawn_completer() -> mpsc::Sender<(Arc<Remote>, Result<u32, u32>, u32)> {
    let (jobs, incoming) = mpsc::channel::<(Arc<Remote>, Result<u32, u32>, u32)>();
    thread::spawn(move || {
        for (remote, result, spins) in incoming {
            for _ in 0..spins {
                std::hint::spin_loop();
            }
            let waker = {
                let mut state = remote.state.lock().unwrap();
                state.result = Some(result);
                state.waker.take()
            };
            if let Some(waker) = waker {
                waker.wake();
            }
            remote.delivered.store(true, SeqCst);
        }
    });
    jobs
}

/// A waker that counts wake-ups and unparks the executor thread.
struct Unpark {
    wakes: AtomicUsize,
    thread: Thread,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
        self.thread.unpark();
    }
}

fn random_result(rng: &mut fastrand::Rng) -> Result<u32, u32> {
    let value = rng.u32(0..1_000);
    if rng.u8(0..3) == 0 {
        Err(value)
    } else {
        Ok(value)
    }
}

/// A random policy, and whether it starts every copy by the clock (not only on failures).
fn scenario_policy(rng: &mut fastrand::Rng, timer: &ManualTimer) -> (Policy<ManualTimer>, bool) {
    let builder = Policy::builder()
        .max_copies(rng.usize(1..=4))
        .timer(timer.clone());
    let timed = rng.u8(0..4) != 1;
    let builder = match rng.u8(0..3) {
        _ if !timed => builder.fallback(),
        0 => builder.parallel(),
        1 => {
            let delays: Vec<u64> = (0..4).map(|_| rng.u64(0..8)).collect();
            builder.delay_fn(move |copy| Some(Duration::from_millis(delays[copy])))
        }
        _ => builder.delay(Duration::from_millis(rng.u64(0..8))),
    };
    let builder = if rng.bool() {
        builder.max_delay(Duration::from_millis(rng.u64(0..10)))
    } else {
        builder
    };
    (builder.build(), timed)
}

/// Runs one random call to its end, polling only when woken. Returns an error on a stall.
fn run_scenario(
    seed: u64,
    completer: &mpsc::Sender<(Arc<Remote>, Result<u32, u32>, u32)>,
) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let timer = ManualTimer::new();
    let (policy, timed) = scenario_policy(&mut rng, &timer);
    let mut copies: Vec<Copy> = (0..policy.max_copies())
        .map(|_| {
            let result = random_result(&mut rng);
            match rng.u8(0..5) {
                // A copy that never answers needs the clock to start the others.
                0 if timed => Copy::Never,
                0..=2 => Copy::Threaded { result },
                _ => Copy::Timed {
                    after_ms: rng.u64(0..8),
                    result,
                },
            }
        })
        .collect();
    // One copy that answers `Ok` guarantees the call ends; without it, a call whose
    // copies all never answer would hang by design.
    if !copies.iter().any(|copy| copy.result().is_ok()) {
        let last = copies.len() - 1;
        copies[last] = Copy::Timed {
            after_ms: rng.u64(0..8),
            result: Ok(1_000),
        };
    }
    let remotes: Arc<Mutex<Vec<Arc<Remote>>>> = Arc::default();
    let made = Arc::new(AtomicUsize::new(0));
    let spins: Vec<u32> = (0..copies.len()).map(|_| rng.u32(0..2_000)).collect();

    let factory = {
        let (copies, remotes, made, timer) = (
            copies.clone(),
            Arc::clone(&remotes),
            Arc::clone(&made),
            timer.clone(),
        );
        let completer = completer.clone();
        move |attempt: Attempt| {
            made.fetch_add(1, SeqCst);
            match copies[attempt.index()] {
                Copy::Timed { after_ms, result } => {
                    CopyFuture::Timed(timer.sleep(Duration::from_millis(after_ms)), result)
                }
                Copy::Never => CopyFuture::Never,
                Copy::Threaded { result } => {
                    let remote = Arc::new(Remote::default());
                    remotes.lock().unwrap().push(Arc::clone(&remote));
                    completer
                        .send((Arc::clone(&remote), result, spins[attempt.index()]))
                        .expect("the completer thread runs");
                    CopyFuture::Threaded(remote)
                }
            }
        }
    };
    let mut call = Box::pin(factory.hedged(&policy));
    let unpark = Arc::new(Unpark {
        wakes: AtomicUsize::new(0),
        thread: thread::current(),
    });
    let waker = Waker::from(Arc::clone(&unpark));
    let mut seen_wakes = 0;
    let mut first = true;
    let output = loop {
        if first || unpark.wakes.load(SeqCst) > seen_wakes {
            first = false;
            seen_wakes = unpark.wakes.load(SeqCst);
            if let Poll::Ready(output) = call.as_mut().poll(&mut Context::from_waker(&waker)) {
                break output;
            }
            continue;
        }
        let in_transit = remotes
            .lock()
            .unwrap()
            .iter()
            .any(|remote| !remote.delivered.load(SeqCst));
        if in_transit {
            // Another thread will wake the call: wait for it, not for the clock.
            let waiting = Instant::now();
            while unpark.wakes.load(SeqCst) == seen_wakes
                && remotes
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|remote| !remote.delivered.load(SeqCst))
            {
                if waiting.elapsed() > STALL {
                    return Err(format!("seed {seed}: no wake-up from the other thread"));
                }
                thread::park_timeout(Duration::from_millis(1));
            }
            continue;
        }
        match timer.next_deadline() {
            Some(next) => timer.advance(next - timer.now()),
            // Every wake-up was sent: one must have reached the call.
            None if unpark.wakes.load(SeqCst) > seen_wakes => continue,
            None => {
                return Err(format!(
                    "seed {seed}: stalled, copies {copies:?}, policy {policy:?}"
                ))
            }
        }
    };

    let started = made.load(SeqCst);
    if started > copies.len() {
        return Err(format!(
            "seed {seed}: {started} copies for a cap of {}",
            copies.len()
        ));
    }
    if !copies[..started].iter().any(|copy| copy.result() == output) {
        return Err(format!(
            "seed {seed}: {output:?} is no started copy's result"
        ));
    }
    drop(call);
    let stats = policy.stats();
    if stats.calls != 1 || stats.wins + stats.failures != 1 || timer.live_sleeps() != 0 {
        return Err(format!(
            "seed {seed}: {stats:?}, {} sleeps alive",
            timer.live_sleeps()
        ));
    }
    Ok(())
}

#[test]
fn random_calls_polled_only_when_woken_never_stall() {
    let completer = spawn_completer();
    let failures: Vec<String> = (0..SCENARIOS)
        .filter_map(|seed| run_scenario(seed, &completer).err())
        .take(5)
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_wake_up_sent_during_poll_is_not_lost() {
    // The copy completes and wakes from another thread while the call is inside `poll`:
    // the wake-up must still lead to another poll, and that poll to the answer.
    let timer = ManualTimer::new();
    let policy = Policy::builder().max_copies(1).timer(timer.clone()).build();
    let remote = Arc::new(Remote::default());
    let inside_poll = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicBool::new(false));
    struct DuringPoll {
        remote: Arc<Remote>,
        inside_poll: Arc<AtomicBool>,
        completed: Arc<AtomicBool>,
    }
    impl Future for DuringPoll {
        type Output = Result<u32, u32>;
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            let mut state = self.remote.state.lock().unwrap();
            if let Some(result) = state.result {
                return Poll::Ready(result);
            }
            state.waker = Some(cx.waker().clone());
            drop(state);
            // Hold the poll open until the other thread has completed and woken.
            self.inside_poll.store(true, SeqCst);
            while !self.completed.load(SeqCst) {
                std::hint::spin_loop();
            }
            Poll::Pending
        }
    }
    let other = {
        let (remote, inside_poll, completed) = (
            Arc::clone(&remote),
            Arc::clone(&inside_poll),
            Arc::clone(&completed),
        );
        thread::spawn(move || {
            while !inside_poll.load(SeqCst) {
                std::hint::spin_loop();
            }
            let waker = {
                let mut state = remote.state.lock().unwrap();
                state.result = Some(Ok(9));
                state.waker.take()
            };
            waker.expect("the copy registered a waker").wake();
            completed.store(true, SeqCst);
        })
    };
    let mut made = Some(DuringPoll {
        remote,
        inside_poll,
        completed,
    });
    let mut call = Box::pin((move || made.take().expect("one copy")).hedged(&policy));
    let unpark = Arc::new(Unpark {
        wakes: AtomicUsize::new(0),
        thread: thread::current(),
    });
    let waker = Waker::from(Arc::clone(&unpark));
    let mut cx = Context::from_waker(&waker);

    assert_eq!(call.as_mut().poll(&mut cx), Poll::Pending);
    other.join().unwrap();
    assert_eq!(
        unpark.wakes.load(SeqCst),
        1,
        "the wake-up sent during poll arrived"
    );
    assert_eq!(call.as_mut().poll(&mut cx), Poll::Ready(Ok(9)));
}
