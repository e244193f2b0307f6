//! Diagnostic events through `tracing` (feature `tracing`); without the feature every
//! function here is empty and compiles to nothing.
//!
//! Every event has target `hedging` and level `DEBUG`. The fast path (one copy allowed,
//! or an original that wins at its first poll) emits nothing, and neither does a call
//! whose original wins before any hedge starts.

use crate::attempt::Attempt;

/// A copy beyond the first is about to start (`copy`: its index, `elapsed_us`: since
/// the original started).
#[inline]
pub(crate) fn hedge_launched(attempt: &Attempt) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "hedging",
        copy = attempt.index(),
        max_copies = attempt.max_copies(),
        elapsed_us = duration_us(attempt.elapsed()),
        "hedge launched"
    );
    let _ = attempt;
}

/// Copy `copy` failed (a `Retry` verdict, or a panic caught by `catch_unwind`) and the
/// race goes on. Silent when hedging is off for the call.
#[inline]
pub(crate) fn copy_failed(copy: usize, max_copies: usize, panicked: bool) {
    #[cfg(feature = "tracing")]
    if max_copies > 1 {
        tracing::debug!(target: "hedging", copy, panicked, "copy failed");
    }
    let _ = (copy, max_copies, panicked);
}

/// Copy `copy` won a race in which `launched` copies started. Silent unless a hedge
/// started: an original that wins alone is the common case and not news.
#[inline]
pub(crate) fn won(copy: usize, launched: usize) {
    #[cfg(feature = "tracing")]
    if launched > 1 {
        tracing::debug!(target: "hedging", copy, launched, "hedge race won");
    }
    let _ = (copy, launched);
}

/// The hedging budget refused to start copy `copy` of a call that may start
/// `max_copies`; the call goes on with the copies it has.
#[inline]
pub(crate) fn budget_refused(copy: usize, max_copies: usize) {
    #[cfg(feature = "tracing")]
    tracing::debug!(target: "hedging", copy, max_copies, "hedge refused by budget");
    let _ = (copy, max_copies);
}

#[cfg(feature = "tracing")]
fn duration_us(duration: core::time::Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(all(test, feature = "tracing"))]
mod tests {
    use std::string::{String, ToString};
    use std::sync::{Arc, Mutex};
    use std::vec::Vec;

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    use super::*;

    /// Records each event as its target and `name=value` fields, message first.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<String>>>);

    struct Fields(String);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn core::fmt::Debug) {
            self.0 += &std::format!(" {}={:?}", field.name(), value);
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
            let mut fields = Fields(event.metadata().target().to_string());
            event.record(&mut fields);
            self.0.lock().unwrap().push(fields.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    #[test]
    fn budget_refusal_names_the_copy_and_when() {
        let recorder = Recorder::default();
        tracing::subscriber::with_default(recorder.clone(), || {
            budget_refused(2, 3);
        });
        let events = recorder.0.lock().unwrap().clone();
        assert_eq!(
            events,
            ["hedging message=hedge refused by budget copy=2 max_copies=3"]
        );
    }
}
