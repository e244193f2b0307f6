//! [`VirtualClock`]: the time a test's policy and server share, which moves only when the
//! test moves it; and the one smoke test per crate that runs on the real clock.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hedging::timer::{ManualTimer, TokioTimer};
use hedging::Policy;

use crate::log::{until, Clock, Log};

/// Virtual time no hedge delay reaches: a copy held past it was never going to be hedged.
pub const NEVER: Duration = Duration::from_secs(3600);

/// A [`ManualTimer`] for a test's policies that also stamps its server's arrivals, and
/// the steps a test takes with it: each waits for what the server saw, then moves time.
///
/// Clones share one clock.
#[derive(Clone, Debug, Default)]
pub struct VirtualClock {
    timer: ManualTimer,
}

impl VirtualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        VirtualClock::default()
    }

    /// The timer to give a policy built by hand.
    pub fn timer(&self) -> ManualTimer {
        self.timer.clone()
    }

    /// A policy of at most `max_copies` copies, each `delay` after the one before, on
    /// this clock.
    pub fn policy(&self, max_copies: usize, delay: Duration) -> Policy<ManualTimer> {
        Policy::builder()
            .max_copies(max_copies)
            .delay(delay)
            .timer(self.timer())
            .build()
    }

    /// This clock's time, for a server to stamp arrivals with.
    pub fn clock(&self) -> Clock {
        let timer = self.timer();
        Arc::new(move || timer.now())
    }

    /// The virtual time now.
    pub fn now(&self) -> Duration {
        self.timer.now()
    }

    /// Moves time forward by `by`, waking every sleep that is due.
    pub fn advance(&self, by: Duration) {
        self.timer.advance(by);
    }

    /// How many sleeps the policies on this clock armed: none for a call that could not
    /// hedge.
    pub fn sleeps_created(&self) -> u64 {
        self.timer.sleeps_created()
    }

    /// Waits until `server` saw `copies` requests with `key`, then moves time by `by`:
    /// with `by` the hedge delay, the next copy goes out.
    pub async fn hedge(&self, server: &Log, key: &str, copies: usize, by: Duration) {
        server.until_arrived(key, copies).await;
        self.advance(by);
    }

    /// Waits until `server` saw the first request with `key`, lets [`NEVER`] pass, then
    /// releases it: the held copy answers once no hedge could still go out.
    pub async fn release(&self, server: &Log, key: &str) {
        self.hedge(server, key, 1, NEVER).await;
        server.release(key);
    }

    /// Waits until a call holds its next copy for a pushback (its one timer, armed at
    /// `armed`, moved), and returns the wait the pushback asked for.
    pub async fn held_for(&self, armed: Duration) -> Duration {
        let now = self.now();
        let held = || {
            self.timer
                .next_deadline()
                .is_some_and(|due| due != now + armed)
        };
        until(held, "holding the next copy for a pushback").await;
        self.timer.next_deadline().expect("a held copy") - now
    }
}

/// How long the stalled copy of a real-time smoke test stalls: `sleep=10000` in a script.
pub const SMOKE_STALL: Duration = Duration::from_secs(10);

/// A policy of two copies, the second `delay` after the first, on tokio's real clock.
pub fn tokio_policy(delay: Duration) -> Policy<TokioTimer> {
    Policy::builder()
        .delay(delay)
        .timer(TokioTimer::new())
        .build()
}

/// Awaits `call` on the real clock and asserts it took under half of [`SMOKE_STALL`]: a
/// hedge overtook the stalled copy, with seconds to spare on a busy machine.
pub async fn overtakes_the_stall<T>(call: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let output = call.await;
    let took = started.elapsed();
    assert!(took < SMOKE_STALL / 2, "the stall was waited out: {took:?}");
    output
}
