//! The HTTP rules every hedging integration shares: which requests a layer hedges, what
//! a response's status means, and how long `Retry-After` holds the next copy.
//!
//! `hedging-http` (tower services, hyper-util, tonic) and `reqwest-hedging` build on
//! these, so one request is judged the same way by both; each re-exports what its users
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
//! A request [`HedgedMethods::hedges`] says no to is outside the layer's scope. One it
//! says yes to is the layer's to hedge, and counted in the policy's stats even when it
//! is sent once (a body that cannot be replayed, a copy declined). What an integration
//! does with a request outside its scope is still its own: `hedging-http` sends it once
//! through the race and counts it, `reqwest-hedging` passes it on uncounted.
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

mod retry_after;
mod scope;
mod status;

pub use crate::retry_after::retry_after;
pub use crate::scope::{HedgedMethods, NoHedge, DEFAULT_METHODS};
pub use crate::status::status_verdict;
