//! gRPC hedging as in gRPC's design A6 ("gRPC Retry Design", its hedging policy), at the
//! HTTP layer: [`GrpcHedgeLayer`]. It reads `grpc-status` as an integer and depends on
//! no gRPC library, so it fits tonic (see the [crate docs](crate#grpc-with-tonic)) and any
//! other client that speaks gRPC over `http::Request`.
//!
//! # A6, as implemented here
//!
//! | A6 | here |
//! |---|---|
//! | `hedgingPolicy.maxAttempts` (capped at 5 client-side) | the policy's `max_copies`, capped at [`MAX_ATTEMPTS`] |
//! | `hedgingDelay` | the policy's `delay` (or any schedule the policy has) |
//! | `nonFatalStatusCodes` | [`non_fatal_codes`](GrpcHedgeLayer::non_fatal_codes), default `[14]` |
//! | hedging only the methods the config names | [`methods`](GrpcHedgeLayer::methods) (A6 names, checked: [`try_methods`](GrpcHedgeLayer::try_methods)), [`all_methods`](GrpcHedgeLayer::all_methods); any other call goes straight to the inner service, counted in [`Stats::out_of_scope`](hedging::Stats::out_of_scope) |
//! | commit on Response-Headers | a response without `grpc-status` in its headers wins; the loser copies are dropped (their streams reset) |
//! | a non-fatal status starts the next copy at once | [`Verdict::RetryAfter(Duration::ZERO)`](hedging::Verdict::RetryAfter), even while other copies run |
//! | a fatal status cancels the others | [`Verdict::Fatal`](hedging::Verdict::Fatal) |
//! | `grpc-retry-pushback-ms` ≥ 0: the next copy after it | [`Verdict::RetryAfter`](hedging::Verdict::RetryAfter); on the last attempt the call may make (its `max_copies`, at most [`MAX_ATTEMPTS`]) the call ends at once |
//! | pushback negative or malformed: no more copies | [`Verdict::Stop`](hedging::Verdict::Stop); copies in flight go on |
//! | `grpc-previous-rpc-attempts` on every copy after the first | yes |
//! | the call's deadline spans every attempt | each copy's `grpc-timeout` is what is left of the call's; no copy starts once it has run out |
//! | `retryThrottling` (`maxTokens`, `tokenRatio`) | the core's `Budget::throttling(max_tokens, token_ratio)`, given to the policy |
//! | buffer limits; a call that outgrows them commits | [`max_replay_bytes`](GrpcHedgeLayer::max_replay_bytes): a larger or still-streaming request body is sent once |
//! | hedges sent to distinct backends | a [`Replicas`](hedging::tower::Replicas) set as the inner service, one `Channel` per backend: copy k of a call goes to replica `(first + k) mod n` (see [Copies to replicas](crate#copies-to-replicas)) |
//! | a policy per method, from the service config's JSON | feature `service-config`: `ServiceConfig::from_json` and `GrpcHedgeLayer::from_service_config` (see [Service config](#service-config)) |
//!
//! Not implemented: A6's `retryPolicy` (retries with exponential backoff and
//! `retryableStatusCodes`: this crate hedges); transparent retries (a transport error
//! here is a failed copy, counted against `maxAttempts` and throttling, as
//! `UNAVAILABLE`); throttling by the calls of methods that are not hedged (they bypass
//! the race, so their outcomes are not seen); `grpc-previous-rpc-attempts` in the
//! response metadata the caller sees.
//!
//! # Retry throttling
//!
//! A6's `"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}` is a budget shared
//! by every policy that calls one server:
//!
//! ```
//! use std::time::Duration;
//! use hedging::{timer::TokioTimer, Budget, Policy};
//! use hedging_http::grpc::GrpcHedgeLayer;
//!
//! let throttling = Budget::throttling(10.0, 0.1);
//! let policy = Policy::builder()
//!     .max_copies(3)
//!     .delay(Duration::from_millis(10))
//!     .budget(&throttling)
//!     .timer(TokioTimer::new())
//!     .build();
//! let layer = GrpcHedgeLayer::new(policy).methods(["shop.Catalog"]);
//! # let _ = layer;
//! ```
//!
//! # Service config
//!
//! With the feature `service-config`, the layer reads gRPC's own service config, the
//! JSON a gRPC client is given by its name resolver or its operators, and hedges each
//! method by its method config's `hedgingPolicy`, every policy sharing the config's
//! `retryThrottling` (one budget per layer, as A6 has one per channel):
//!
//! ```
//! # #[cfg(feature = "service-config")] {
//! use hedging::timer::TokioTimer;
//! use hedging_http::grpc::{GrpcHedgeLayer, ServiceConfig};
//!
//! let config = ServiceConfig::from_json(r#"{
//!   "methodConfig": [
//!     {"name": [{"service": "shop.Catalog"}],
//!      "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.02s",
//!                        "nonFatalStatusCodes": ["UNAVAILABLE"]}},
//!     {"name": [{"service": "shop.Cart", "method": "Get"}],
//!      "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.005s"}}
//!   ],
//!   "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
//! }"#)?;
//! let layer = GrpcHedgeLayer::from_service_config(&config, TokioTimer::new());
//! assert_eq!(layer.policy_for("shop.Catalog/List").unwrap().max_copies(), 3);
//! assert!(layer.policy_for("shop.Cart/Add").is_none()); // sent once, out of scope
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What is read and checked, and why unknown fields are ignored: `ServiceConfig`.

mod layer;
mod methods;
mod scope;
mod service;
#[cfg(feature = "service-config")]
mod service_config;
mod status;
mod timeout;
pub mod tonic;

pub use self::layer::GrpcHedgeLayer;
pub use self::methods::{MethodNameError, MethodNameFault};
pub use self::service::{GrpcHedge, ResponseFuture};
#[cfg(feature = "service-config")]
#[cfg_attr(docsrs, doc(cfg(feature = "service-config")))]
pub use self::service_config::{
    HedgingPolicy, MethodConfig, RetryThrottling, ServiceConfig, ServiceConfigError,
};
pub use self::status::GrpcVerdict;

/// A6's client-side cap on attempts: the original and at most four hedges. The race is
/// told it, so a pushback on the last attempt ends the call at once.
pub const MAX_ATTEMPTS: usize = 5;
