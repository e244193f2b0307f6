//! Request hedging for [`reqwest`]: a [`reqwest_middleware`] middleware that sends a copy
//! of a request that has not answered within a delay, and keeps the first answer.
//!
//! ```
//! use std::time::Duration;
//! use reqwest_hedging::hedging::{timer::TokioTimer, Policy}; // the core, re-exported
//! use reqwest_hedging::HedgeMiddleware;
//! use reqwest_middleware::ClientBuilder;
//!
//! let policy = Policy::builder()
//!     .name("catalog")                  // the label of its metrics
//!     .delay(Duration::from_millis(20)) // near the backend's p95
//!     .timer(TokioTimer::new())
//!     .build();
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(HedgeMiddleware::new(policy))
//!     .build();
//! // client.get(url).send().await: a GET slower than 20 ms gets a second copy.
//! ```
//!
//! # What is hedged
//!
//! - GET, HEAD and OPTIONS requests ([`HedgeMiddleware::methods`] changes the list),
//!   unless they carry the [`NoHedge`] extension: each is a call, counted in the
//!   policy's `calls`.
//! - Up to the response headers: the first copy whose response wins is returned and the
//!   others are dropped (their connections closed). Its body then streams from that copy
//!   alone; a stall in the body is not hedged.
//! - Not a request whose body cannot be copied (`Body::wrap_stream`): it is still a
//!   call, sent once, and counted in `calls` as a call that never hedged.
//! - Any other request (a `POST`, a `NoHedge` request) is outside the middleware's
//!   scope: it passes on to the rest of the chain untouched and is counted in the
//!   policy's [`out_of_scope`](hedging::Stats::out_of_scope), not in `calls`, so
//!   `hedges / calls` is the extra requests per hedged call. The rule is every
//!   integration's: [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
//!
//! A `Retry-After` holds the next copy only while one can still be sent: on the last
//! copy a call may send (the policy's `max_copies`, or the only copy of a request that
//! cannot be copied) it ends the call at once, as when every copy failed.
//!
//! Which answers win and which start the next copy: [`DefaultClassify`] (502, 503 and
//! 504, connect and timeout errors retry; `Retry-After` on 429 and 503 holds the next
//! copy), replaced by [`HedgeMiddleware::classify`].
//!
//! # Copies to replicas
//!
//! [`HedgeMiddleware::replicas`] takes the base URLs of a backend's replicas: copy k of
//! a call goes to base `(first + k) mod n`, its path and query kept, `first` moving on by
//! one per call, so a hedge reaches another replica than its original.
//!
//! # Keys
//!
//! On a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), each call
//! is keyed by its URL's `(scheme, authority)`, so one client over a fast API and a slow
//! one learns a delay per host; [`HedgeMiddleware::key_by`] keys otherwise. See
//! [Keys](HedgeMiddleware#keys).
//!
//! # With `reqwest-retry`
//!
//! Middlewares run in the order they are attached, the first outermost. Put the retry
//! middleware first, outside the hedge:
//!
//! ```
//! # use std::time::Duration;
//! # use hedging::{timer::TokioTimer, Policy};
//! # use reqwest_hedging::HedgeMiddleware;
//! # use reqwest_middleware::ClientBuilder;
//! use reqwest_retry::{policies::ExponentialBackoff, RetryTransientMiddleware};
//!
//! # let policy = Policy::builder().timer(TokioTimer::new()).build();
//! let retries = ExponentialBackoff::builder().build_with_max_retries(2);
//! let client = ClientBuilder::new(reqwest::Client::new())
//!     .with(RetryTransientMiddleware::new_with_policy(retries)) // outside: after a backoff
//!     .with(HedgeMiddleware::new(policy))                       // inside: within the delay
//!     .build();
//! ```
//!
//! - **Retry outside, hedge inside** (above): each attempt of the retry middleware is one
//!   hedged call. The hedge answers slowness within milliseconds; only when every copy of
//!   an attempt failed does the retry middleware see the failure (the first copy's 503 or
//!   error), wait out its backoff, and try again. At most
//!   `(max_retries + 1) × max_copies` requests per call.
//! - **Hedge outside, retry inside** (`.with(hedge).with(retry)`): every copy retries on
//!   its own, with backoffs that keep a failing copy in the race for seconds; a call can
//!   send `max_copies × (max_retries + 1)` requests, most of them while the backend is
//!   failing. Avoid it unless each copy goes to a different backend.
//!
//! The hedge retries 502/503/504 within a call by default; with retries outside, that
//! leaves the retry middleware the failures that outlast a whole hedged call.
//!
//! # Runtime
//!
//! reqwest runs on tokio: give the policy `hedging::timer::TokioTimer` (this crate's
//! feature `tokio`), and tests can drive hedges with tokio's paused clock; the default
//! `FuturesTimer` follows the real clock, paused or not.
//!
//! # Features
//!
//! - `tokio`: `hedging::timer::TokioTimer`, through the [`hedging`] re-export.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

mod classify;
mod key;
mod middleware;
mod replicas;

/// The core crate, re-exported: name [`Policy`](hedging::Policy), the timers and
/// [`Stats`](hedging::Stats) through it (`reqwest_hedging::hedging::Policy`), and they
/// are always the version this crate was built with.
pub use hedging;

pub use crate::classify::{ClassifyResponse, DefaultClassify};
pub use crate::middleware::HedgeMiddleware;
/// How long a `Retry-After` header asks to wait, counted from `now`: the parser every
/// integration shares.
pub use hedging_http_rules::retry_after;
/// A base URL [`HedgeMiddleware::replicas`] cannot send to, with why: the rule every
/// integration shares (`hedging_http_rules::origin`).
pub use hedging_http_rules::InvalidOrigin;
/// Opts one request out of hedging: insert it in the request's extensions and the
/// request is sent once, as if the middleware were not there, and counted in the
/// policy's `out_of_scope`, not in its `calls`. The same type `hedging-http` reads.
///
/// ```
/// # async fn send(client: reqwest_middleware::ClientWithMiddleware) -> reqwest_middleware::Result<()> {
/// use reqwest_hedging::NoHedge;
///
/// client.get("http://inventory.internal/reserve").with_extension(NoHedge).send().await?;
/// # Ok(()) }
/// ```
pub use hedging_http_rules::NoHedge;
