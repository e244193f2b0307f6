//! The `tracing` events, recorded by a subscriber: a hedge launched, a copy failed, the
//! winning copy's index; and nothing at all on the fast path.

mod common;

use std::fmt;
use std::sync::{Arc, Mutex};

use common::{ms, Backend, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Hedgeable, Policy};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Records every event as `message field=value ...`, checking the target; an event at
/// another level than `DEBUG` is recorded with its level first (`INFO message ...`).
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0.insert_str(0, &format!("{value:?}"));
        } else {
            self.0 += &format!(" {}={:?}", field.name(), value);
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        assert_eq!(event.metadata().target(), "hedging");
        let mut line = Line(String::new());
        event.record(&mut line);
        let level = *event.metadata().level();
        if level != Level::DEBUG {
            line.0.insert_str(0, &format!("{level} "));
        }
        self.0.lock().unwrap().push(line.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs one call on `steps` under a recording subscriber; returns its output and events.
fn record(max_copies: usize, steps: Vec<Step>) -> (Result<u32, u32>, Vec<String>) {
    let recorder = Recorder::default();
    let output = tracing::subscriber::with_default(recorder.clone(), || {
        let timer = ManualTimer::new();
        let backend = Backend::new(&timer, steps);
        let policy = Policy::builder()
            .max_copies(max_copies)
            .delay(ms(10))
            .timer(timer.clone())
            .build();
        let mut call = Driver::new(backend.factory().hedged(&policy));
        call.run(&timer)
    });
    let events = recorder.0.lock().unwrap().clone();
    (output, events)
}

#[test]
fn fast_path_emits_nothing() {
    assert_eq!(record(3, vec![Step::ok(0, 0)]), (Ok(0), vec![]));
}

#[test]
fn hedging_off_emits_nothing_even_on_failure() {
    assert_eq!(record(1, vec![Step::err(5, 9)]), (Err(9), vec![]));
}

#[test]
fn original_winning_before_any_hedge_emits_nothing() {
    assert_eq!(record(2, vec![Step::ok(5, 0)]), (Ok(0), vec![]));
}

#[test]
fn hedge_launched_and_winner_are_reported() {
    let (output, events) = record(3, vec![Step::never(), Step::ok(3, 1)]);
    assert_eq!(output, Ok(1));
    assert_eq!(
        events,
        [
            "hedge launched copy=1 max_copies=3 elapsed_us=10000",
            "hedge race won copy=1 launched=2",
        ]
    );
}

#[test]
fn failed_copy_is_reported_before_the_next_starts() {
    let (output, events) = record(2, vec![Step::err(4, 7), Step::ok(1, 1)]);
    assert_eq!(output, Ok(1));
    assert_eq!(
        events,
        [
            "copy failed copy=0 panicked=false",
            "hedge launched copy=1 max_copies=2 elapsed_us=4000",
            "hedge race won copy=1 launched=2",
        ]
    );
}

#[test]
fn original_winning_after_a_hedge_started_is_reported_as_copy_zero() {
    let (output, events) = record(2, vec![Step::ok(15, 0), Step::ok(20, 1)]);
    assert_eq!(output, Ok(0));
    assert_eq!(
        events,
        [
            "hedge launched copy=1 max_copies=2 elapsed_us=10000",
            "hedge race won copy=0 launched=2",
        ]
    );
}

#[test]
fn budget_refusal_is_reported_with_the_refused_copy() {
    let recorder = Recorder::default();
    let output = tracing::subscriber::with_default(recorder.clone(), || {
        let timer = ManualTimer::new();
        let backend = Backend::new(&timer, [Step::ok(15, 0), Step::ok(1, 1)]);
        // No deposits and a bucket of one token: the call's one hedge is refused.
        let budget = hedging::Budget::new(0.0).burst(1.0);
        assert!(budget.tokens() >= 1.0);
        let drain = Policy::builder()
            .max_copies(2)
            .parallel()
            .budget(&budget)
            .timer(timer.clone())
            .build();
        let mut first = Driver::new(
            Backend::new(&timer, [Step::never(), Step::never()])
                .factory()
                .hedged(&drain),
        );
        let _ = first.poll();
        drop(first);
        recorder.0.lock().unwrap().clear();

        let policy = Policy::builder()
            .max_copies(2)
            .delay(ms(10))
            .budget(&budget)
            .timer(timer.clone())
            .build();
        let mut call = Driver::new(backend.factory().hedged(&policy));
        call.run(&timer)
    });
    assert_eq!(
        output,
        Ok(0),
        "the original answers; the hedge never went out"
    );
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(events, ["hedge refused by budget copy=1 max_copies=2"]);
}

/// How many `hedge refused by budget` events `events` holds.
fn refusals(events: &[String]) -> u64 {
    let refused = events
        .iter()
        .filter(|event| event.starts_with("hedge refused by budget"));
    refused.count() as u64
}

#[test]
fn a_copy_refused_twice_is_reported_once() {
    let recorder = Recorder::default();
    let timer = ManualTimer::new();
    let budget = hedging::Budget::new(1.0).max_outstanding(1);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    let (output, denied) = tracing::subscriber::with_default(recorder.clone(), || {
        // Another call's hedge holds the budget's one slot for the whole test.
        let holder_policy = Policy::builder()
            .max_copies(2)
            .parallel()
            .budget(&budget)
            .timer(timer.clone())
            .build();
        let never = Backend::new(&timer, [Step::never(), Step::never()]);
        let mut holder = Driver::new(never.factory().hedged(&holder_policy));
        let _ = holder.poll();
        recorder.0.lock().unwrap().clear();

        // The hedge is refused when due at 10 ms, and again when the original fails at 20.
        let backend = Backend::new(&timer, [Step::err(20, 0), Step::ok(1, 1)]);
        let mut call = Driver::new(backend.factory().hedged(&policy));
        let output = call.run(&timer);
        drop(holder);
        (output, policy.stats().budget_denied)
    });
    assert_eq!(output, Err(0), "the hedge never went out");
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(denied, 1, "one copy was refused");
    assert_eq!(refusals(&events), denied, "{events:?}");
    assert_eq!(
        events,
        [
            "hedge refused by budget copy=1 max_copies=2",
            "copy failed copy=0 panicked=false",
        ]
    );
}

#[test]
fn refusal_events_agree_with_budget_denied() {
    let recorder = Recorder::default();
    let mut rng = fastrand::Rng::with_seed(19);
    let timer = ManualTimer::new();
    // A tight budget, so that many hedges are refused, some of them twice.
    let budget = hedging::Budget::new(0.1).burst(2.0);
    let policy = Policy::builder()
        .max_copies(4)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    tracing::subscriber::with_default(recorder.clone(), || {
        for _ in 0..3_000 {
            let steps: Vec<Step> = (0..4)
                .map(|copy| match rng.u8(0..3) {
                    0 => Step::ok(rng.u64(1..40), copy),
                    _ => Step::err(rng.u64(1..40), copy),
                })
                .collect();
            let backend = Backend::new(&timer, steps);
            let max_copies = rng.usize(2..=4);
            let call = backend.factory().hedged(&policy).max_copies(max_copies);
            let _ = Driver::new(call).run(&timer);
        }
    });
    let events = recorder.0.lock().unwrap().clone();
    let denied = policy.stats().budget_denied;
    assert!(
        denied > 100,
        "the budget refused too little to tell: {denied}"
    );
    assert_eq!(refusals(&events), denied, "one event per refused copy");
}
#[test]
fn a_name_read_at_run_time_is_the_policy_field_of_every_event() {
    let recorder = Recorder::default();
    // A name built at run time, as one read from a configuration file is.
    let name = ["user", "reads"].join("-");
    let output = tracing::subscriber::with_default(recorder.clone(), || {
        let timer = ManualTimer::new();
        let backend = Backend::new(&timer, [Step::err(4, 7), Step::ok(1, 1)]);
        let policy = Policy::builder()
            .name(name.clone())
            .max_copies(2)
            .delay(ms(10))
            .timer(timer.clone())
            .build();
        assert_eq!(policy.name(), Some("user-reads"));
        let mut call = Driver::new(backend.factory().hedged(&policy));
        call.run(&timer)
    });
    assert_eq!(output, Ok(1));
    let events = recorder.0.lock().unwrap().clone();
    assert_eq!(
        events,
        [
            "copy failed policy=\"user-reads\" copy=0 panicked=false",
            "hedge launched policy=\"user-reads\" copy=1 max_copies=2 elapsed_us=4000",
            "hedge race won policy=\"user-reads\" copy=1 launched=2",
        ]
    );
}

#[test]
fn a_policy_starting_and_stopping_to_withhold_is_an_info_event() {
    let recorder = Recorder::default();
    tracing::subscriber::with_default(recorder.clone(), || {
        let timer = ManualTimer::new();
        // One hedge that loses brings the win rate (from 1) under 0.97, to 31/32; a
        // probe that wins, back over it.
        let policy = Policy::builder()
            .name("heavy")
            .delay(ms(10))
            .min_win_rate(0.97)
            .timer(timer.clone())
            .build();
        let scripts = [(50, 100), (500, 1)].into_iter().chain([(500, 1); 20]);
        for (original, hedge) in scripts {
            let backend = Backend::new(&timer, [Step::ok(original, 0), Step::ok(hedge, 1)]);
            Driver::new(backend.factory().hedged(&policy))
                .run(&timer)
                .unwrap();
            if policy.stats().hedge_wins > 0 {
                break;
            }
        }
    });
    let events = recorder.0.lock().unwrap().clone();
    let info: Vec<&String> = events.iter().filter(|e| e.starts_with("INFO")).collect();
    assert_eq!(
        info,
        [
            "INFO hedges withheld: they stopped winning policy=\"heavy\" key=0 win_rate=0.96875",
            "INFO hedges resumed: a probe won policy=\"heavy\" key=0 win_rate=0.983428955078125",
        ]
    );
}
