//! Request hedging as one future: start a request, start a copy if it has not answered
//! within a delay, keep the first success, drop the rest.
//!
//! A backend with a 1 ms median and a 200 ms p99 drags every caller's p99 to 200 ms.
//! Hedging makes the caller's latency track the fastest of a few copies, for a few
//! percent of extra requests. [`Hedge`] is a single hand-written future: it polls a
//! fixed set of copies and at most one timer inside its own `poll`, spawns nothing,
//! assumes no runtime, and allocates nothing and arms no timer when the original answers
//! in time.
//!
//! ```
//! use std::time::Duration;
//! use hedging::{Attempt, Hedgeable, Policy};
//!
//! # #[derive(Debug)] struct DbError { transient: bool }
//! # async fn get(replica: usize, key: &str) -> Result<String, DbError> { Ok(format!("{key}@{replica}")) }
//! # futures::executor::block_on(async {
//! // Built once, shared by every call site.
//! let policy = Policy::builder()
//!     .max_copies(3)                    // the original and up to two hedges
//!     .delay(Duration::from_millis(20)) // each 20 ms after the one before
//!     .build();
//!
//! // The output type is the request's own.
//! let row: Result<String, DbError> = (|| get(0, "key")).hedged(&policy).await;
//!
//! // The factory may take the attempt, to send each copy to another replica.
//! let row = (|a: Attempt| get(a.index() % 3, "key"))
//!     .hedged(&policy)
//!     .when(|e: &DbError| e.transient) // other errors end the race at once
//!     .await;
//! assert_eq!(row.unwrap(), "key@0");
//! assert_eq!(policy.stats().calls, 2);
//! # });
//! ```
//!
//! # Following the backend, bounding the load
//!
//! [`PolicyBuilder::adaptive_delay`] makes the delay track a quantile of recent
//! latencies, and a [`Budget`] shared by any number of policies caps the extra copies (a
//! token bucket or gRPC's retry throttling, plus an optional cap on copies in flight), so
//! hedging cannot multiply the load on a backend that slows down.
//!
//! # Timeouts, pushback, streams
//!
//! [`Hedge::attempt_timeout`] bounds each copy and [`Hedge::timeout`] the whole call;
//! [`Verdict::RetryAfter`] and [`Verdict::Stop`] carry a server's pushback;
//! [`PolicyBuilder::replace_failed`] starts the next copy the moment any fails; a factory
//! may decline a copy by returning `None`; and [`HedgeableStream::hedged_stream`] races
//! copies of a stream until one yields a winning first item.
//!
//! # Contracts
//!
//! | Contract | Guarantee |
//! |---|---|
//! | First win returns | The first copy whose verdict is `Win` is returned; every other copy, and any failure kept in case none won, is dropped before `poll` returns. |
//! | Output type | The output is the copies' own `Result<T, E>`; there is no wrapper error. |
//! | All failed | When every copy failed and none is left to start, the lowest-index failure is returned (else a caught panic resumes, else the lowest-index withdrawn result). |
//! | Failure accelerates | When no copy is in flight and copies remain, the next one starts at once, not at its scheduled time. |
//! | Replace failed | With `replace_failed(true)`, every failed copy (a `Retry` verdict, a caught panic, an attempt timeout, a stream that ended empty) starts one next copy at once, while the others keep running. |
//! | Schedule | Copy k is due `delay` after copy k-1 was launched (its due time, or when a failure started it early). Once a due time would pass `max_delay` after the original, the rest are spread `max(delay / 4, 1 ms)` apart. `Attempt::elapsed` is when the copy really started, and never less than the copy before it says, whatever the timer does. |
//! | Modes | `parallel()`: every copy at once. `fallback()`: the next copy only after a failure. `delay_fn(f)`: a delay per copy, `None` stops timed copies. |
//! | Pushback | `Verdict::RetryAfter(d)`: the copy failed and the next copy is due `d` from now, whatever the schedule, the failure rule or `replace_failed` say; later copies follow the schedule from it. With no further copy to start (the cap or `Hedge::max_copies` reached, a factory that declined, a `Stop`) it ends like `Retry`: a pushback on the last copy in flight ends the call at once, never waited out. `Verdict::Stop`: the copy failed and no further copy starts; those in flight race on. |
//! | Declining factories | A factory returning `None` declines that copy and every later one: it never runs `on_hedge` and never takes a token or a slot; the copies in flight race on. A decline is learnt only when its copy is due, after any pushback: a cap known in advance goes to `Hedge::max_copies`. The original cannot be declined (`None` for attempt 0 panics). |
//! | Timeouts | `attempt_timeout(d)`: a copy that has not answered `d` after it started is dropped and fails with `E::from(Elapsed)`, unseen by `when`/`classify`. `timeout(d)`: `d` after the call's clock starts (its first poll, once the original said `Pending`: the factory's and that poll's own time are not counted), every copy is dropped and the lowest-index real failure so far is returned, else `E::from(Elapsed)`; no copy starts once it came. An answer at the deadline wins. Zero: only a copy ready at its first poll can win. One timer serves the schedule and both deadlines. |
//! | Parallelism cap | At most `max_copies` copies start per call; `max_copies(0)` is clamped to 1 (hedging off), values above 64 (`PolicyBuilder::MAX_COPIES`) to 64. `Hedge::max_copies(n)` caps one call lower. |
//! | Fast path | With one copy allowed and no timeout, or an original ready on its first poll, no timer is made, no clock is read and nothing is allocated. |
//! | Lazy timer | The timer is made only when a copy is pending and a copy or deadline is due later; one timer per call is re-armed to the earliest. |
//! | Timers saturate | A deadline past the end of time never fires and never panics; every shipped timer accepts `Duration::MAX`. |
//! | Streams | [`HedgeStream`] races copies of a stream until one yields a winning first item, then commits: every other copy is dropped, later items pass unjudged, the stream ends with the winner. A `Fatal` first item is yielded and the stream ends; if every copy fails, the lowest-index error is yielded (copies that ended empty have none; with none at all it ends without an item). The win is counted at the commit; timeouts apply until it. |
//! | Budget | A copy beyond the first takes a token, and under `max_outstanding` a slot held exactly while the copy is alive (given back on the poll that sees it finish, after it was dropped). A refusal never cancels a copy in flight and is counted once per copy. |
//! | No spawn | Copies are polled inside `poll` with the caller's waker; nothing runs after the call is dropped. |
//! | Cancellation | Dropping a `Hedge` (or a `HedgeStream` before its commit) drops every copy and the timer, and gives back its budget slots. |
//! | No lost wake-ups | A `Hedge` polled only when woken runs to completion. |
//! | Hedge probability | `hedge_probability(p)` is rolled once per call; a miss runs the original alone. |
//! | Live switches | `Policy::set_enabled(false)`: every call that begins afterwards runs its original alone, as a call of one copy, still counted; `true` brings hedging back. `Budget::set_ratio(r)` changes what the budget credits next. Both are lock-free, keep the stats, and leave calls already begun as they began. |
//! | Hooks | `on_hedge` runs synchronously just before each copy beyond the first starts: for a plain factory before it is called, for a declining one once it returned `Some`. |
//! | Stats | `hedges` counts copies started beyond the first; `hedge_wins` calls won by another copy than the first; `budget_denied` copies the budget refused (each once, however often it asked). A call is counted once, where it ends, with its outcome: `calls = wins + failures + cancelled` in every snapshot, across `reset_stats` too. |
//! | Panics | A panicking copy or factory unwinds through `poll`, unless `catch_unwind` (feature `std`) turns it into a failed copy; a panicking `on_hedge` hook always unwinds. Dropping the unwound `Hedge` drops every copy and counts the call as cancelled. |
//! | Poll after completion | Panics with a clear message; `Hedge` implements `FusedFuture`, `HedgeStream` `FusedStream`. |
//!
//! # Features
//!
//! - `std` (default): `catch_unwind`, per-thread stats counters, `std::error::Error` for
#![cfg_attr(
    feature = "std",
    doc = "  [`Elapsed`], [`timer::ManualTimer`]. Without it the crate is `#![no_std]` and needs"
)]
#![cfg_attr(
    not(feature = "std"),
    doc = "  [`Elapsed`], `timer::ManualTimer`. Without it the crate is `#![no_std]` and needs"
)]
//!   `alloc`.
#![cfg_attr(
    feature = "futures-timer",
    doc = "- `futures-timer` (default): [`timer::FuturesTimer`], the default timer."
)]
#![cfg_attr(
    not(feature = "futures-timer"),
    doc = "- `futures-timer` (default): `timer::FuturesTimer`, the default timer."
)]
#![cfg_attr(
    feature = "async-io",
    doc = "- `async-io`: [`timer::AsyncIoTimer`], driven by the reactor smol and async-std run."
)]
#![cfg_attr(
    not(feature = "async-io"),
    doc = "- `async-io`: `timer::AsyncIoTimer`, driven by the reactor smol and async-std run."
)]
#![cfg_attr(
    feature = "tokio",
    doc = "- `tokio`: [`timer::TokioTimer`], on tokio's clock: `tokio::time::pause` drives hedges."
)]
#![cfg_attr(
    not(feature = "tokio"),
    doc = "- `tokio`: `timer::TokioTimer`, on tokio's clock: `tokio::time::pause` drives hedges."
)]
#![cfg_attr(
    feature = "tower",
    doc = "- `tower`: [`tower::HedgeLayer`] / [`tower::HedgeService`], hedging any cloneable tower"
)]
#![cfg_attr(
    not(feature = "tower"),
    doc = "- `tower`: `tower::HedgeLayer` / `tower::HedgeService`, hedging any cloneable tower"
)]
//!   `Service`.
//! - `tracing`: `DEBUG` events (target `hedging`) when a hedge starts, a copy fails, a
//!   race with hedges is won, or the budget refuses a hedge; none on the fast path.
#![cfg_attr(
    feature = "serde",
    doc = " - `serde`: [`config::PolicyConfig`], every builder setting as data, read from TOML,"
)]
#![cfg_attr(
    not(feature = "serde"),
    doc = " - `serde`: `config::PolicyConfig`, every builder setting as data, read from TOML,"
)]
//!   YAML or JSON, with durations as `"20ms"` and out-of-range values refused.
//!
//! With no timer feature, give the policy a timer with [`PolicyBuilder::timer`]; building
//! one without fails to compile with a message naming the fix.
//!
//! # When not to hedge
//!
//! Hedge only requests that are safe to send twice (reads, idempotent writes), and keep
//! the delay above the backend's median latency (near its 95th percentile): below it,
//! most calls send two requests and the extra load can slow the backend for everyone.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod adaptive;
mod attempt;
mod budget;
mod builder;
mod call_methods;
mod cold;
#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod config;
mod copies;
mod ext;
mod factory;
mod feature_doc;
mod hedge;
pub mod key;
mod keyed;
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_models;
pub mod model;
mod policy;
mod race;
mod schedule;
mod stats;
mod stream;
mod sync;
pub mod timeout;
pub mod timer;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
mod trace;

pub use crate::attempt::{Attempt, ByResult, Classify, Verdict, When};
pub use crate::budget::Budget;
pub use crate::builder::PolicyBuilder;
pub use crate::ext::{Hedgeable, HedgeableStream, IntoFactory, IntoStreamFactory};
pub use crate::factory::{AttemptFn, DecliningFn, Factory, FactoryFn, StreamFactory};
pub use crate::hedge::Hedge;
pub use crate::policy::{AsPolicy, Policy};
pub use crate::stats::Stats;
pub use crate::stream::HedgeStream;
pub use crate::timeout::Elapsed;
