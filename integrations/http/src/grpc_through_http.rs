//! [`GrpcThroughHttp`]: the warning `HttpHedgeLayer` gives, once, for a gRPC call it was
//! handed. A leaf of its own, so that `hedge.rs` needs nothing of `grpc/` (which imports
//! `hedge.rs`).

#[cfg(feature = "tracing")]
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use hedging::Policy;

/// Warns, once per [`HttpHedgeLayer`](crate::HttpHedgeLayer) (its clones and services
/// included), of a gRPC request it passed through: gRPC calls are `POST`s, which it never
/// hedges, so in front of a gRPC channel it hedges nothing. Without the feature `tracing`
/// it holds nothing and does nothing.
#[derive(Clone, Debug, Default)]
pub(crate) struct GrpcThroughHttp {
    #[cfg(feature = "tracing")]
    warned: std::sync::Arc<AtomicBool>,
}

impl GrpcThroughHttp {
    /// Says so the first time `request`, outside the layer's scope, is a gRPC call
    /// (`content-type: application/grpc`, `application/grpc+proto`, ...). Read only for
    /// requests the layer passes through, so a hedged request pays nothing.
    #[inline]
    pub(crate) fn check<T, B>(&self, policy: &Policy<T>, request: &http::Request<B>) {
        #[cfg(feature = "tracing")]
        if !self.warned.load(Relaxed) && is_grpc(request) && !self.warned.swap(true, Relaxed) {
            tracing::warn!(
                policy = policy.name(),
                method = request.uri().path(),
                "gRPC call through HttpHedgeLayer: gRPC calls are POSTs, which it never \
                 hedges, so every call is sent once; hedge gRPC with \
                 hedging_http::grpc::GrpcHedgeLayer"
            );
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (policy, request);
    }
}

/// Whether `request` is a gRPC call, by its content type.
#[cfg(feature = "tracing")]
fn is_grpc<B>(request: &http::Request<B>) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    let content_type = request.headers().get(http::header::CONTENT_TYPE);
    let content_type = content_type.map_or(&[][..], |value| value.as_bytes());
    content_type.len() >= GRPC.len() && content_type[..GRPC.len()].eq_ignore_ascii_case(GRPC)
}
