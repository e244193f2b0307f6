//! What the integrations' scope and switch tests count: the stats a call sent once or a
//! request out of scope leaves, and an extension that counts its clones.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use hedging::timer::ManualTimer;
use hedging::{Policy, Stats};

use crate::{Server, VirtualClock};

/// What a call sent once and answered counts: one call, one win, nothing else.
pub fn one_call() -> Stats {
    Stats {
        calls: 1,
        wins: 1,
        ..Stats::default()
    }
}

/// What `requests` requests out of a layer's scope count: that, and no call.
pub fn out_of_scope(requests: u64) -> Stats {
    Stats {
        out_of_scope: requests,
        ..Stats::default()
    }
}

/// A request extension that counts its clones: a request (or its extensions) copied is
/// one more.
#[derive(Debug, Default)]
pub struct CountsClones(Arc<AtomicUsize>);

impl CountsClones {
    /// How many times this extension, or a clone of it, was cloned.
    pub fn clones(&self) -> usize {
        self.0.load(SeqCst)
    }

    /// A handle on the same count, to put in a request.
    pub fn handle(&self) -> CountsClones {
        CountsClones(Arc::clone(&self.0))
    }
}

impl Clone for CountsClones {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, SeqCst);
        self.handle()
    }
}

/// Asserts that the request to `path` on `server` passed the layer by, out of its scope:
/// its original answered with `body`, it was sent once, no timer was made, and `policy`
/// counted it out of scope, not as a call.
pub fn assert_passed_by(
    clock: &VirtualClock,
    server: &Server,
    policy: &Policy<ManualTimer>,
    path: &str,
    body: &[u8],
) {
    assert_eq!(
        body,
        format!("copy 0 of {path}").as_bytes(),
        "the original answered"
    );
    assert_eq!(server.arrivals(path).len(), 1);
    assert_eq!(clock.sleeps_created(), 0, "no race, no timer");
    let stats = policy.stats();
    assert_eq!((stats.out_of_scope, stats.calls), (1, 0));
}

/// Asserts that `policy` counted one call, won by its one hedge, and nothing out of scope.
pub fn assert_one_hedge_won<T>(policy: &Policy<T>) {
    assert_counted(policy, (1, 1, 1, 0), "one call, won by its hedge");
}

/// Asserts what `policy` counted: its calls, hedges, hedge wins and requests out of
/// scope, in that order; `why` says what they stand for.
pub fn assert_counted<T>(policy: &Policy<T>, counts: (u64, u64, u64, u64), why: &str) {
    let stats = policy.stats();
    let counted = (
        stats.calls,
        stats.hedges,
        stats.hedge_wins,
        stats.out_of_scope,
    );
    assert_eq!(counted, counts, "{why}");
}

/// Asserts that `requests` requests passed the layer by, out of its scope: no race ran,
/// no timer was made, and `policy` counted them out of scope, not as calls.
pub fn assert_only_out_of_scope(clock: &VirtualClock, policy: &Policy<ManualTimer>, requests: u64) {
    assert_eq!(clock.sleeps_created(), 0, "no race, no timer");
    assert_eq!(
        policy.stats(),
        out_of_scope(requests),
        "out of scope, not calls"
    );
}

/// Asserts that `policy` counted one call, hedged once, beside `out_of_scope` requests it
/// passed by: hedges per call are the call's alone.
pub fn assert_one_hedged_call_beside(policy: &Policy<ManualTimer>, out_of_scope: u64) {
    let stats = policy.stats();
    assert_eq!(
        (stats.calls, stats.hedges, stats.out_of_scope),
        (1, 1, out_of_scope)
    );
    assert_eq!(
        stats.hedges as f64 / stats.calls as f64,
        1.0,
        "the GET hedged"
    );
}
