//! The default timer under a paused tokio clock: hedges follow the real clock, so a test
//! that advances tokio's clock would test nothing. A debug build says so, once.

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

#[cfg(debug_assertions)]
#[tokio::test(start_paused = true)]
async fn the_default_timer_under_a_paused_tokio_clock_says_so_once() {
    let warnings = Warnings::default();
    let _guard = tracing::subscriber::set_default(warnings.clone());
    // A paused clock moved on: it no longer agrees with the real one.
    tokio::time::advance(Duration::from_secs(1)).await;
    let policy = Policy::builder().delay(Duration::from_millis(5)).build();
    for _ in 0..3 {
        assert_eq!(call_pending_once(&policy).await, Ok(0));
    }
    let warnings = warnings.0.lock().unwrap().clone();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("paused tokio clock") && warnings[0].contains("TokioTimer"),
        "{}",
        warnings[0]
    );
}
