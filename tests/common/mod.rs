//! Test doubles shared by the integration tests: a scripted backend on `ManualTimer`
//! that logs when each copy starts and counts drops, and a driver that polls a future
//! only after its waker fired.
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable};

pub const MS: Duration = Duration::from_millis(1);

/// A copy that answers `Ok(index)` after `latency` of virtual time.
pub fn answer_after(
    timer: &ManualTimer,
    index: usize,
    latency: Duration,
) -> impl Future<Output = Result<usize, ()>> {
    let sleep = timer.sleep(latency);
    async move {
        sleep.await;
        Ok(index)
    }
}

/// Runs one call on `policy`'s clock to its end, with `key` (or none), whose original
/// takes `original` and every hedge `hedge`; returns the winner and how long the call took.
pub fn scripted_call(
    policy: &hedging::Policy<ManualTimer>,
    key: Option<&str>,
    original: Duration,
    hedge: Duration,
) -> (usize, Duration) {
    let timer = policy.timer().clone();
    let start = timer.now();
    let factory = {
        let timer = timer.clone();
        move |a: Attempt| {
            let latency = if a.index() == 0 { original } else { hedge };
            answer_after(&timer, a.index(), latency)
        }
    };
    let winner = match key {
        Some(key) => Driver::new(factory.hedged(policy).key(key)).run(&timer),
        None => Driver::new(factory.hedged(policy)).run(&timer),
    }
    .expect("the scripted copies succeed");
    (winner, timer.now() - start)
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The policy most tests use: `max_copies` copies, `delay_ms` apart, on `timer`.
pub fn policy(
    timer: &ManualTimer,
    max_copies: usize,
    delay_ms: u64,
) -> hedging::Policy<ManualTimer> {
    hedging::Policy::builder()
        .max_copies(max_copies)
        .delay(ms(delay_ms))
        .timer(timer.clone())
        .build()
}

/// What one copy does: wait `after`, then end as `end` says.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub after: Duration,
    pub end: End,
}

#[derive(Clone, Copy, Debug)]
pub enum End {
    Ok(u32),
    Err(u32),
    Panic,
    Never,
}

impl Step {
    pub fn ok(after_ms: u64, value: u32) -> Step {
        Step {
            after: ms(after_ms),
            end: End::Ok(value),
        }
    }
    pub fn err(after_ms: u64, error: u32) -> Step {
        Step {
            after: ms(after_ms),
            end: End::Err(error),
        }
    }
    pub fn panic(after_ms: u64) -> Step {
        Step {
            after: ms(after_ms),
            end: End::Panic,
        }
    }
    pub fn never() -> Step {
        Step {
            after: Duration::ZERO,
            end: End::Never,
        }
    }
}

#[derive(Default, Debug)]
pub struct Log {
    /// (copy index, virtual time it started)
    pub starts: Vec<(usize, Duration)>,
    pub dropped: usize,
    pub finished: usize,
    pub polls: usize,
    /// The most copies alive at once.
    pub most_alive: usize,
}

/// A backend whose copy k follows `steps[k]` on a shared `ManualTimer`; its copies fail
/// with `E::from(code)`.
pub struct Backend<E = u32> {
    pub timer: ManualTimer,
    steps: Arc<Vec<Step>>,
    log: Arc<Mutex<Log>>,
    errors: std::marker::PhantomData<fn() -> E>,
}

impl<E> Clone for Backend<E> {
    fn clone(&self) -> Self {
        Backend {
            timer: self.timer.clone(),
            steps: Arc::clone(&self.steps),
            log: Arc::clone(&self.log),
            errors: std::marker::PhantomData,
        }
    }
}

pub type CopyFuture<E = u32> = Pin<Box<dyn Future<Output = Result<u32, E>> + Send>>;

impl Backend {
    pub fn new(timer: &ManualTimer, steps: impl IntoIterator<Item = Step>) -> Backend {
        Backend::with_errors(timer, steps)
    }
}

/// An error that converts from `Elapsed`, for calls with timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    Code(u32),
    Elapsed,
}

impl From<u32> for Failure {
    fn from(code: u32) -> Self {
        Failure::Code(code)
    }
}

impl From<hedging::Elapsed> for Failure {
    fn from(_: hedging::Elapsed) -> Self {
        Failure::Elapsed
    }
}

impl<E: From<u32> + Send + 'static> Backend<E> {
    pub fn with_errors(timer: &ManualTimer, steps: impl IntoIterator<Item = Step>) -> Self {
        Backend {
            timer: timer.clone(),
            steps: Arc::new(steps.into_iter().collect()),
            log: Arc::default(),
            errors: std::marker::PhantomData,
        }
    }

    /// The factory a test hands to `hedged`.
    pub fn factory(&self) -> impl FnMut(Attempt) -> CopyFuture<E> + Send + 'static {
        let backend = self.clone();
        move |attempt: Attempt| backend.copy(attempt.index())
    }

    /// The most copies that were alive at once.
    pub fn most_alive(&self) -> usize {
        self.log.lock().unwrap().most_alive
    }

    pub fn copy(&self, index: usize) -> CopyFuture<E> {
        let step = self.steps[index];
        {
            let mut log = self.log.lock().unwrap();
            log.starts.push((index, self.timer.now()));
            log.most_alive = log.most_alive.max(log.starts.len() - log.dropped);
        }
        let sleep = self.timer.sleep(step.after);
        Box::pin(ScriptedCopy {
            step,
            sleep,
            log: Arc::clone(&self.log),
            done: false,
            errors: std::marker::PhantomData,
        })
    }

    pub fn starts(&self) -> Vec<(usize, Duration)> {
        self.log.lock().unwrap().starts.clone()
    }

    pub fn started(&self) -> usize {
        self.log.lock().unwrap().starts.len()
    }

    pub fn dropped(&self) -> usize {
        self.log.lock().unwrap().dropped
    }

    /// Copies started and not yet dropped.
    pub fn alive(&self) -> usize {
        let log = self.log.lock().unwrap();
        log.starts.len() - log.dropped
    }

    pub fn polls(&self) -> usize {
        self.log.lock().unwrap().polls
    }
}

struct ScriptedCopy<E> {
    step: Step,
    sleep: hedging::timer::ManualSleep,
    log: Arc<Mutex<Log>>,
    done: bool,
    errors: std::marker::PhantomData<fn() -> E>,
}

impl<E: From<u32>> Future for ScriptedCopy<E> {
    type Output = Result<u32, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.log.lock().unwrap().polls += 1;
        assert!(!self.done, "a finished copy was polled again");
        if let End::Never = self.step.end {
            return Poll::Pending;
        }
        if Pin::new(&mut self.sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.done = true;
        self.log.lock().unwrap().finished += 1;
        match self.step.end {
            End::Ok(value) => Poll::Ready(Ok(value)),
            End::Err(error) => Poll::Ready(Err(E::from(error))),
            End::Panic => panic!("scripted copy panicked"),
            End::Never => unreachable!(),
        }
    }
}

impl<E> Drop for ScriptedCopy<E> {
    fn drop(&mut self) {
        // A poisoned lock means a test already failed; do not panic again in drop.
        if let Ok(mut log) = self.log.lock() {
            log.dropped += 1;
        }
    }
}

/// Counts wake-ups.
#[derive(Default)]
pub struct CountingWaker {
    wakes: AtomicUsize,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
    }
}

/// Polls a future only after its waker fired (the first poll excepted), the way a
/// careful executor would; a future that loses a wake-up stalls here and the test fails.
pub struct Driver<F: Future> {
    pub future: Pin<Box<F>>,
    counter: Arc<CountingWaker>,
    waker: Waker,
    seen_wakes: usize,
    first: bool,
    pub polls: usize,
}

impl<F: Future> Driver<F> {
    pub fn new(future: F) -> Self {
        let counter = Arc::new(CountingWaker::default());
        Driver {
            future: Box::pin(future),
            waker: Waker::from(Arc::clone(&counter)),
            counter,
            seen_wakes: 0,
            first: true,
            polls: 0,
        }
    }

    pub fn wakes(&self) -> usize {
        self.counter.wakes.load(SeqCst)
    }

    pub fn is_woken(&self) -> bool {
        self.first || self.wakes() > self.seen_wakes
    }

    /// Polls once, regardless of wake-ups.
    pub fn poll(&mut self) -> Poll<F::Output> {
        self.first = false;
        self.seen_wakes = self.wakes();
        self.polls += 1;
        let mut cx = Context::from_waker(&self.waker);
        self.future.as_mut().poll(&mut cx)
    }

    /// Polls if woken; `None` when it was not woken (and so not polled).
    pub fn poll_if_woken(&mut self) -> Option<Poll<F::Output>> {
        self.is_woken().then(|| self.poll())
    }

    /// Runs to completion, polling only when woken and otherwise moving the clock to
    /// the next deadline. Panics if the future stalls: not woken and no deadline left.
    pub fn run(&mut self, timer: &ManualTimer) -> F::Output {
        loop {
            if let Some(Poll::Ready(output)) = self.poll_if_woken() {
                return output;
            }
            if !self.is_woken() {
                let next = timer
                    .next_deadline()
                    .expect("stalled: pending, not woken, and no timer left to fire");
                timer.advance(next - timer.now());
            }
        }
    }

    /// Moves the clock to `at` one deadline at a time, polling whenever woken; returns
    /// the output if the future finished on the way.
    pub fn run_until(&mut self, timer: &ManualTimer, at: Duration) -> Option<F::Output> {
        loop {
            if let Some(Poll::Ready(output)) = self.poll_if_woken() {
                return Some(output);
            }
            if self.is_woken() {
                continue;
            }
            match timer.next_deadline().filter(|next| *next <= at) {
                Some(next) => timer.advance(next - timer.now()),
                None => {
                    timer.advance(at.saturating_sub(timer.now()));
                    if !self.is_woken() {
                        return None;
                    }
                }
            }
        }
    }
}

/// A hedged call, boxed.
pub type LocalCall = Pin<Box<dyn Future<Output = Result<usize, usize>>>>;

/// Drives two calls on one clock, each polled only when woken, until both ended or
/// neither can move; returns their outputs.
pub fn run_both<A, B>(timer: &ManualTimer, a: A, b: B) -> (Option<A::Output>, Option<B::Output>)
where
    A: Future,
    B: Future,
{
    let (mut a, mut b) = (Driver::new(a), Driver::new(b));
    let (mut out_a, mut out_b) = (None, None);
    loop {
        let mut polled = false;
        if out_a.is_none() {
            if let Some(poll) = a.poll_if_woken() {
                polled = true;
                if let Poll::Ready(output) = poll {
                    out_a = Some(output);
                }
            }
        }
        if out_b.is_none() {
            if let Some(poll) = b.poll_if_woken() {
                polled = true;
                if let Poll::Ready(output) = poll {
                    out_b = Some(output);
                }
            }
        }
        if out_a.is_some() && out_b.is_some() {
            return (out_a, out_b);
        }
        if !polled {
            match timer.next_deadline() {
                Some(next) if next < Duration::from_secs(3600) => timer.advance(next - timer.now()),
                _ => return (out_a, out_b),
            }
        }
    }
}

/// The two calls of the huge-delay scenario every timer must survive: a delay of
/// `Duration::MAX` re-arms the call's one sleep past the end of time, which must never
/// fire and never panic.
///
/// 1. `delay(MAX)`, three copies: the original fails at 1 ms, so the first hedge starts at
///    once and answers 2 ms later; the second hedge is due at the end of time.
/// 2. `delay_fn` 5 ms, then `MAX`: the original never answers; the first hedge goes out at
///    5 ms and answers 1 ms later, with the next one due at the end of time.
///
/// Each call must return `Ok(1)` after starting exactly one hedge.
pub fn huge_delay_calls<T: Timer + Send + Sync + 'static>(
    timer: &T,
) -> Vec<(hedging::Policy<T>, LocalCall)> {
    let failing_then_late = hedging::Policy::builder()
        .max_copies(3)
        .delay(Duration::MAX)
        .timer(timer.clone())
        .build();
    let stalled_then_huge = hedging::Policy::builder()
        .max_copies(3)
        .delay_fn(|copy| Some(if copy == 1 { ms(5) } else { Duration::MAX }))
        .timer(timer.clone())
        .build();
    let sleeper = timer.clone();
    let first = (move |a: Attempt| {
        let sleep = sleeper.sleep(ms(1 + a.index() as u64));
        async move {
            sleep.await;
            if a.index() == 0 {
                Err(0)
            } else {
                Ok(a.index())
            }
        }
    })
    .hedged(failing_then_late.clone());
    let sleeper = timer.clone();
    let second = (move |a: Attempt| {
        let sleep = (a.index() > 0).then(|| sleeper.sleep(ms(1)));
        async move {
            match sleep {
                Some(sleep) => sleep.await,
                None => std::future::pending().await,
            }
            Ok(a.index())
        }
    })
    .hedged(stalled_then_huge.clone());
    vec![
        (failing_then_late, Box::pin(first)),
        (stalled_then_huge, Box::pin(second)),
    ]
}

/// Checks the outcome of one of [`huge_delay_calls`].
pub fn assert_huge_delay_call<T>(policy: &hedging::Policy<T>, answer: Result<usize, usize>) {
    assert_eq!(answer, Ok(1));
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.wins), (1, 1), "{stats:?}");
}
