//! Plays a script against the real `Hedge` (or `HedgeStream`) and the model, and checks
//! them against each other after every poll.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use arbitrary::Unstructured;
use hedging::timer::ManualTimer;
use hedging::{Attempt, Budget, Hedgeable, HedgeableStream, Policy, Verdict};

use super::model::{AdaptiveModel, BudgetModel, Expected, Model, World};
use super::script::{
    classified, retryable, Action, CallScript, End, Factory, Fail, Judge, Output, Script, Step,
};
use super::scripted::{
    FutureSubject, Log, ScriptedCopy, ScriptedStream, SharedLog, StreamSubject, Subject,
};
use super::warm_up::warm_up;
use super::{debugging, panic_message, quiet_scripted_panics, CountingWaker, SCRIPTED};

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
        traffic(&policy, budget.as_ref(), call.traffic_before, &mut world);
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

/// `calls` calls through `policy` whose original wins at its first poll: they ask the
/// budget nothing; a bucket credits them only when a copy next asks, a throttling budget
/// earns at once.
fn traffic(policy: &Policy<ManualTimer>, budget: Option<&Budget>, calls: usize, world: &mut World) {
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let mut cx = Context::from_waker(&waker);
    for _ in 0..calls {
        let call = std::pin::pin!((|| std::future::ready(Ok::<u8, Fail>(0))).hedged(policy));
        assert_eq!(
            call.poll(&mut cx),
            Poll::Ready(Ok(0)),
            "a ready original wins"
        );
        world.won_unhedged();
    }
    assert_eq!(policy.stats(), world.stats, "stats after the traffic");
    if let (Some(budget), Some(model)) = (budget, &world.budget) {
        assert_eq!(
            budget.tokens(),
            model.tokens(),
            "budget tokens after the traffic"
        );
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
                Action::Traffic(calls) => {
                    traffic(self.policy, self.budget, calls, self.world);
                    false
                }
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
