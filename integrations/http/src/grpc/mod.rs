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
//!
//! Not implemented: A6's `retryPolicy` (retries with exponential backoff and
//! `retryableStatusCodes`: this crate hedges); transparent retries (a transport error
//! here is a failed copy, counted against `maxAttempts` and throttling, as
//! `UNAVAILABLE`); per-method policies read from service config JSON (build one layer
//! per policy); sending hedges to distinct backends (the inner service's load balancer
//! decides); `grpc-previous-rpc-attempts` in the response metadata the caller sees.
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

mod layer;
mod methods;
mod scope;
mod service;
mod status;
mod timeout;

pub use self::layer::GrpcHedgeLayer;
pub use self::methods::{MethodNameError, MethodNameFault};
pub use self::service::{GrpcHedge, ResponseFuture};
pub use self::status::GrpcVerdict;

/// A6's client-side cap on attempts: the original and at most four hedges. The race is
/// told it, so a pushback on the last attempt ends the call at once.
pub const MAX_ATTEMPTS: usize = 5;
