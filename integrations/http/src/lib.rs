//! Hedged HTTP and gRPC calls over any `tower::Service<http::Request<B>>`.
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

mod body;
pub mod grpc;
mod hedge;
mod judge;
mod verdict;

pub use crate::body::ReplayBody;
pub use crate::hedge::{HttpHedge, HttpHedgeLayer, ResponseFuture};
pub use crate::verdict::{default_verdict, retry_after, DefaultVerdict};

/// A request extension that sends the request once, unhedged, whatever its method.
///
/// ```
/// let mut request = http::Request::get("http://example.com/").body(()).unwrap();
/// request.extensions_mut().insert(hedging_http::NoHedge);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoHedge;
