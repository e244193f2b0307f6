//! The HTTP rules every hedging integration shares: which requests a layer hedges, what
//! a response's status means, how long `Retry-After` holds the next copy, what a
//! replica's address may be ([`origin`]), how a call is keyed ([`KeyBy`]), and how an
//! object read's stalled body is resumed from its offset, of the same version
//! ([`resume`]).
//!
//! `hedging-http` (tower services, hyper-util, tonic) and `reqwest-hedging` build on
//! these, so one request is judged the same way by both; `hedging-object-store` and
//! `hedging-opendal` resume stalled bodies by one rule. Each re-exports what its users
//! name. Depend on this crate to write an integration of your own.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use hedging::Verdict;
//! use hedging_http_rules::{retry_after, status_verdict, HedgedMethods, NoHedge};
//! use http::{Extensions, HeaderMap, Method, StatusCode};
//!
//! let methods = HedgedMethods::default(); // GET, HEAD, OPTIONS
//! let mut extensions = Extensions::new();
//! assert!(methods.hedges(&Method::GET, &extensions));
//! extensions.insert(NoHedge);
//! assert!(!methods.hedges(&Method::GET, &extensions));
//!
//! let mut headers = HeaderMap::new();
//! headers.insert("retry-after", "2".parse().unwrap());
//! assert_eq!(retry_after(&headers, SystemTime::now()), Some(Duration::from_secs(2)));
//! let busy = status_verdict(StatusCode::SERVICE_UNAVAILABLE, &headers, Duration::MAX);
//! assert_eq!(busy, Verdict::RetryAfter(Duration::from_secs(2)));
//! ```
//!
//! # Which requests are counted
//!
//! One rule for every integration (`hedging-http` and its gRPC layers, `reqwest-hedging`,
//! `hedging-object-store`, and yours), so that a policy's [`Stats`](hedging::Stats) mean
//! the same behind each:
//!
//! - **A request the layer was asked to hedge is a call.** It goes through the race and
//!   is counted in `calls`, with its outcome, even when it is sent once: a body that
//!   cannot be replayed (a stream, a body over the replay cap), a copy the layer
//!   declines, a policy of one copy or switched off.
//! - **Any other request is out of the layer's scope.** It bypasses the race (no body
//!   buffered, no timer, the inner service's own future) and is counted once in
//!   `out_of_scope` ([`Policy::count_out_of_scope`](hedging::Policy::count_out_of_scope)),
//!   never in `calls`.
//!
//! | integration | a call | out of scope |
//! |---|---|---|
//! | `hedging-http`, `HttpHedgeLayer` | a method [`HedgedMethods::hedges`] (`GET`, `HEAD`, `OPTIONS` by default) | any other method (`POST`), a [`NoHedge`] request |
//! | `hedging-http`, `grpc::GrpcHedgeLayer` | a method the layer names (`.methods`, `.all_methods`) | a method no name matches, a [`NoHedge`] call |
//! | `reqwest-hedging`, `HedgeMiddleware` | as `HttpHedgeLayer` | as `HttpHedgeLayer` |
//! | `hedging-object-store`, `HedgedStore` | a read: `get_opts` (`get`, `get_range`, `head`), `get_ranges` | every other method (writes, lists, deletes, copies, renames), once per call of it |
//!
//! So `hedges / calls` is the extra requests per call a layer hedges, whatever share of
//! the traffic it passes by; `out_of_scope` says how much that is. An integration of
//! your own keeps the rule with [`HedgedMethods::hedges`] and one line, as the quick
//! start of this crate's README does:
//!
//! ```
//! # use hedging::{Policy, timer::ManualTimer};
//! # use hedging_http_rules::HedgedMethods;
//! # let policy = Policy::builder().timer(ManualTimer::new()).build();
//! # let methods = HedgedMethods::default();
//! # let request = http::Request::post("http://example.com/").body(()).unwrap();
//! if !methods.hedges(request.method(), request.extensions()) {
//!     policy.count_out_of_scope(); // then send it as it is, not through the race
//! }
//! # assert_eq!(policy.stats().out_of_scope, 1);
//! ```
//!
//! # Features
//!
//! - `tokio`: `hedging::timer::TokioTimer`, through the [`hedging`] re-export, for the
//!   policies of an integration on tokio (a test's paused tokio clock drives it; the
//!   default `FuturesTimer` follows the real clock).
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

/// The core crate, re-exported: name [`Policy`](hedging::Policy), the timers and
/// [`Verdict`](hedging::Verdict) through it (`hedging_http_rules::hedging::Policy`), and
/// they are always the version this crate was built with.
pub use hedging;

mod key;
mod origin;
pub mod resume;
mod retry_after;
mod scope;
mod status;

pub use crate::key::{size_class, KeyBy};
pub use crate::origin::{origin, origins, InvalidOrigin};
pub use crate::retry_after::retry_after;
pub use crate::scope::{HedgedMethods, NoHedge, DEFAULT_METHODS};
pub use crate::status::status_verdict;
