//! The default timer under a paused tokio clock: hedges follow the real clock, so a test
//! that advances tokio's clock would test nothing. A debug build says so, once per
//! process: each test here runs alone in a child process of this test binary.

use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hedging::{Attempt, Hedgeable, Policy};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Keeps the message of every `WARN` event.
#[derive(Clone, Default)]
struct Warnings(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl Subscriber for Warnings {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() == Level::WARN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        assert_eq!(event.metadata().target(), "hedging");
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0.lock().unwrap().push(message.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// A call whose original is pending once (so the hedge's timer is armed), then wins.
async fn call_pending_once(policy: &Policy) -> Result<usize, ()> {
    (|attempt: Attempt| async move {
        tokio::task::yield_now().await;
        Ok(attempt.index())
    })
    .hedged(policy)
    .await
}

/// Set in the child process that runs one test alone.
const CHILD: &str = "HEDGING_PAUSED_DEFAULT_TIMER_CHILD";

/// The words every form of the warning holds.
fn is_the_warning(text: &str) -> bool {
    text.contains("paused tokio clock") && text.contains("TokioTimer")
}

/// In the test process, runs `test` alone in a child process and returns what it wrote
/// (after checking it ran and passed); in that child, `None`: the caller runs its body.
fn alone(test: &str) -> Option<Output> {
    if std::env::var_os(CHILD).is_some() {
        return None;
    }
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, test)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} alone:\n{stdout}\n{stderr}"
    );
    Some(output)
}

/// The warnings recorded by a subscriber of the test's own while `run` runs.
async fn warnings_while<F: std::future::Future<Output = ()>>(run: F) -> Vec<String> {
    let warnings = Warnings::default();
    let _guard = tracing::subscriber::set_default(warnings.clone());
    run.await;
    let recorded = warnings.0.lock().unwrap().clone();
    recorded
}

#[cfg(debug_assertions)]
#[tokio::test(start_paused = true)]
async fn a_hedge_armed_at_t0_under_start_paused_says_so() {
    if alone("a_hedge_armed_at_t0_under_start_paused_says_so").is_some() {
        return;
    }
    // The clock has not moved: tokio's time and the real one still agree.
    let policy = Policy::builder().delay(Duration::from_millis(5)).build();
    let warnings = warnings_while(async {
        assert_eq!(call_pending_once(&policy).await, Ok(0));
    })
    .await;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(is_the_warning(&warnings[0]), "{}", warnings[0]);
    assert_eq!(policy.stats().hedges, 0, "the hedge it warns of never came");
}

#[cfg(debug_assertions)]
#[tokio::test(start_paused = true)]
async fn the_default_timer_under_a_paused_tokio_clock_says_so_once() {
    if alone("the_default_timer_under_a_paused_tokio_clock_says_so_once").is_some() {
        return;
    }
    // A paused clock moved on: it no longer agrees with the real one.
    tokio::time::advance(Duration::from_secs(1)).await;
    let policy = Policy::builder().delay(Duration::from_millis(5)).build();
    let warnings = warnings_while(async {
        for _ in 0..3 {
            assert_eq!(call_pending_once(&policy).await, Ok(0));
        }
    })
    .await;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(is_the_warning(&warnings[0]), "{}", warnings[0]);
}

#[cfg(debug_assertions)]
#[tokio::test(start_paused = true)]
async fn without_a_subscriber_the_paused_clock_warning_goes_to_stderr() {
    if let Some(child) = alone("without_a_subscriber_the_paused_clock_warning_goes_to_stderr") {
        let stderr = String::from_utf8_lossy(&child.stderr);
        let warnings = stderr.lines().filter(|line| is_the_warning(line)).count();
        assert_eq!(warnings, 1, "{stderr}");
        return;
    }
    let policy = Policy::builder().delay(Duration::from_millis(5)).build();
    for _ in 0..3 {
        assert_eq!(call_pending_once(&policy).await, Ok(0));
    }
}

#[tokio::test]
async fn a_running_tokio_clock_says_nothing() {
    if let Some(child) = alone("a_running_tokio_clock_says_nothing") {
        let stderr = String::from_utf8_lossy(&child.stderr);
        assert!(!is_the_warning(&stderr), "{stderr}");
        return;
    }
    let policy = Policy::builder().delay(Duration::from_secs(5)).build();
    let warnings = warnings_while(async {
        for _ in 0..3 {
            assert_eq!(call_pending_once(&policy).await, Ok(0));
        }
    })
    .await;
    assert_eq!(warnings, Vec::<String>::new());
}
