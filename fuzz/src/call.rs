//! Plays a script against the real `Hedge` (or `HedgeStream`) and the model, and checks
//! them against each other after every poll.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use arbitrary::Unstructured;
use futures_core::future::FusedFuture;
use futures_core::stream::{FusedStream, Stream};
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Budget, Hedgeable, HedgeableStream, Policy, Verdict};

use super::model::{nanos, AdaptiveModel, BudgetModel, Expected, Model, World};
use super::script::{
    classified, retryable, Action, AdaptiveScript, CallScript, End, Factory, Fail, Judge, Mode,
    Output, Script, Step,
};
use super::scripted::{Log, ScriptedCopy, ScriptedStream, SharedLog};
use super::{debugging, panic_message, quiet_scripted_panics, CountingWaker, MS, SCRIPTED};

/// Reads a script from `data` and plays it: calls of futures, or of streams.
pub(crate) fn run(data: &[u8], streams: bool) {
    quiet_scripted_panics();
    let Ok(script) = Script::read(&mut Unstructured::new(data), streams) else {
        return;
    };
    if debugging() {
        eprintln!("{script:#?}");
    }
    let timer = ManualTimer::new();
    let delay_fn_calls = Arc::new(Mutex::new(Vec::new()));
    let hooks = Arc::new(Mutex::new(Vec::new()));
    let budget = script.budget.as_ref().map(|budget| budget.build());
    let policy = build_policy(&script, &timer, &delay_fn_calls, &hooks, budget.as_ref());
    assert_eq!(
        policy.max_copies(),
        script.max_copies.max(1),
        "max_copies(0) clamps to 1"
    );
    let mut world = World {
        budget: script.budget.as_ref().map(BudgetModel::new),
        ..World::default()
    };
    if let (Some(budget), Some(model)) = (&budget, &world.budget) {
        assert_eq!(budget.tokens(), model.tokens(), "a new budget is full");
    }
    let adaptive = script
        .adaptive
        .as_ref()
        .map(|adaptive| warm_up(&script, adaptive, &policy, &timer, &mut world));
    for call in &script.calls {
        if adaptive.is_none() {
            timer.advance(call.gap);
        }
        hooks.lock().unwrap_or_else(|e| e.into_inner()).clear();
        let log = Log {
            slot_budget: budget
                .clone()
                .filter(|_| world.budget.as_ref().is_some_and(BudgetModel::capped)),
            ..Log::default()
        };
        let mut played = Call {
            script: &script,
            call,
            streams,
            adaptive,
            timer: &timer,
            policy: &policy,
            budget: budget.as_ref(),
            log: Rc::new(RefCell::new(log)),
            hooks: &hooks,
            world: &mut world,
            sleeps_before: timer.sleeps_created(),
        };
        played.dispatch();
        check_delay_fn(&script, &delay_fn_calls);
    }
}

fn build_policy(
    script: &Script,
    timer: &ManualTimer,
    delay_fn_calls: &Arc<Mutex<Vec<usize>>>,
    hooks: &Arc<Mutex<Vec<Attempt>>>,
    budget: Option<&Budget>,
) -> Policy<ManualTimer> {
    let builder = Policy::builder()
        .max_copies(script.max_copies)
        .hedge_probability(script.hedge_probability)
        .catch_unwind(script.catch_unwind)
        .replace_failed(script.replace_failed)
        .timer(timer.clone());
    let builder = script.mode.apply(builder, delay_fn_calls);
    let builder = match &script.adaptive {
        Some(adaptive) => adaptive.apply(builder),
        None => builder,
    };
    let builder = match script.max_delay {
        Some(max_delay) => builder.max_delay(max_delay),
        None => builder,
    };
    let builder = match budget {
        Some(budget) => builder.budget(budget),
        None => builder,
    };
    let hooks = Arc::clone(hooks);
    let hook_panics_at = script.hook_panics_at;
    builder
        .on_hedge(move |attempt| {
            hooks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(*attempt);
            if Some(attempt.index()) == hook_panics_at {
                panic!("scripted hook panic");
            }
        })
        .build()
}

/// `delay_fn` runs once per copy of a call, only for copies beyond the first.
fn check_delay_fn(script: &Script, delay_fn_calls: &Mutex<Vec<usize>>) {
    let mut asked = delay_fn_calls.lock().unwrap_or_else(|e| e.into_inner());
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
    asked.clear();
}

/// Calls that teach the adaptive delay the scripted latencies, all answering before their
/// hedge is due and recorded in the first quarter window; then the clock moves to where
/// the scripted call starts. Returns what the delay is during that call.
///
/// The delay a quarter window sees is read from the policy when the call starts (the call
/// reads it at that moment too), and from a twin policy taught the same latencies for
/// later quarters; each is checked against the nearest-rank quantile of the recorded
/// latencies, or their maximum when they look like a queue, within one histogram bucket.
fn warm_up(
    script: &Script,
    adaptive: &AdaptiveScript,
    policy: &Policy<ManualTimer>,
    timer: &ManualTimer,
    world: &mut World,
) -> AdaptiveModel {
    let Mode::Fixed(delay) = script.mode else {
        unreachable!("an adaptive delay is scripted on a fixed one only");
    };
    let window = adaptive.window.max(Duration::from_millis(100));
    let slot_nanos = (nanos(window) / 4).max(1);
    let min_delay = adaptive.min_delay.unwrap_or(MS);
    let max_delay = script.max_delay.map(|max_delay| max_delay.max(min_delay));
    let bound = |delay: Duration| delay.clamp(min_delay, max_delay.unwrap_or(Duration::MAX));
    let fallback = bound(delay);
    assert_eq!(
        policy.delay(),
        Some(fallback),
        "until latencies are known, the fixed delay within min_delay..=max_delay"
    );

    let mut recorded = Vec::new();
    for &latency in &adaptive.warm_ups {
        let latency = latency.min(fallback.saturating_sub(Duration::from_nanos(1)));
        if nanos(timer.now() + latency) >= slot_nanos {
            break;
        }
        let per_call = warm_up_call(policy, timer, latency);
        world.warm_up_won();
        if !latency.is_zero() && per_call > 1 {
            // Its original answered after a first `Pending`: its latency is recorded.
            recorded.push(latency);
        }
    }
    assert_eq!(policy.stats(), world.stats, "stats after the warm-ups");

    let start = slot_nanos * adaptive.start_slot + slot_nanos * adaptive.start_offset / 1000;
    timer.advance(Duration::from_nanos(start) - timer.now());
    let early = policy.delay().expect("an adaptive delay");
    let late = if adaptive.start_slot <= 2 {
        // A twin taught the same latencies says what quarters 3 and 4 will see.
        let twin_timer = ManualTimer::new();
        let builder = Policy::builder()
            .max_copies(2)
            .delay(delay)
            .timer(twin_timer.clone());
        let builder = adaptive.apply(builder);
        let twin = match script.max_delay {
            Some(max_delay) => builder.max_delay(max_delay),
            None => builder,
        }
        .build();
        for &latency in &recorded {
            assert_eq!(warm_up_call(&twin, &twin_timer, latency), 2);
        }
        twin_timer.advance(Duration::from_nanos(start) - twin_timer.now());
        assert_eq!(twin.delay(), Some(early), "the twin reads the same delay");
        twin_timer.advance(Duration::from_nanos(slot_nanos * 3) - twin_timer.now());
        twin.delay().expect("an adaptive delay")
    } else {
        early
    };

    let min_samples = adaptive.min_samples.max(1) as usize;
    if recorded.is_empty() || recorded.len() < min_samples || adaptive.start_slot > 4 {
        assert_eq!(
            early, fallback,
            "no latencies in the window: the fixed delay"
        );
    }
    if adaptive.start_slot > 4 {
        // Only the fixed delay is read during the call.
    } else if recorded.is_empty() || recorded.len() < min_samples {
        assert_eq!(
            late, fallback,
            "too few latencies in the window: the fixed delay"
        );
    } else {
        let quantile = if adaptive.quantile.is_nan() {
            0.95
        } else {
            adaptive.quantile.clamp(0.0, 1.0)
        };
        let mut micros: Vec<u64> = recorded.iter().map(|l| l.as_micros() as u64).collect();
        micros.sort_unstable();
        // Rounded up to the edge of its histogram bucket: at most a sixteenth (or 1 µs)
        // above the value.
        let around = |value: u64| {
            bound(Duration::from_micros(value + 1))
                ..=bound(Duration::from_micros(value + (value / 16).max(1)))
        };
        let plain = around(nearest_rank(&micros, quantile));
        let slowest = around(*micros.last().expect("latencies"));
        assert!(
            plain.contains(&late),
            "adaptive delay {late:?}: the {quantile} quantile of {recorded:?}"
        );
        if adaptive.start_slot <= 2 {
            let fits = match looks_like_a_queue(&micros) {
                Some(true) => slowest.contains(&early),
                Some(false) => plain.contains(&early),
                None => slowest.contains(&early) || plain.contains(&early),
            };
            assert!(
                fits,
                "adaptive delay {early:?} in the quarter after {recorded:?} (quantile {quantile})"
            );
        }
    }
    AdaptiveModel {
        slot_nanos,
        early,
        late,
        fallback,
        max_delay,
    }
}

/// A call through `policy` whose original answers after `latency`, before its hedge is
/// due; returns the copies it was allowed.
fn warm_up_call(policy: &Policy<ManualTimer>, timer: &ManualTimer, latency: Duration) -> usize {
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let mut cx = Context::from_waker(&waker);
    let attempts = Rc::new(RefCell::new(Vec::<Attempt>::new()));
    let factory = {
        let (timer, attempts) = (timer.clone(), Rc::clone(&attempts));
        move |attempt: Attempt| {
            attempts.borrow_mut().push(attempt);
            let sleep = timer.sleep(latency);
            async move {
                sleep.await;
                Ok::<u8, Fail>(0)
            }
        }
    };
    let mut call = std::pin::pin!(factory.hedged(policy));
    let mut answer = call.as_mut().poll(&mut cx);
    if answer.is_pending() {
        timer.advance(latency);
        answer = call.as_mut().poll(&mut cx);
    }
    assert_eq!(answer, Poll::Ready(Ok(0)), "a warm-up call answers");
    let attempts = attempts.borrow();
    assert_eq!(attempts.len(), 1, "a warm-up call answers before its hedge");
    attempts[0].max_copies()
}

/// The nearest-rank `quantile` of sorted values: the smallest with at least `quantile` of
/// them at or below it.
fn nearest_rank(sorted: &[u64], quantile: f64) -> u64 {
    let total = sorted.len() as u128;
    let parts = (quantile * 1e6 + 0.5) as u128;
    let rank = (parts * total).div_ceil(1_000_000).clamp(1, total) as usize;
    sorted[rank - 1]
}

/// Whether latencies (µs, sorted) look like a queue to the adaptive delay: more than a
/// tenth of them over four times their median, all as histogram buckets see them. `None`
/// when the buckets' rounding could decide either way.
fn looks_like_a_queue(sorted: &[u64]) -> Option<bool> {
    let edge = |value: u64| (value + 1)..=(value + (value / 16).max(1));
    let median = edge(nearest_rank(sorted, 0.5));
    let (slow_above_low, slow_above_high) = (median.start() * 4, median.end() * 4);
    let surely_slow = sorted
        .iter()
        .filter(|&&value| *edge(value).start() > slow_above_high)
        .count();
    let maybe_slow = sorted
        .iter()
        .filter(|&&value| *edge(value).end() > slow_above_low)
        .count();
    let total = sorted.len();
    if surely_slow * 10 > total {
        Some(true)
    } else if maybe_slow * 10 <= total {
        Some(false)
    } else {
        None
    }
}

/// A call as the caller sees it: a future, or a stream.
trait Subject {
    /// Polls once: a future's output, or a stream's next item (`None`: its end).
    fn poll_subject(&mut self, cx: &mut Context<'_>) -> Poll<Option<Output>>;
    fn terminated(&self) -> bool;
}

struct FutureSubject<H>(Pin<Box<H>>);

impl<H> FutureSubject<H> {
    fn new(hedge: H) -> Self {
        FutureSubject(Box::pin(hedge))
    }
}

impl<H: Future<Output = Output> + FusedFuture> Subject for FutureSubject<H> {
    fn poll_subject(&mut self, cx: &mut Context<'_>) -> Poll<Option<Output>> {
        self.0.as_mut().poll(cx).map(Some)
    }

    fn terminated(&self) -> bool {
        self.0.is_terminated()
    }
}

struct StreamSubject<S>(Pin<Box<S>>);

impl<S> StreamSubject<S> {
    fn new(stream: S) -> Self {
        StreamSubject(Box::pin(stream))
    }
}

impl<S: Stream<Item = Output> + FusedStream> Subject for StreamSubject<S> {
    fn poll_subject(&mut self, cx: &mut Context<'_>) -> Poll<Option<Output>> {
        self.0.as_mut().poll_next(cx)
    }

    fn terminated(&self) -> bool {
        self.0.is_terminated()
    }
}

/// `.when` in scripts: logs what it is shown.
fn when(log: SharedLog) -> impl FnMut(&Fail) -> bool {
    move |error| {
        log.borrow_mut().classified.push(Err(*error));
        match error {
            Fail::Code(code) => retryable(*code),
            Fail::Elapsed => true,
        }
    }
}

/// `.classify` in scripts: logs what it is shown.
fn classify(log: SharedLog) -> impl FnMut(&Output) -> Verdict {
    move |result| {
        log.borrow_mut().classified.push(*result);
        classified(result)
    }
}

/// Sets the call's timeouts, then drives it.
macro_rules! timed {
    ($played:expr, $race:expr, $subject:ident) => {{
        let deadlines = $played.call.deadlines;
        match (deadlines.attempt, deadlines.total) {
            (None, None) => $played.drive($subject::new($race)),
            (Some(attempt), None) => $played.drive($subject::new($race.attempt_timeout(attempt))),
            (None, Some(total)) => $played.drive($subject::new($race.timeout(total))),
            (Some(attempt), Some(total)) => {
                $played.drive($subject::new($race.attempt_timeout(attempt).timeout(total)))
            }
        }
    }};
}

/// Sets the call's classifier and timeouts, then drives it.
macro_rules! judged {
    ($played:expr, $race:expr, $subject:ident) => {{
        let log = Rc::clone(&$played.log);
        match $played.call.judge {
            Judge::ByResult => timed!($played, $race, $subject),
            Judge::When => timed!($played, $race.when(when(log)), $subject),
            Judge::Classify => timed!($played, $race.classify(classify(log)), $subject),
        }
    }};
}

/// One call being played.
struct Call<'a> {
    script: &'a Script,
    call: &'a CallScript,
    streams: bool,
    adaptive: Option<AdaptiveModel>,
    timer: &'a ManualTimer,
    policy: &'a Policy<ManualTimer>,
    budget: Option<&'a Budget>,
    log: SharedLog,
    hooks: &'a Mutex<Vec<Attempt>>,
    world: &'a mut World,
    /// The timer's sleeps made before this call.
    sleeps_before: u64,
}

/// A call being driven, with its model and its waker.
struct Driven<'s, S> {
    subject: Option<S>,
    model: Model<'s>,
    waker: Waker,
    wakes: Arc<CountingWaker>,
    seen_wakes: usize,
    polled: bool,
    /// A stream yielded an item: its caller polls again at once.
    ready_again: bool,
}

impl<S> Driven<'_, S> {
    /// The first poll, a wake-up since the last poll, or a stream that just yielded.
    fn woken(&self) -> bool {
        !self.polled || self.ready_again || self.wakes.0.load(SeqCst) > self.seen_wakes
    }
}

impl<'a> Call<'a> {
    /// Makes the call with the scripted factory, classifier and timeouts, and plays it.
    fn dispatch(&mut self) {
        let factory = self.call.factory;
        let (timer, log, steps) = (
            self.timer.clone(),
            Rc::clone(&self.log),
            self.call.steps.clone(),
        );
        // Never index out of range in a factory: with catch_unwind on, that panic would be
        // caught as a failed copy. An extra copy is caught by the attempts check.
        let step = move |attempt: Attempt| -> Option<Step> {
            log.borrow_mut().attempts.push(attempt);
            if let Factory::Declining { from } = factory {
                if attempt.index() >= from {
                    return None;
                }
            }
            let step = steps.get(attempt.index()).cloned().unwrap_or(Step {
                latency: Duration::ZERO,
                end: End::Never,
                later: Vec::new(),
                ends: false,
            });
            if step.end == End::FactoryPanic {
                panic!("scripted factory panic");
            }
            log.borrow_mut().made.push((attempt.index(), timer.now()));
            Some(step)
        };
        let (timer, log) = (self.timer.clone(), Rc::clone(&self.log));
        let (policy, judge) = (self.policy, self.call.judge);
        match (self.streams, factory) {
            (false, Factory::Plain) => {
                let make = move |a: Attempt| {
                    let step = step(a).expect("a plain factory makes every copy");
                    ScriptedCopy::new(&timer, a.index(), &step, &log)
                };
                judged!(self, make.hedged(policy), FutureSubject)
            }
            (false, Factory::Declining { .. }) => {
                let make = move |a: Attempt| {
                    step(a).map(|step| ScriptedCopy::new(&timer, a.index(), &step, &log))
                };
                judged!(self, make.hedged(policy), FutureSubject)
            }
            (true, Factory::Plain) => {
                let make = move |a: Attempt| {
                    let step = step(a).expect("a plain factory makes every copy");
                    ScriptedStream::new(&timer, a.index(), &step, judge, &log)
                };
                judged!(self, make.hedged_stream(policy), StreamSubject)
            }
            (true, Factory::Declining { .. }) => {
                let make = move |a: Attempt| {
                    step(a).map(|step| ScriptedStream::new(&timer, a.index(), &step, judge, &log))
                };
                judged!(self, make.hedged_stream(policy), StreamSubject)
            }
        }
    }

    fn drive<S: Subject>(&mut self, subject: S) {
        let wakes = Arc::new(CountingWaker::default());
        let mut driven = Driven {
            subject: Some(subject),
            model: Model::new(self.script, self.call, self.streams, self.adaptive),
            waker: Waker::from(Arc::clone(&wakes)),
            wakes,
            seen_wakes: 0,
            polled: false,
            ready_again: false,
        };
        let mut actions = self.call.actions.iter().copied();
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
                assert!(driven.subject.is_none());
                return;
            }
        }
        panic!("the call did not finish");
    }

    /// Polls once and checks the answer against the model; `true` when the call is over
    /// (and dropped).
    fn poll<S: Subject>(&mut self, driven: &mut Driven<'_, S>) -> bool {
        driven.seen_wakes = driven.wakes.0.load(SeqCst);
        driven.polled = true;
        driven.ready_again = false;
        let now = self.timer.now();
        let subject = driven.subject.as_mut().expect("polled after the end");
        let mut cx = Context::from_waker(&driven.waker);
        let real = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            subject.poll_subject(&mut cx)
        }));
        let rolled = self
            .log
            .borrow()
            .attempts
            .first()
            .map_or(0, Attempt::max_copies);
        let committed = driven.model.committed();
        let expected = driven.model.poll(now, rolled, self.world);
        let terminated = subject.terminated();
        if debugging() {
            let slots = self
                .budget
                .map(|budget| (budget.tokens(), budget.outstanding()));
            eprintln!(
                "at {now:?}: expected {expected:?}, got {real:?}; budget (tokens, slots) {slots:?}"
            );
        }
        match (real, expected) {
            (Ok(Poll::Pending), Expected::Pending) => {
                self.check_progress(&driven.model);
                false
            }
            (
                Ok(Poll::Ready(Some(result))),
                Expected::Won {
                    index,
                    result: expected,
                },
            ) => {
                assert_eq!(result, expected, "won by copy {index}");
                if !self.streams {
                    return self.over(driven, terminated);
                }
                // The commit: the winner gave its slot back and goes on alone.
                assert!(!terminated, "a committed stream goes on");
                self.check_progress(&driven.model);
                driven.ready_again = true;
                false
            }
            (Ok(Poll::Ready(Some(result))), Expected::Failed(expected)) => {
                assert_eq!(result, expected, "the failure returned");
                if !self.streams {
                    return self.over(driven, terminated);
                }
                // The stream yields it, then ends.
                self.check_progress(&driven.model);
                driven.ready_again = true;
                false
            }
            (Ok(Poll::Ready(Some(item))), Expected::Item(expected)) => {
                assert_eq!(item, expected, "a committed stream's later item");
                assert!(!terminated, "a stream that yields goes on");
                self.check_progress(&driven.model);
                driven.ready_again = true;
                false
            }
            (Ok(Poll::Ready(None)), Expected::Empty | Expected::Ended) if self.streams => {
                self.over(driven, terminated)
            }
            (Err(panic), Expected::Resumed) => {
                let message = panic_message(&*panic);
                assert!(message.starts_with(SCRIPTED), "unexpected panic: {message}");
                self.over(driven, terminated)
            }
            (Err(panic), Expected::Unwound) => {
                let message = panic_message(&*panic);
                assert!(message.starts_with(SCRIPTED), "unexpected panic: {message}");
                if !committed {
                    assert!(!terminated, "a call that unwound mid-race is not over");
                }
                self.log.borrow_mut().orphan_slots = driven.model.orphan_slots;
                self.drop_call(driven)
            }
            (Err(panic), expected) => panic!(
                "poll panicked ({}), expected {expected:?}",
                panic_message(&*panic)
            ),
            (Ok(real), expected) => panic!("poll returned {real:?}, expected {expected:?}"),
        }
    }

    /// The call is over (a future returned, a stream ended, a caught panic resumed): every
    /// copy and the timer are already gone, and dropping it changes nothing.
    fn over<S: Subject>(&mut self, driven: &mut Driven<'_, S>, terminated: bool) -> bool {
        assert!(terminated, "a finished call reports it is terminated");
        self.check_progress(&driven.model);
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
        self.drop_call(driven)
    }

    /// Drops the call (mid-race: a cancellation): every copy and sleep goes, and every
    /// slot comes back.
    fn drop_call<S>(&mut self, driven: &mut Driven<'_, S>) -> bool {
        driven.subject = None;
        driven.model.drop_call(self.world);
        let log = self.log.borrow();
        assert!(log.violations.is_empty(), "{}", log.violations.join("; "));
        assert_eq!(
            log.dropped,
            log.made.len(),
            "every copy dropped with the call"
        );
        assert!(log.slot_holders.is_empty());
        drop(log);
        assert_eq!(
            self.timer.live_sleeps(),
            0,
            "every sleep dropped with the call"
        );
        assert_eq!(self.policy.stats(), self.world.stats, "stats");
        if let (Some(budget), Some(model)) = (self.budget, &self.world.budget) {
            assert_eq!(budget.outstanding(), 0, "every slot given back");
            assert_eq!(model.outstanding, 0, "model: every slot given back");
            assert_eq!(budget.tokens(), model.tokens(), "budget tokens");
        }
        true
    }

    /// After every poll: what the backend saw, the stats and the budget agree with the
    /// model.
    fn check_progress(&self, model: &Model<'_>) {
        let log = self.log.borrow();
        assert!(log.violations.is_empty(), "{}", log.violations.join("; "));
        let attempts: Vec<_> = log
            .attempts
            .iter()
            .map(|a| {
                assert_eq!(a.is_hedge(), a.index() > 0);
                (a.index(), a.elapsed(), a.max_copies())
            })
            .collect();
        assert_eq!(
            attempts, model.attempts,
            "factory calls (index, elapsed, max)"
        );
        assert_eq!(log.made, model.made, "copies made (index, time)");
        let hooks: Vec<_> = (self.hooks.lock().unwrap_or_else(|e| e.into_inner()))
            .iter()
            .map(|a| (a.index(), a.elapsed(), a.max_copies()))
            .collect();
        assert_eq!(hooks, model.hooks, "on_hedge calls (index, elapsed, max)");
        assert_eq!(log.classified, model.classified, "results classified");
        assert_eq!(
            log.dropped,
            log.made.len() - model.alive(),
            "copies dropped: every finished copy, at once"
        );
        assert_eq!(self.policy.stats(), self.world.stats, "stats");

        // The one timer: made lazily, alive until the call ends.
        let hedge_timers = self.timer.sleeps_created() - self.sleeps_before - log.copy_sleeps;
        assert_eq!(
            hedge_timers,
            u64::from(model.timer_made),
            "hedge timers made"
        );
        assert_eq!(
            self.timer.live_sleeps(),
            log.live_copy_sleeps + usize::from(model.timer_alive()),
            "sleeps alive"
        );

        if let (Some(budget), Some(budget_model)) = (self.budget, &self.world.budget) {
            assert_eq!(budget.tokens(), budget_model.tokens(), "budget tokens");
            assert_eq!(
                budget_model.outstanding as usize,
                model.slots_held(),
                "model: slots held by the hedges in flight"
            );
            assert_eq!(
                budget.outstanding(),
                model.slots_held(),
                "slots held: one per hedge in flight"
            );
            assert_eq!(
                log.slot_holders.len(),
                model.slots_held(),
                "hedges alive holding a slot"
            );
        }

        let max_copies = self.script.max_copies.max(1);
        let per_call = log.attempts.first().map_or(max_copies, Attempt::max_copies);
        let p = self.script.hedge_probability;
        if p.is_nan() || p >= 1.0 {
            assert_eq!(per_call, max_copies, "hedge_probability {p} never misses");
        } else if p <= 0.0 {
            assert_eq!(per_call, 1, "hedge_probability {p} never hedges");
        } else {
            assert!(per_call == 1 || per_call == max_copies);
        }
    }
}
