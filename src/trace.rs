//! Diagnostic events through `tracing` (feature `tracing`); without the feature every
//! function here is empty and compiles to nothing, but for the debug-build warning that
//! the default timer runs under a paused tokio clock, which then goes to standard error
//! (as it does when no subscriber takes it).
//!
//! Every event has target `hedging` and level `DEBUG` (but for the one warning that the
//! default timer runs under a paused tokio clock), and carries the policy's
//! [`name`](crate::PolicyBuilder::name), if it has one, as the field `policy`. The fast path (one copy allowed,
//! or an original that wins at its first poll) emits nothing, and neither does a call
//! whose original wins before any hedge starts.

use alloc::borrow::Cow;

use crate::attempt::Attempt;

/// A policy's name, as the policy holds it: read (`as_deref`) only where an event is
/// emitted, so a call that emits none pays nothing for it.
pub(crate) type Name = Option<Cow<'static, str>>;

/// A copy beyond the first is about to start (`copy`: its index, `elapsed_us`: since
/// the original started).
#[inline]
pub(crate) fn hedge_launched(policy: &Name, attempt: &Attempt) {
    #[cfg(feature = "tracing")]
    tracing::debug!(
        target: "hedging",
        policy = policy.as_deref(),
        copy = attempt.index(),
        max_copies = attempt.max_copies(),
        elapsed_us = duration_us(attempt.elapsed()),
        "hedge launched"
    );
    let _ = (policy, attempt);
}

/// Copy `copy` failed (a `Retry` verdict, or a panic caught by `catch_unwind`) and the
/// race goes on. Silent when hedging is off for the call.
#[inline]
pub(crate) fn copy_failed(policy: &Name, copy: usize, max_copies: usize, panicked: bool) {
    #[cfg(feature = "tracing")]
    if max_copies > 1 {
        let policy = policy.as_deref();
        tracing::debug!(target: "hedging", policy, copy, panicked, "copy failed");
    }
    let _ = (policy, copy, max_copies, panicked);
}

/// Copy `copy` won a race in which `launched` copies started. Silent unless a hedge
/// started: an original that wins alone is the common case and not news.
#[inline]
pub(crate) fn won(policy: &Name, copy: usize, launched: usize) {
    #[cfg(feature = "tracing")]
    if launched > 1 {
        let policy = policy.as_deref();
        tracing::debug!(target: "hedging", policy, copy, launched, "hedge race won");
    }
    let _ = (policy, copy, launched);
}

/// The hedging budget refused to start copy `copy` of a call that may start
/// `max_copies`; the call goes on with the copies it has. Once per refused copy, however
/// often it asked, as [`Stats::budget_denied`](crate::Stats::budget_denied) counts.
#[inline]
pub(crate) fn budget_refused(policy: &Name, copy: usize, max_copies: usize) {
    #[cfg(feature = "tracing")]
    {
        let policy = policy.as_deref();
        tracing::debug!(target: "hedging", policy, copy, max_copies, "hedge refused by budget");
    }
    let _ = (policy, copy, max_copies);
}

/// The hedges of a key (`key`: its hash; 0 for the policy's calls without a kept key)
/// stopped winning often enough and are withheld from now on (`withholding`), or a probe
/// won and they resume; `win_rate`: the recent rate. At level `INFO`: it changes what the
/// policy does.
#[inline]
pub(crate) fn withholding(policy: &Name, key: u64, withholding: bool, win_rate: f64) {
    #[cfg(feature = "tracing")]
    {
        let policy = policy.as_deref();
        match withholding {
            true => {
                tracing::info!(target: "hedging", policy, key, win_rate, "hedges withheld: they stopped winning")
            }
            false => {
                tracing::info!(target: "hedging", policy, key, win_rate, "hedges resumed: a probe won")
            }
        }
    }
    let _ = (policy, key, withholding, win_rate);
}

#[cfg(feature = "tracing")]
fn duration_us(duration: core::time::Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// `FuturesTimer` armed a sleep while tokio's clock is paused: the hedges follow the real
/// clock. The one event at level `WARN`; a line on standard error instead when no
/// subscriber takes it (none installed, or one that filters it out) or without the
/// `tracing` feature, so that a test under a paused clock always says it. Debug builds
/// with the `tokio` feature only.
#[cfg(all(debug_assertions, feature = "tokio", feature = "futures-timer"))]
#[cold]
pub(crate) fn default_timer_under_paused_tokio() {
    const WARNING: &str = "hedging: a policy on the default timer (FuturesTimer) armed a hedge under a paused tokio clock; it follows the real clock, so advancing tokio's clock starts no hedge: build the policy with .timer(hedging::timer::TokioTimer::new())";
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "hedging", tracing::Level::WARN) {
        tracing::warn!(target: "hedging", "{WARNING}");
        return;
    }
    std::eprintln!("{WARNING}");
}
