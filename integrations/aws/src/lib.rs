//! Request hedging for the AWS SDK for Rust: a smithy HTTP client that sends a copy of a
//! slow S3 or DynamoDB read, signed as it was, and keeps the first answer.
//!
//! [`HedgedHttpClient`] wraps the HTTP client the SDK would use and sees each request
//! after signing; the [`OperationInterceptor`] names each request's operation, which
//! decides what is hedged: reads only ([`DEFAULT_OPERATIONS`]), never by HTTP method.
//! [`HedgeSdkConfig::hedged`] installs both on an SDK config builder in one call.
//!
//! ```
//! # #[cfg(all(feature = "s3", feature = "dynamodb", feature = "tokio"))]
//! # fn build(http_client: hedging_aws::SharedHttpClient) {
//! use std::time::Duration;
//! use hedging_aws::hedging::{timer::TokioTimer, Policy}; // the core, re-exported
//! use hedging_aws::{HedgeSdkConfig, HedgedHttpClient};
//!
//! let policy = Policy::builder()
//!     .name("aws-reads")                // the label of its metrics
//!     .delay(Duration::from_millis(30)) // near the reads' p95
//!     .timer(TokioTimer::new())
//!     .build();
//! // `http_client`: the client the SDK would use (`sdk_config.http_client()`, or one built).
//! let hedged = HedgedHttpClient::new(http_client, policy);
//! // With aws-config: aws_sdk_s3::config::Builder::from(&sdk_config).hedged(..)
//! let s3 = aws_sdk_s3::config::Builder::new().hedged(hedged.clone()).build();
//! let dynamodb = aws_sdk_dynamodb::config::Builder::new().hedged(hedged).build();
//! # let _ = (s3, dynamodb);
//! # }
//! ```
//!
//! # What is hedged
//!
//! - Requests of the operations [`HedgedHttpClient::operations`] lists, by default S3's
//!   `GetObject`, `HeadObject`, `GetObjectAttributes`, `ListObjectsV2` and DynamoDB's
//!   `GetItem`, `BatchGetItem`, `Query`, `Scan`, `TransactGetItems`: each is a call,
//!   counted in the policy's `calls`; one whose body cannot be copied is sent once.
//! - Up to the response headers: the first copy whose response wins is returned and the
//!   others are dropped (their connections closed). Its body then streams from that copy
//!   alone, through the SDK's own checks (stalled-stream protection, checksums).
//! - Every other request (writes, and any request without the interceptor's name) passes
//!   through untouched and is counted in [`out_of_scope`](hedging::Stats::out_of_scope).
//!
//! # Keys
//!
//! On a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), each call is
//! keyed by [`Operation::key`], `(operation, resource)`: the operation's name and the
//! bucket or table its input names (`""` for none), so one client learns a delay per
//! bucket and table: `policy.delay_for(&("GetObject", "my-bucket"))`.
//! [`HedgedHttpClient::key_by`] keys otherwise. A policy without keys makes no key.
//!
//! # With the SDK's retries and timeouts
//!
//! The hedge sits inside one SDK attempt: each SDK retry is a new call (signed afresh), so
//! it is hedged again; the attempt and operation timeouts bound every copy of a call
//! together; the policy's budget, not the SDK's retry tokens, caps the extra requests.
//!
//! # Features
//!
//! - `tracing` (default): the core's `tracing` events.
//! - `serde`: the core's `config::PolicyConfig`.
//! - `tokio`: `hedging::timer::TokioTimer`, the timer for the SDK's tokio runtime.
//! - `s3`, `dynamodb`: [`HedgeSdkConfig`] for `aws_sdk_s3::config::Builder` and
//!   `aws_sdk_dynamodb::config::Builder`, and the bucket or table of each request read
//!   from its input ([which](OperationInterceptor#which-resources-are-read)).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

mod client;
mod install;
mod key;
mod operation;
mod resource;

/// The core crate, re-exported: name [`Policy`](hedging::Policy), the timers and
/// [`Stats`](hedging::Stats) through it (`hedging_aws::hedging::Policy`), and they are
/// always the version this crate was built with.
pub use hedging;

/// The smithy HTTP client the SDK sends requests with, shared: what
/// [`HedgedHttpClient::new`] wraps.
pub use aws_smithy_runtime_api::client::http::SharedHttpClient;

pub use crate::client::HedgedHttpClient;
pub use crate::install::HedgeSdkConfig;
pub use crate::operation::{Operation, OperationInterceptor, DEFAULT_OPERATIONS};
