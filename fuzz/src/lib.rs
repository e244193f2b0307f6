//! The fuzz targets, as plain functions of raw bytes.
//!
//! `cargo fuzz` runs them through `fuzz_targets/*.rs`; `tests/fuzz_replay.rs` includes this
//! very file and runs them over the checked-in corpus (`fuzz/seeds/`) and seeded random
//! inputs, so CI replays exactly what the fuzzer runs. Each target reads a script from
//! the bytes with `arbitrary::Unstructured`, plays it against the public API on a
//! `ManualTimer`, and panics when an invariant breaks.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Once};
use std::task::Wake;
use std::time::Duration;

mod call;
mod model;
mod policy_builder;
mod schedule;
mod script;
mod scripted;
mod warm_up;

pub use policy_builder::policy_builder;
pub use schedule::schedule;

/// A scripted call (policy settings, per-copy latency and end, clock jumps, spurious polls,
/// a drop point; timeouts, `replace_failed`, a declining factory, every verdict, a budget,
/// an adaptive delay; sometimes several calls through one policy) against the reference
/// model in `model/`: every poll's answer, when each copy starts, what the factory, the
/// hook and the classifier see, drops, the timer, wake-ups, stats and the budget's tokens
/// and slots, at every step.
pub fn hedge_state_machine(data: &[u8]) {
    call::run(data, false);
}

/// The same, for `HedgeStream`: copies are scripted streams whose first item races; after
/// the commit the winner's later items pass through unjudged, in order, until it ends.
pub fn hedge_stream(data: &[u8]) {
    call::run(data, true);
}

pub(crate) const MS: Duration = Duration::from_millis(1);

pub(crate) fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// Every panic a script asks for carries this prefix; no other panic is expected.
pub(crate) const SCRIPTED: &str = "scripted ";

/// Silences the panics scripts ask for, leaving every other panic to the hook before.
pub(crate) fn quiet_scripted_panics() {
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
pub(crate) fn debugging() -> bool {
    static DEBUG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DEBUG.get_or_init(|| std::env::var_os("HEDGING_FUZZ_DEBUG").is_some())
}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    match payload.downcast_ref::<&'static str>() {
        Some(message) => message,
        None => payload.downcast_ref::<String>().map_or("", String::as_str),
    }
}

#[derive(Default)]
pub(crate) struct CountingWaker(pub(crate) AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}
