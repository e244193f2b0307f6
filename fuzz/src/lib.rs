//! The fuzz targets, as plain functions of raw bytes.
//!
//! `cargo fuzz` runs them through `fuzz_targets/*.rs`; `tests/fuzz_replay.rs` includes this
//! very file and runs them over the checked-in corpus (`fuzz/seeds/`) and seeded random
//! inputs, so CI replays exactly what the fuzzer runs. Each target reads a script from
//! the bytes with `arbitrary::Unstructured`, plays it against the public API on a
//! `ManualTimer`, and panics when an invariant breaks.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use futures_core::future::FusedFuture;
use hedging::timer::{ManualSleep, ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy, PolicyBuilder, Stats, Verdict};

mod policy_builder;
mod schedule;

pub use policy_builder::policy_builder;
pub use schedule::schedule;

const MS: Duration = Duration::from_millis(1);

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// Every panic a script asks for carries this prefix; no other panic is expected.
const SCRIPTED: &str = "scripted ";

/// Silences the panics scripts ask for, leaving every other panic to the hook before.
fn quiet_scripted_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !panic_message(info.payload()).starts_with(SCRIPTED) {
                previous(info);
            }
        }));
    });
}

/// `HEDGING_FUZZ_DEBUG=1` prints each decoded script (to read a failing input).
fn debugging() -> bool {
    static DEBUG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEBUG.get_or_init(|| std::env::var_os("HEDGING_FUZZ_DEBUG").is_some())
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    match payload.downcast_ref::<&'static str>() {
        Some(message) => message,
        None => payload.downcast_ref::<String>().map_or("", String::as_str),
    }
}

// ---- script pieces ----------------------------------------------------------------------

/// How one copy ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Ok(u8),
    Err(u8),
    /// The copy's `poll` panics once its latency has passed.
    Panic,
    /// Pending forever, and never wakes anyone.
    Never,
    /// The factory panics instead of making the copy.
    FactoryPanic,
}

#[derive(Clone, Copy, Debug)]
struct Step {
    latency: Duration,
    end: End,
}

impl Step {
    fn read(u: &mut Unstructured<'_>) -> Result<Step> {
        let latency = ms(u.int_in_range(0..=40)?);
        let end = match u.int_in_range(0..=15u8)? {
            0..=5 => End::Ok(u.arbitrary()?),
            6..=10 => End::Err(u.arbitrary()?),
            11 | 12 => End::Never,
            13 | 14 => End::Panic,
            _ => End::FactoryPanic,
        };
        Ok(Step { latency, end })
    }
}

/// When copies start, as the builder's mode methods set it.
#[derive(Clone, Debug)]
enum Mode {
    Fixed(Duration),
    Parallel,
    Fallback,
    /// `delay_fn`: entry k is the delay before copy k; missing entries are `None`.
    PerCopy(Arc<Vec<Option<Duration>>>),
}

impl Mode {
    fn delay(&self, copy: usize) -> Option<Duration> {
        match self {
            Mode::Fixed(delay) => Some(*delay),
            Mode::Parallel => Some(Duration::ZERO),
            Mode::Fallback => None,
            Mode::PerCopy(delays) => delays.get(copy).copied().flatten(),
        }
    }

    /// The cap the policy applies: a `max_delay` below a fixed delay is raised to it.
    fn effective_max_delay(&self, max_delay: Option<Duration>) -> Option<Duration> {
        match self {
            Mode::Fixed(delay) => max_delay.map(|cap| cap.max(*delay)),
            Mode::Parallel => max_delay,
            Mode::Fallback | Mode::PerCopy(_) => max_delay,
        }
    }

    fn apply<T>(
        &self,
        builder: PolicyBuilder<T>,
        delay_fn_calls: &Arc<Mutex<Vec<usize>>>,
    ) -> PolicyBuilder<T> {
        match self {
            Mode::Fixed(delay) => builder.delay(*delay),
            Mode::Parallel => builder.parallel(),
            Mode::Fallback => builder.fallback(),
            Mode::PerCopy(delays) => {
                let delays = Arc::clone(delays);
                let calls = Arc::clone(delay_fn_calls);
                builder.delay_fn(move |copy| {
                    calls.lock().unwrap_or_else(|e| e.into_inner()).push(copy);
                    delays.get(copy).copied().flatten()
                })
            }
        }
    }
}

/// The schedule rule of the contracts table, written out on its own: copy k is due
/// `delay` after copy k-1 started; once that would pass `max_delay` after the original,
/// copies are spread `max(delay / 4, 1 ms)` apart.
fn due_by_rule(
    delay: Duration,
    max_delay: Option<Duration>,
    previous: Duration,
    first: Duration,
) -> Duration {
    let natural = previous.saturating_add(delay);
    match max_delay {
        Some(cap) if natural > first.saturating_add(cap) => {
            let spread = (delay / 4).max(MS);
            first
                .saturating_add(cap)
                .max(previous.saturating_add(spread))
        }
        _ => natural,
    }
}

/// A duration from any scale: zero, nanoseconds, milliseconds, seconds, or near the top.
fn any_duration(u: &mut Unstructured<'_>) -> Result<Duration> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => Duration::ZERO,
        1 => Duration::from_nanos(u.int_in_range(0..=2_000_000)?),
        2..=4 => ms(u.int_in_range(0..=1_000)?),
        5 => Duration::from_secs(u.arbitrary::<u32>()?.into()),
        6 => Duration::MAX - Duration::from_nanos(u.int_in_range(0..=1_000_000)?),
        _ => Duration::new(u.arbitrary()?, u.int_in_range(0..=999_999_999)?),
    })
}

/// Which classification the call uses.
#[derive(Clone, Copy, Debug)]
enum Judge {
    ByResult,
    /// `.when(|e| e % 2 == 0)`: even errors are retried, odd ones are fatal.
    When,
    /// `.classify(verdict_of)`: every verdict occurs.
    Classify,
}

fn retryable(error: &u8) -> bool {
    error.is_multiple_of(2)
}

fn classified(result: &std::result::Result<u8, u8>) -> Verdict {
    match result {
        Ok(value) if value % 4 == 0 => Verdict::Retry,
        Ok(value) if value % 4 == 1 => Verdict::Withdraw,
        Ok(_) => Verdict::Win,
        Err(error) if error % 3 == 0 => Verdict::Retry,
        Err(error) if error % 3 == 1 => Verdict::Fatal,
        Err(_) => Verdict::Win,
    }
}

impl Judge {
    fn verdict(self, result: &std::result::Result<u8, u8>) -> Verdict {
        match (self, result) {
            (Judge::ByResult | Judge::When, Ok(_)) => Verdict::Win,
            (Judge::ByResult, Err(_)) => Verdict::Retry,
            (Judge::When, Err(error)) if retryable(error) => Verdict::Retry,
            (Judge::When, Err(_)) => Verdict::Fatal,
            (Judge::Classify, result) => classified(result),
        }
    }
}

// ---- scripted copies ----------------------------------------------------------------------

/// What the scripted backend saw.
#[derive(Default, Debug)]
struct Log {
    /// Every attempt the factory was called with, in order.
    attempts: Vec<Attempt>,
    /// (copy index, virtual time) of every copy the factory made.
    made: Vec<(usize, Duration)>,
    /// Copies dropped.
    dropped: usize,
    /// Sleeps the copies made (the rest of the timer's sleeps are the hedge timer).
    copy_sleeps: u64,
    /// A finished copy was polled again.
    polled_after_finish: bool,
}

type SharedLog = Rc<RefCell<Log>>;

struct ScriptedCopy {
    end: End,
    sleep: Option<ManualSleep>,
    log: SharedLog,
    finished: bool,
}

impl ScriptedCopy {
    fn new(timer: &ManualTimer, step: Step, log: &SharedLog) -> ScriptedCopy {
        let sleep = (step.end != End::Never).then(|| {
            log.borrow_mut().copy_sleeps += 1;
            timer.sleep(step.latency)
        });
        ScriptedCopy {
            end: step.end,
            sleep,
            log: Rc::clone(log),
            finished: false,
        }
    }
}

impl Future for ScriptedCopy {
    type Output = std::result::Result<u8, u8>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.finished {
            // Not an assertion: with `catch_unwind` on it would become a failed copy.
            self.log.borrow_mut().polled_after_finish = true;
            return Poll::Pending;
        }
        let Some(sleep) = self.sleep.as_mut() else {
            return Poll::Pending;
        };
        if Pin::new(sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.finished = true;
        match self.end {
            End::Ok(value) => Poll::Ready(Ok(value)),
            End::Err(error) => Poll::Ready(Err(error)),
            End::Panic => panic!("scripted copy panic"),
            End::Never | End::FactoryPanic => unreachable!("these copies never finish"),
        }
    }
}

impl Drop for ScriptedCopy {
    fn drop(&mut self) {
        self.log.borrow_mut().dropped += 1;
    }
}

#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

// ---- hedge_state_machine ------------------------------------------------------------------

/// A whole call: the policy, what every copy does, and what the driver does.
#[derive(Debug)]
struct Script {
    /// As given to the builder (0 is clamped to 1).
    max_copies: usize,
    mode: Mode,
    max_delay: Option<Duration>,
    hedge_probability: f64,
    catch_unwind: bool,
    judge: Judge,
    /// The `on_hedge` hook panics for this copy.
    hook_panics_at: Option<usize>,
    steps: Vec<Step>,
    actions: Vec<Action>,
}

#[derive(Clone, Copy, Debug)]
enum Action {
    /// Poll if woken, else move the clock to the next deadline.
    Run,
    /// Move the clock by this much (past several events at once), then poll if woken.
    Advance(Duration),
    /// Poll although not woken: a correct future does not mind.
    SpuriousPoll,
    /// Drop the call here.
    Drop,
}

impl Script {
    fn read(u: &mut Unstructured<'_>) -> Result<Script> {
        let max_copies = u.int_in_range(0..=6usize)?;
        let copies = max_copies.max(1);
        let mode = match u.int_in_range(0..=5u8)? {
            0..=2 => Mode::Fixed(ms(u.int_in_range(0..=40)?)),
            3 => Mode::Parallel,
            4 => Mode::Fallback,
            _ => {
                let mut delays = vec![None];
                for _ in 1..copies {
                    let delay = ms(u.int_in_range(0..=40)?);
                    delays.push((!u.ratio(1, 6)?).then_some(delay));
                }
                Mode::PerCopy(Arc::new(delays))
            }
        };
        let max_delay = if u.ratio(1, 3)? {
            Some(ms(u.int_in_range(0..=100)?))
        } else {
            None
        };
        let hedge_probability = match u.int_in_range(0..=9u8)? {
            0 => 0.0,
            1 => 0.5,
            2 => f64::NAN,
            3 => -1.0,
            4 => 7.0,
            _ => 1.0,
        };
        let catch_unwind = u.arbitrary()?;
        let judge = match u.int_in_range(0..=2u8)? {
            0 => Judge::ByResult,
            1 => Judge::When,
            _ => Judge::Classify,
        };
        let hook_panics_at = if u.ratio(1, 8)? {
            Some(u.int_in_range(1..=copies)?)
        } else {
            None
        };
        let steps = (0..copies)
            .map(|_| Step::read(u))
            .collect::<Result<Vec<_>>>()?;
        let mut actions = Vec::new();
        while actions.len() < 48 && !u.is_empty() {
            actions.push(match u.int_in_range(0..=15u8)? {
                0..=8 => Action::Run,
                9..=12 => Action::Advance(ms(u.int_in_range(0..=60)?)),
                13 | 14 => Action::SpuriousPoll,
                _ => Action::Drop,
            });
        }
        Ok(Script {
            max_copies,
            mode,
            max_delay,
            hedge_probability,
            catch_unwind,
            judge,
            hook_panics_at,
            steps,
            actions,
        })
    }
}

/// What one poll should return, by the reference model.
#[derive(Clone, Debug, PartialEq)]
enum Expected {
    Pending,
    /// `Ready`, won by copy `index`.
    Won {
        index: usize,
        result: std::result::Result<u8, u8>,
    },
    /// `Ready` with a failure: a fatal verdict, or every copy failed or withdrew.
    Failed(std::result::Result<u8, u8>),
    /// `catch_unwind` caught copy panics, nothing won or failed: the panic resumes and the
    /// call is over.
    Resumed,
    /// A panic unwinds out of `poll` mid-race: a copy's or the factory's with `catch_unwind`
    /// off, or the `on_hedge` hook's.
    Unwound,
}

/// The reference model: the contracts table, step by step, on plain vectors.
///
/// Polled at the same virtual times as the real call, it says what that poll returns,
/// which copies exist, and when the next thing happens.
struct Model<'s> {
    script: &'s Script,
    started: bool,
    max_copies: usize,
    effective_max_delay: Option<Duration>,
    /// Copies made (or whose factory panicked under `catch_unwind`).
    launched: usize,
    /// (index, finish time or `None` for never), in index order.
    in_flight: Vec<(usize, Option<Duration>)>,
    first_start: Duration,
    last_start: Duration,
    lowest_failure: Option<(usize, std::result::Result<u8, u8>)>,
    lowest_withdrawn: Option<(usize, std::result::Result<u8, u8>)>,
    caught_panic: bool,
    /// (index, virtual time) of each copy made.
    made: Vec<(usize, Duration)>,
    /// When each copy really started, from the call's start: `Attempt::elapsed`.
    elapsed: Vec<Duration>,
    hedges: u64,
    hook_calls: usize,
}

impl<'s> Model<'s> {
    fn new(script: &'s Script) -> Self {
        Model {
            script,
            started: false,
            max_copies: 0,
            effective_max_delay: script.mode.effective_max_delay(script.max_delay),
            launched: 0,
            in_flight: Vec::new(),
            first_start: Duration::ZERO,
            last_start: Duration::ZERO,
            lowest_failure: None,
            lowest_withdrawn: None,
            caught_panic: false,
            made: Vec::new(),
            elapsed: Vec::new(),
            hedges: 0,
            hook_calls: 0,
        }
    }

    /// One poll at `now`; `max_copies` is what this call may start (after the roll).
    fn poll(&mut self, now: Duration, max_copies: usize) -> Expected {
        if !self.started {
            self.started = true;
            self.max_copies = max_copies;
            self.first_start = now;
            if let Some(end) = self.launch(now, now) {
                return end;
            }
        }
        // Every copy in flight whose time has come finishes, in index order.
        let mut position = 0;
        while position < self.in_flight.len() {
            let (index, finish) = self.in_flight[position];
            if finish.is_some_and(|finish| finish <= now) {
                self.in_flight.remove(position);
                if let Some(end) = self.settle(index) {
                    return end;
                }
            } else {
                position += 1;
            }
        }
        loop {
            if self.in_flight.is_empty() {
                if self.launched == self.max_copies {
                    return self.give_up();
                }
                // Failure accelerates: the next copy starts now.
                if let Some(end) = self.launch(now, now) {
                    return end;
                }
                continue;
            }
            match self.next_due() {
                Some(due) if due <= now => {
                    if let Some(end) = self.launch(due, now) {
                        return end;
                    }
                }
                _ => return Expected::Pending,
            }
        }
    }

    /// When the next copy is due by the clock, if one is.
    fn next_due(&self) -> Option<Duration> {
        if self.launched >= self.max_copies {
            return None;
        }
        let delay = self.script.mode.delay(self.launched)?;
        let due = due_by_rule(
            delay,
            self.effective_max_delay,
            self.last_start,
            self.first_start,
        );
        // A due time that saturated is past the end of time: never.
        (due < Duration::MAX).then_some(due)
    }

    /// The earliest time something should wake the call: a copy finishing or a copy due.
    fn next_event(&self) -> Option<Duration> {
        let finish = self
            .in_flight
            .iter()
            .filter_map(|(_, finish)| *finish)
            .min();
        let due = if self.in_flight.is_empty() {
            None
        } else {
            self.next_due()
        };
        finish.into_iter().chain(due).min()
    }

    /// Starts copy `launched`, due at `start`, made at `now`.
    fn launch(&mut self, start: Duration, now: Duration) -> Option<Expected> {
        let index = self.launched;
        if index > 0 {
            self.hook_calls += 1;
            if self.script.hook_panics_at == Some(index) {
                return Some(Expected::Unwound);
            }
        }
        let step = self.script.steps[index];
        if step.end == End::FactoryPanic && !self.script.catch_unwind {
            return Some(Expected::Unwound);
        }
        self.launched += 1;
        self.hedges += u64::from(index > 0);
        self.last_start = start;
        self.elapsed.push(now.saturating_sub(self.first_start));
        if step.end == End::FactoryPanic {
            self.caught_panic = true;
            return None;
        }
        self.made.push((index, now));
        let finish = (step.end != End::Never).then(|| now + step.latency);
        if finish == Some(now) {
            // Polled once as it starts: a copy with no latency finishes at once.
            return self.settle(index);
        }
        self.in_flight.push((index, finish));
        None
    }

    fn settle(&mut self, index: usize) -> Option<Expected> {
        let result = match self.script.steps[index].end {
            End::Ok(value) => Ok(value),
            End::Err(error) => Err(error),
            End::Panic if self.script.catch_unwind => {
                self.caught_panic = true;
                return None;
            }
            End::Panic => return Some(Expected::Unwound),
            End::Never | End::FactoryPanic => unreachable!("never settles"),
        };
        let keep = |kept: &mut Option<(usize, _)>| {
            if kept.as_ref().is_none_or(|(kept, _)| index < *kept) {
                *kept = Some((index, result));
            }
        };
        match self.script.judge.verdict(&result) {
            Verdict::Win => Some(Expected::Won { index, result }),
            Verdict::Fatal => Some(Expected::Failed(result)),
            Verdict::Retry => {
                keep(&mut self.lowest_failure);
                None
            }
            Verdict::Withdraw => {
                keep(&mut self.lowest_withdrawn);
                None
            }
            Verdict::RetryAfter(_) | Verdict::Stop => unreachable!("not scripted"),
        }
    }

    /// Every copy finished and none won: the lowest failure, else a caught panic, else the
    /// lowest withdrawn result.
    fn give_up(&mut self) -> Expected {
        if let Some((_, result)) = self.lowest_failure {
            return Expected::Failed(result);
        }
        if self.caught_panic {
            return Expected::Resumed;
        }
        let (_, result) = self
            .lowest_withdrawn
            .expect("a race that ends keeps a result");
        Expected::Failed(result)
    }
}

/// Runs one scripted call against the real `Hedge` and the reference model.
///
/// Invariants: never more than `max_copies` copies start; each poll returns what the model
/// says; the copies start when the model says; every copy (and every sleep) is dropped by
/// the time `poll` returns `Ready` or the call is dropped; no wake-up is lost; the stats
/// match the model at every step; `on_hedge` runs once per copy beyond the first.
pub fn hedge_state_machine(data: &[u8]) {
    quiet_scripted_panics();
    let Ok(script) = Script::read(&mut Unstructured::new(data)) else {
        return;
    };
    if debugging() {
        eprintln!("{script:#?}");
    }
    let timer = ManualTimer::new();
    let delay_fn_calls = Arc::new(Mutex::new(Vec::new()));
    let hook_calls = Arc::new(AtomicUsize::new(0));
    let builder = Policy::builder()
        .max_copies(script.max_copies)
        .hedge_probability(script.hedge_probability)
        .catch_unwind(script.catch_unwind)
        .timer(timer.clone());
    let builder = script.mode.apply(builder, &delay_fn_calls);
    let builder = match script.max_delay {
        Some(max_delay) => builder.max_delay(max_delay),
        None => builder,
    };
    let hooked = Arc::clone(&hook_calls);
    let hook_panics_at = script.hook_panics_at;
    let policy = builder
        .on_hedge(move |attempt| {
            hooked.fetch_add(1, SeqCst);
            if Some(attempt.index()) == hook_panics_at {
                panic!("scripted hook panic");
            }
        })
        .build();
    assert_eq!(
        policy.max_copies(),
        script.max_copies.max(1),
        "max_copies(0) clamps to 1"
    );

    let log = SharedLog::default();
    let factory = {
        let (timer, log, steps) = (timer.clone(), Rc::clone(&log), script.steps.clone());
        move |attempt: Attempt| {
            log.borrow_mut().attempts.push(attempt);
            // Never index out of range here: with catch_unwind on, that panic would be
            // caught as a failed copy. An extra copy is caught by the attempts count.
            let step = steps.get(attempt.index()).copied().unwrap_or(Step {
                latency: Duration::ZERO,
                end: End::Never,
            });
            if step.end == End::FactoryPanic {
                panic!("scripted factory panic");
            }
            log.borrow_mut().made.push((attempt.index(), timer.now()));
            ScriptedCopy::new(&timer, step, &log)
        }
    };
    let call = Call {
        script: &script,
        timer: &timer,
        policy: &policy,
        log: &log,
        hook_calls: &hook_calls,
    };
    match script.judge {
        Judge::ByResult => call.run(factory.hedged(&policy)),
        Judge::When => call.run(factory.hedged(&policy).when(retryable)),
        Judge::Classify => call.run(factory.hedged(&policy).classify(classified)),
    }

    let asked = delay_fn_calls.lock().unwrap_or_else(|e| e.into_inner());
    for (position, copy) in asked.iter().enumerate() {
        assert!(
            (1..script.max_copies.max(1)).contains(copy),
            "delay_fn asked about copy {copy}"
        );
        assert!(
            !asked[..position].contains(copy),
            "delay_fn asked twice about copy {copy}"
        );
    }
}

struct Call<'a> {
    script: &'a Script,
    timer: &'a ManualTimer,
    policy: &'a Policy<ManualTimer>,
    log: &'a SharedLog,
    hook_calls: &'a AtomicUsize,
}

/// A call being driven, with its model and its waker.
struct Driven<'s, H> {
    hedge: Option<Pin<Box<H>>>,
    model: Model<'s>,
    waker: Waker,
    wakes: Arc<CountingWaker>,
    seen_wakes: usize,
    polled: bool,
}

impl<H> Driven<'_, H> {
    /// The first poll, or a wake-up since the last poll.
    fn woken(&self) -> bool {
        !self.polled || self.wakes.0.load(SeqCst) > self.seen_wakes
    }
}

impl Call<'_> {
    fn run<H>(&self, hedge: H)
    where
        H: Future<Output = std::result::Result<u8, u8>> + FusedFuture,
    {
        let wakes = Arc::new(CountingWaker::default());
        let mut driven = Driven {
            hedge: Some(Box::pin(hedge)),
            model: Model::new(self.script),
            waker: Waker::from(Arc::clone(&wakes)),
            wakes,
            seen_wakes: 0,
            polled: false,
        };
        let mut actions = self.script.actions.iter().copied();
        for _ in 0..10_000 {
            let action = actions.next().unwrap_or(Action::Run);
            let over = match action {
                Action::SpuriousPoll => self.poll(&mut driven),
                Action::Drop => self.drop_call(&mut driven),
                Action::Run | Action::Advance(_) => {
                    if let Action::Advance(by) = action {
                        self.timer.advance(by);
                    }
                    if driven.woken() {
                        self.poll(&mut driven)
                    } else {
                        // Not woken: nothing may have come due, or a wake-up was lost.
                        let now = self.timer.now();
                        if let Some(event) = driven.model.next_event() {
                            assert!(
                                event > now,
                                "lost wake-up: an event at {event:?} passed, now {now:?}"
                            );
                        }
                        match self.timer.next_deadline() {
                            Some(next) if matches!(action, Action::Run) => {
                                self.timer.advance(next - now);
                                false
                            }
                            Some(_) => false,
                            None => {
                                // Nothing can wake it: right only if nothing is left to
                                // happen (the copies in flight never end).
                                assert_eq!(
                                    driven.model.next_event(),
                                    None,
                                    "stalled with an event pending"
                                );
                                actions.len() == 0 && self.drop_call(&mut driven)
                            }
                        }
                    }
                }
            };
            if over {
                assert!(driven.hedge.is_none());
                return;
            }
        }
        panic!("the call did not finish");
    }

    /// Polls once and checks the answer against the model; `true` when the call is over
    /// (and dropped).
    fn poll<H>(&self, driven: &mut Driven<'_, H>) -> bool
    where
        H: Future<Output = std::result::Result<u8, u8>> + FusedFuture,
    {
        driven.seen_wakes = driven.wakes.0.load(SeqCst);
        driven.polled = true;
        let now = self.timer.now();
        let future = driven.hedge.as_mut().expect("polled after the end");
        let mut cx = Context::from_waker(&driven.waker);
        let real = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            future.as_mut().poll(&mut cx)
        }));
        let max_copies = self
            .log
            .borrow()
            .attempts
            .first()
            .map_or(0, Attempt::max_copies);
        let model = &mut driven.model;
        let expected = model.poll(now, max_copies);
        self.check_progress(model);
        let terminated = future.is_terminated();
        let outcome = match (real, expected) {
            (Ok(Poll::Pending), Expected::Pending) => {
                // A call is counted where it ends.
                self.check_stats(model, Stats::default());
                return false;
            }
            (
                Ok(Poll::Ready(result)),
                Expected::Won {
                    index,
                    result: expected,
                },
            ) => {
                assert_eq!(result, expected, "won by copy {index}");
                Stats {
                    wins: 1,
                    hedge_wins: u64::from(index > 0),
                    ..Stats::default()
                }
            }
            (Ok(Poll::Ready(result)), Expected::Failed(expected)) => {
                assert_eq!(result, expected, "the returned failure");
                Stats {
                    failures: 1,
                    ..Stats::default()
                }
            }
            (Err(panic), Expected::Resumed) => {
                let message = panic_message(&*panic);
                assert!(message.starts_with(SCRIPTED), "unexpected panic: {message}");
                Stats {
                    failures: 1,
                    ..Stats::default()
                }
            }
            (Err(panic), Expected::Unwound) => {
                let message = panic_message(&*panic);
                assert!(message.starts_with(SCRIPTED), "unexpected panic: {message}");
                assert!(!terminated, "a call that unwound mid-race is not over");
                return self.drop_call(driven);
            }
            (Err(panic), expected) => panic!(
                "poll panicked ({}), expected {expected:?}",
                panic_message(&*panic)
            ),
            (Ok(real), expected) => panic!("poll returned {real:?}, expected {expected:?}"),
        };
        // Ready (or a caught panic resumed): every copy and the timer are already gone.
        assert!(terminated, "a finished call reports is_terminated");
        let log = self.log.borrow();
        assert_eq!(
            log.dropped,
            log.made.len(),
            "every copy dropped before poll returns"
        );
        drop(log);
        assert_eq!(
            self.timer.live_sleeps(),
            0,
            "the hedge timer dropped before poll returns"
        );
        let outcome = Stats {
            calls: 1,
            ..outcome
        };
        self.check_stats(model, outcome);
        driven.hedge = None;
        self.check_stats(model, outcome); // dropping a finished call changes nothing
        true
    }

    /// Drops the call mid-race: every copy and sleep goes, and the call counts as
    /// cancelled if it was polled.
    fn drop_call<H>(&self, driven: &mut Driven<'_, H>) -> bool {
        driven.hedge = None;
        let log = self.log.borrow();
        assert_eq!(
            log.dropped,
            log.made.len(),
            "every copy dropped with the call"
        );
        drop(log);
        assert_eq!(
            self.timer.live_sleeps(),
            0,
            "every sleep dropped with the call"
        );
        let outcome = if driven.polled {
            Stats {
                calls: 1,
                cancelled: 1,
                ..Stats::default()
            }
        } else {
            Stats::default()
        };
        self.check_stats(&driven.model, outcome);
        true
    }

    /// After every poll: the copies made and the stats so far agree with the model.
    fn check_progress(&self, model: &Model<'_>) {
        let log = self.log.borrow();
        let max_copies = self.script.max_copies.max(1);
        assert!(
            log.attempts.len() <= max_copies,
            "{} copies started, max {max_copies}",
            log.attempts.len()
        );
        assert!(!log.polled_after_finish, "a finished copy was polled again");
        assert_eq!(log.made, model.made, "copies made (index, time)");
        for (index, attempt) in log.attempts.iter().enumerate() {
            assert_eq!(attempt.index(), index);
            assert_eq!(attempt.is_hedge(), index > 0);
            assert_eq!(attempt.max_copies(), model.max_copies);
            if let Some(elapsed) = model.elapsed.get(index) {
                assert_eq!(attempt.elapsed(), *elapsed, "elapsed of copy {index}");
            }
        }
        let per_call = model.max_copies;
        let p = self.script.hedge_probability;
        if p.is_nan() || p >= 1.0 {
            assert_eq!(per_call, max_copies, "hedge_probability {p} never misses");
        } else if p <= 0.0 {
            assert_eq!(per_call, 1, "hedge_probability {p} never hedges");
        } else {
            assert!(per_call == 1 || per_call == max_copies);
        }
        assert_eq!(
            self.hook_calls.load(SeqCst),
            model.hook_calls,
            "on_hedge calls"
        );
        // Lazy timer: at most one hedge timer per call, none when no copy is ever timed.
        let hedge_timers = self.timer.sleeps_created() - log.copy_sleeps;
        assert!(hedge_timers <= 1, "{hedge_timers} hedge timers in one call");
        if matches!(self.script.mode, Mode::Parallel | Mode::Fallback) || per_call == 1 {
            assert_eq!(
                hedge_timers, 0,
                "a call that never times a copy arms no timer"
            );
        }
    }

    fn check_stats(&self, model: &Model<'_>, outcome: Stats) {
        let expected = Stats {
            hedges: model.hedges,
            ..outcome
        };
        assert_eq!(self.policy.stats(), expected);
    }
}
