//! Hedged HTTP and gRPC calls through any `tower::Service<http::Request<B>>`: a
//! hyper-util client, a tonic `Channel`, anything in between.
//!
//! [`HttpHedgeLayer`] sends a copy of a slow idempotent request (`GET`, `HEAD`,
//! `OPTIONS` by default) after the [`hedging::Policy`]'s delay, keeps the first good
//! answer and drops the rest. [`grpc::GrpcHedgeLayer`] does the same for gRPC calls with
//! the semantics of gRPC's hedging design A6. Both read the request body once, up to a
//! cap, so each copy can send it again ([`ReplayBody`]), and both race the copies with
//! the core's [`hedging::tower::HedgeLayer`]: no race or timer logic lives here.
//!
//! ```
//! use std::time::Duration;
//! use hedging_http::hedging::{timer::TokioTimer, Policy}; // the core, re-exported
//! use hedging_http::HttpHedgeLayer;
//! use hyper_util::{client::legacy::Client, rt::TokioExecutor};
//! use tower::ServiceBuilder;
//!
//! let policy = Policy::builder().delay(Duration::from_millis(20)).timer(TokioTimer::new()).build();
//! let client = ServiceBuilder::new()
//!     .layer(HttpHedgeLayer::new(policy))
//!     .service(Client::builder(TokioExecutor::new()).build_http());
//! // client.oneshot(http::Request::get(uri).body(body)?).await? — the response is hyper's own.
//! # fn is_service<S: tower::Service<http::Request<http_body_util::Empty<bytes::Bytes>>>>(_: &S) {}
//! # is_service(&client);
//! ```
//!
//! # What is hedged, what is sent once
//!
//! A request is the layer's to hedge when its method is one the layer names (for gRPC:
//! its method is named) and it carries no [`NoHedge`] extension. It goes through the
//! race and is one of the policy's `calls`, and it is hedged when its body was read
//! whole while its frames were ready, within `max_replay_bytes` (64 KiB by default).
//! One whose body cannot be replayed is still a call, sent once, with nothing lost (the
//! frames read so far go first, then the rest of the body). A body that is still
//! pending when the call is made (a stream, an upload) is never waited for. While the
//! policy is disabled ([`Policy::set_enabled(false)`](hedging::Policy::set_enabled)), or
//! has one copy, a call is sent as it was given, as without the layer: its body not read,
//! the request not copied; it is still one of the policy's `calls`.
//!
//! Any other request (a `POST`, a request carrying [`NoHedge`]) is outside the layer's
//! scope: it goes straight to the inner service, its body not read, no race, no timer,
//! and is counted in the policy's [`out_of_scope`](hedging::Stats::out_of_scope), not in
//! its `calls`, so `hedges / calls` is the share of hedged calls behind every
//! integration. The rule, for every integration:
//! [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
//!
//! Each copy is a fresh `http::Request` with the same method, URI, version and headers,
//! its own copy of the request's extensions, and the body replayed with the original's
//! size hint.
//!
//! # Verdicts
//!
//! [`HttpHedgeLayer`]: `502`, `503`, `504` and errors from the inner service (a refused
//! or reset connection) are retried; `429` and `503` with `Retry-After` hold the next
//! copy that long; anything else wins ([`default_verdict`]). [`HttpHedgeLayer::classify`]
//! replaces them. [`grpc::GrpcHedgeLayer`]: see [`grpc::GrpcVerdict`].
//!
//! A held copy (`Retry-After`, gRPC pushback) waits even when no other copy is in flight,
//! as long as one more can be sent: bound the call with a timeout above the layer. When
//! none can (the policy's `max_copies` or A6's cap of 5 reached, a request sent once), a
//! pushback on the last copy in flight ends the call at once, as when every copy failed.
//!
//! # gRPC with tonic
//!
//! With the feature `tonic`, `GrpcHedgeLayer::for_tonic()` makes the layer that goes
//! right in front of a tonic `Channel` (`grpc::tonic::TonicHedgeLayer`): its service
//! takes and hands on tonic's own body type.
//!
#![cfg_attr(feature = "tonic", doc = "```")]
#![cfg_attr(not(feature = "tonic"), doc = "```ignore")]
//! use std::time::Duration;
//! use hedging_http::grpc::GrpcHedgeLayer;
//! use hedging_http::hedging::{timer::TokioTimer, Policy};
//! use tower::ServiceBuilder;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let policy = Policy::builder().delay(Duration::from_millis(10)).timer(TokioTimer::new()).build();
//! let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:50051").connect_lazy();
//! let channel = ServiceBuilder::new()
//!     .layer(GrpcHedgeLayer::new(policy).methods(["shop.Catalog"]).for_tonic())
//!     .service(channel);
//! let grpc = tonic::client::Grpc::new(channel); // or any generated client: CatalogClient::new(channel)
//! # let _ = grpc; }
//! ```
//!
//! Without the feature the layers hand the inner service `http::Request<ReplayBody<B>>`.
//! A hyper-util `Client` takes any body, so it goes right under the layer; a tonic
//! `Channel` takes only its own body type, so one `map_request` goes between (forget it,
//! and the call fails to compile with E0277, "expected `tonic::body::Body`, found
//! `ReplayBody<tonic::body::Body>`"):
//!
//! ```
//! use std::time::Duration;
//! use hedging_http::hedging::{timer::TokioTimer, Policy};
//! use hedging_http::{grpc::GrpcHedgeLayer, ReplayBody};
//! use tonic::body::Body;
//! use tower::ServiceBuilder;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let policy = Policy::builder().delay(Duration::from_millis(10)).timer(TokioTimer::new()).build();
//! let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:50051").connect_lazy();
//! let channel = ServiceBuilder::new()
//!     .layer(GrpcHedgeLayer::new(policy).methods(["shop.Catalog"]))
//!     .map_request(|r: http::Request<ReplayBody<Body>>| r.map(Body::new))
//!     .service(channel);
//! let grpc = tonic::client::Grpc::new(channel); // or any generated client: CatalogClient::new(channel)
//! # let _ = grpc; }
//! ```
//!
//! # Copies to replicas
//!
//! Both layers take a [`hedging::tower::Replicas`] set as their inner service: copy k of
//! a call goes to replica `(first + k) mod n`, chosen by its attempt, `first` moving on
//! by one per call, each copy readying its own replica, so a hedge does not follow its
//! original to the replica (or connection) that is slow, and a replica that refuses fails
//! only its own copy. For gRPC, one tonic `Channel` per replica behind `for_tonic()`:
//! `Replicas::new([channel_a, channel_b])`. For a hyper-util client, one [`Origin`] per
//! address: `Origin::replicas(client, origins)`. A set is not `Clone` (the layer's
//! service over it is): a `map_request` or other middleware each replica needs goes
//! inside the set, around each replica's service.
//!
//! # Keys
//!
//! On a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), a call is
//! keyed by its target (`HttpHedgeLayer`: `(scheme, authority)`, taken before a replica
//! set rewrites it) or its method (`GrpcHedgeLayer`: the full path), so one layer learns
//! a delay per host or method; `key_by` on either keys otherwise. See
//! [`HttpHedgeLayer`'s keys](HttpHedgeLayer#keys) and
//! [`GrpcHedgeLayer`'s](grpc::GrpcHedgeLayer#keys).
//!
//! # Requirements
//!
//! - The inner service is `Clone` (each hedge drives a clone of it to readiness), or a
//!   [`Replicas`](hedging::tower::Replicas) set: either is a
//!   [`HedgeTarget`](hedging::tower::HedgeTarget). Put a service that is neither behind
//!   tower's `Buffer`; middleware each replica needs goes inside the set.
//! - The request body is `Unpin`: box one that is not (`http_body_util::BodyExt::boxed`).
//! - Pass the policy a timer that fits the runtime: `hedging::timer::TokioTimer`
//!   (feature `tokio`) on tokio, so that a test's paused tokio clock drives the hedges;
//!   the default `FuturesTimer` follows the real clock, paused or not.
//!
//! # Features
//!
//! - `tokio`: `hedging::timer::TokioTimer`, through the [`hedging`] re-export.
//! - `tonic`: `grpc::tonic`, the gRPC layer in front of a tonic `Channel`
//!   (`GrpcHedgeLayer::for_tonic()`); brings `tokio` too. The default build depends on
//!   no gRPC library.
//! - `tracing`: an `INFO` event naming each gRPC method a layer passed through outside
//!   its scope, once per method; and the core's `tracing` events.
//! - `service-config`: `grpc::ServiceConfig`, gRPC's service config read from its JSON,
//!   and `grpc::GrpcHedgeLayer::from_service_config`, a policy per method.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

mod accessors;
mod body;
pub mod grpc;
mod grpc_through_http;
mod hedge;
mod key;
mod origin;
mod verdict;

/// The core crate, re-exported: name [`Policy`](hedging::Policy), the timers and
/// [`Stats`](hedging::Stats) through it (`hedging_http::hedging::Policy`), and they are
/// always the version this crate was built with.
pub use hedging;

pub use crate::body::ReplayBody;
pub use crate::hedge::{HttpHedge, HttpHedgeLayer, ResponseFuture};
pub use crate::origin::Origin;
pub use crate::verdict::{default_verdict, retry_after, DefaultVerdict};
/// An origin [`Origin`] cannot send to, with why: the rule of
/// [`hedging_http_rules::origin`], shared with `reqwest-hedging`.
pub use hedging_http_rules::InvalidOrigin;
/// The request extension that sends a request once, unhedged, whatever its method; the
/// same type `reqwest-hedging` reads.
///
/// ```
/// let mut request = http::Request::get("http://example.com/").body(()).unwrap();
/// request.extensions_mut().insert(hedging_http::NoHedge);
/// ```
pub use hedging_http_rules::NoHedge;
