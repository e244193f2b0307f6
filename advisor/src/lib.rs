//! From a service's recorded latencies to a hedging policy and its predicted tail, before
//! deploying.
//!
//! `hedging-advisor` reads latencies as services already record them (one a line, CSV,
//! HdrHistogram interval logs, a Prometheus histogram), predicts the p50, p99 and p99.9
//! of calls hedged at each delay with the model [`hedging::model`] (the one
//! `PolicyBuilder::optimal_delay` chooses its delay with), recommends the delay that
//! model predicts minimises the target quantile within the budget, and prints it as a
//! `hedging::config::PolicyConfig` (the core's feature `serde`) to paste. Where the input
//! says when each call was made, it also replays the calls in virtual time through the
//! real `Hedge` future, so slowness that comes in clusters shows.
//!
//! The binary is the usual way in (`hedging-advisor latencies.txt`); the library is what
//! it is made of:
//!
//! ```
//! use hedging_advisor::advice::{advise, Settings};
//! use hedging_advisor::read::{read, ReadOptions};
//!
//! // 98 calls of 1 ms, 2 stalls of 100 ms.
//! let mut input = "1ms\n".repeat(98);
//! input.push_str("100ms\n100ms\n");
//! let (latencies, _format) = read(input.as_bytes(), &ReadOptions::default()).unwrap();
//! let advice = advise(&latencies, &Settings::default()).unwrap();
//! assert!(advice.recommended.predicted.p99 < advice.unhedged.p99);
//! assert!(advice.config_toml.contains("optimal_delay = 0.99"));
//! ```
//!
//! # What the predictions assume
//!
//! The model takes every copy's latency as an independent draw from the recorded
//! latencies: right where a copy goes to another replica, or meets other luck, than the
//! original (a GC pause, a lost packet, a slow disk). The replay drops that assumption
//! where the input has timestamps: a copy takes the latency of a call made near the same
//! moment. Neither holds where the slowness is the request's own (a large key, an
//! expensive query): every copy of it is slow, and hedging only adds load.
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

pub mod advice;
pub mod chart;
pub mod error;
pub mod latencies;
pub mod read;
pub mod replay;
pub mod report;
pub mod timestamp;
pub mod unit;

pub use error::InputError;
