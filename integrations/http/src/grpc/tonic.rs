//! [`TonicHedgeLayer`] (feature `tonic`): [`GrpcHedgeLayer`] in front of a tonic
//! `Channel`, handing it tonic's own body type, so no `map_request` goes between.
//!
//! ```
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
//! Without it, [`GrpcHedgeLayer`] hands the `Channel` `http::Request<ReplayBody<Body>>`,
//! which a `Channel` does not take, and the first call fails to compile with E0277: "the
//! trait bound `Channel: Service<Request<ReplayBody<Body>>>` is not satisfied", with the
//! help "expected `tonic::body::Body`, found `ReplayBody<tonic::body::Body>`". This is
//! that case (a doc test that must fail to compile, with that error code):
//!
//! ```compile_fail,E0277
//! # use hedging_http::grpc::GrpcHedgeLayer;
//! # use hedging_http::hedging::{timer::TokioTimer, Policy};
//! # use tower::ServiceBuilder;
//! # async fn call(policy: Policy<TokioTimer>, channel: tonic::transport::Channel) {
//! let channel = ServiceBuilder::new()
//!     .layer(GrpcHedgeLayer::new(policy).methods(["shop.Catalog"])) // no `.for_tonic()`
//!     .service(channel);
//! let mut grpc = tonic::client::Grpc::new(channel);
//! grpc.ready().await;
//! # }
//! ```
#![cfg(feature = "tonic")]
#![cfg_attr(docsrs, doc(cfg(feature = "tonic")))]

use std::fmt;
use std::task::{Context, Poll};

use ::tonic::body::Body;
use hedging::timer::Timer;
use hedging::tower::HedgeTarget;
use hedging::Policy;
use http::{Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use super::{GrpcHedge, GrpcHedgeLayer};
use crate::ReplayBody;

impl<T> GrpcHedgeLayer<T> {
    /// This layer for a tonic `Channel` (or any service taking `tonic::body::Body`): its
    /// service takes and hands on tonic's body type, so no `map_request` goes between.
    /// Set the layer up first; the settings are kept.
    #[cfg_attr(docsrs, doc(cfg(feature = "tonic")))]
    pub fn for_tonic(self) -> TonicHedgeLayer<T> {
        TonicHedgeLayer { layer: self }
    }
}

/// A [`Layer`] that hedges the gRPC calls of a tonic client as [`GrpcHedgeLayer`] does,
/// in front of a tonic `Channel`: [`TonicHedge`] around it. Made by
/// [`GrpcHedgeLayer::for_tonic`].
pub struct TonicHedgeLayer<T> {
    layer: GrpcHedgeLayer<T>,
}

impl<T> TonicHedgeLayer<T> {
    /// The policy every wrapped service hedges by.
    pub fn policy(&self) -> &Policy<T> {
        self.layer.policy()
    }
}

impl<S, T> Layer<S> for TonicHedgeLayer<T> {
    type Service = TonicHedge<S, T>;

    fn layer(&self, inner: S) -> Self::Service {
        TonicHedge {
            hedge: self.layer.layer(IntoTonicBody { inner }),
        }
    }
}

impl<T> Clone for TonicHedgeLayer<T> {
    fn clone(&self) -> Self {
        TonicHedgeLayer {
            layer: self.layer.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for TonicHedgeLayer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TonicHedgeLayer").field(&self.layer).finish()
    }
}

/// A [`Service`] that hedges tonic's gRPC calls as A6 does; made by [`TonicHedgeLayer`].
///
/// It takes `http::Request<tonic::body::Body>`, as tonic's clients send, and hands the
/// inner service (a `Channel`) the same type; its response and error are the inner
/// service's own.
pub struct TonicHedge<S, T> {
    hedge: GrpcHedge<IntoTonicBody<S>, T>,
}

impl<S, T> TonicHedge<S, T> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.hedge.get_ref().inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.hedge.get_mut().inner
    }

    /// The wrapped service, unwrapped.
    pub fn into_inner(self) -> S {
        self.hedge.into_inner().inner
    }

    /// The policy this service hedges by.
    pub fn policy(&self) -> &Policy<T> {
        self.hedge.policy()
    }
}

/// The response future of [`TonicHedge`].
pub type ResponseFuture<S, T> = super::ResponseFuture<IntoTonicBody<S>, Body, T>;

impl<S, T, ResBody> Service<Request<Body>> for TonicHedge<S, T>
where
    S: Service<Request<Body>, Response = Response<ResBody>> + HedgeTarget,
    T: Timer,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S, T>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.hedge.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        self.hedge.call(request)
    }
}

impl<S: HedgeTarget, T> Clone for TonicHedge<S, T> {
    fn clone(&self) -> Self {
        TonicHedge {
            hedge: self.hedge.clone(),
        }
    }
}

impl<S: fmt::Debug, T: fmt::Debug> fmt::Debug for TonicHedge<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TonicHedge").field(&self.hedge).finish()
    }
}

/// The inner service as [`TonicHedge`] drives it: each copy's replayed body wrapped in
/// `tonic::body::Body` (`Body::new`), the `map_request` a `Channel` would otherwise need.
///
/// A [`HedgeTarget`] as the service it wraps is: each copy goes where that service sends
/// it (a clone of a `Channel`; for a [`Replicas`](hedging::tower::Replicas) set of
/// channels, the copy's own replica).
#[derive(Debug)]
pub struct IntoTonicBody<S> {
    inner: S,
}

impl<S: HedgeTarget> HedgeTarget for IntoTonicBody<S> {
    fn handle(&self) -> Self {
        IntoTonicBody {
            inner: self.inner.handle(),
        }
    }

    fn for_copy(&self, attempt: hedging::Attempt) -> Self {
        IntoTonicBody {
            inner: self.inner.for_copy(attempt),
        }
    }
}

impl<S> Service<Request<ReplayBody<Body>>> for IntoTonicBody<S>
where
    S: Service<Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReplayBody<Body>>) -> Self::Future {
        self.inner.call(request.map(Body::new))
    }
}
