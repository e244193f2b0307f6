//! [`GrpcHedge`], the service a [`GrpcHedgeLayer`] makes, and its [`ResponseFuture`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::FusedFuture;
use hedging::timer::Timer;
use hedging::tower::HedgeTarget;
use hedging::{Attempt, Classify};
use http::{HeaderName, HeaderValue, Request, Response};
use http_body::Body;
use pin_project::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::body::ReplayBody;
use crate::hedge::{copy_request, replayable, start, Copies};
use crate::key::key_request;
use crate::NoHedge;

use super::layer::{GrpcHedgeLayer, Route};
use super::scope::Reason;
use super::{timeout, GrpcVerdict, MAX_ATTEMPTS};

const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
const PREVIOUS_ATTEMPTS: HeaderName = HeaderName::from_static("grpc-previous-rpc-attempts");

/// A [`Service`] that hedges gRPC calls as A6 does; made by [`GrpcHedgeLayer`].
///
/// It takes `http::Request<B>` and hands the inner service
/// `http::Request<ReplayBody<B>>`; in front of a tonic `Channel`, map the body into
/// tonic's (see the [crate docs](crate#grpc-with-tonic)). A call whose policy is disabled
/// ([`Policy::set_enabled`](hedging::Policy::set_enabled)) or has one copy is sent as it
/// was given, its body not read for replay, and still counted in the policy's `calls`.
pub struct GrpcHedge<S, T> {
    pub(crate) inner: S,
    pub(crate) layer: GrpcHedgeLayer<T>,
}

impl<S, T> GrpcHedge<S, T> {
    crate::accessors::define_inner_service_accessors!(inner);

    /// The layer's own policy (see [`GrpcHedgeLayer::policy`]).
    pub fn policy(&self) -> &hedging::Policy<T> {
        self.layer.policy()
    }

    /// The layer that made this service, for its other policies
    /// ([`policy_for`](GrpcHedgeLayer::policy_for), [`policies`](GrpcHedgeLayer::policies)).
    pub fn layer(&self) -> &GrpcHedgeLayer<T> {
        &self.layer
    }
}

// Here, beside the service it makes, so that the layer's module needs nothing of this one.
impl<S, T> Layer<S> for GrpcHedgeLayer<T> {
    type Service = GrpcHedge<S, T>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcHedge {
            inner,
            layer: self.clone(),
        }
    }
}

/// The `grpc-timeout` of the call as the caller sent it, kept on every copy so each can
/// be given what is left of it.
#[derive(Clone, Copy, Debug)]
struct CallTimeout(Duration);

impl<S, T, B, ResBody> Service<Request<B>> for GrpcHedge<S, T>
where
    S: Service<Request<ReplayBody<B>>, Response = Response<ResBody>> + HedgeTarget,
    B: Body + Unpin,
    T: Timer,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S, B, T>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let layer = &self.layer;
        // One lookup: where the call's method goes, if anywhere.
        let hedged_by = match layer.routes.find(request.uri().path()) {
            None => Err(Reason::Unmatched),
            Some(Route::Unhedged) => Err(Reason::WithoutHedgingPolicy),
            Some(_) if NoHedge::opts_out(request.extensions()) => Err(Reason::OptedOut),
            Some(route) => layer.hedged_by(route).ok_or(Reason::WithoutHedgingPolicy),
        };
        let (policy, verdict) = match hedged_by {
            Ok(hedged_by) => hedged_by,
            Err(reason) => {
                // Straight to the inner service: no race, no body buffered, not a call.
                let path = request.uri().path();
                layer.out_of_scope.pass(&layer.policy, path, reason);
                let request = request.map(ReplayBody::once);
                let call = crate::ResponseFuture::direct(self.inner.call(request));
                return ResponseFuture { call };
            }
        };
        let copies = Copies {
            copy: copy_grpc_request::<B>,
            max_copies: MAX_ATTEMPTS,
        };
        let max_replay_bytes = layer.max_replay_bytes;
        let prepare = |request, may_hedge| {
            let mut request = replayable(request, may_hedge, max_replay_bytes);
            if request.body().is_replayable() {
                let timeout = request.headers().get(GRPC_TIMEOUT);
                if let Some(timeout) = timeout.and_then(|t| timeout::parse(t.as_bytes())) {
                    request.extensions_mut().insert(CallTimeout(timeout));
                }
            }
            request
        };
        let keyed = key_request(&layer.key_by, policy, request, |head| {
            policy.key_hash(head.uri.path())
        });
        let call = start(
            &mut self.inner,
            policy,
            verdict.clone(),
            copies,
            keyed,
            prepare,
        );
        ResponseFuture { call }
    }
}

/// Copy `attempt` of a gRPC call: the request again, telling the server how many copies
/// came before it and how much of the call's timeout is left. `None` once the call's
/// timeout has run out, or for a body sent once. A6's cap of 5 attempts is the race's to
/// keep (see `Copies::max_copies`).
fn copy_grpc_request<B: Body>(
    request: &Request<ReplayBody<B>>,
    attempt: Attempt,
) -> Option<Request<ReplayBody<B>>> {
    let mut copy = copy_request(request, attempt)?;
    if attempt.is_hedge() {
        let headers = copy.headers_mut();
        headers.insert(PREVIOUS_ATTEMPTS, HeaderValue::from(attempt.index()));
        if let Some(CallTimeout(call_timeout)) = request.extensions().get() {
            let left = timeout::reduce(*call_timeout, attempt.elapsed())?;
            headers.insert(GRPC_TIMEOUT, timeout::format(left));
        }
    }
    Some(copy)
}

impl<S: HedgeTarget, T> Clone for GrpcHedge<S, T> {
    fn clone(&self) -> Self {
        GrpcHedge {
            inner: self.inner.handle(),
            layer: self.layer.clone(),
        }
    }
}

impl<S: fmt::Debug, T: fmt::Debug> fmt::Debug for GrpcHedge<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcHedge")
            .field("inner", &self.inner)
            .field("layer", &self.layer)
            .finish()
    }
}

/// The response future of [`GrpcHedge`]: the core's race over the copies of a call the
/// layer hedges, or the inner service's own future for a call outside its scope (the HTTP
/// layer's [`ResponseFuture`](crate::ResponseFuture), with the gRPC verdicts). Its output
/// is the inner service's.
#[pin_project]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct ResponseFuture<S, B, T>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
{
    #[pin]
    call: crate::ResponseFuture<S, B, T, GrpcVerdict>,
}

impl<S, B, T> Future for ResponseFuture<S, B, T>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
    GrpcVerdict: Classify<S::Response, S::Error>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().call.poll(cx)
    }
}

impl<S, B, T> FusedFuture for ResponseFuture<S, B, T>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
    GrpcVerdict: Classify<S::Response, S::Error>,
{
    fn is_terminated(&self) -> bool {
        self.call.is_terminated()
    }
}

impl<S, B, T> fmt::Debug for ResponseFuture<S, B, T>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.call.is_race() {
            true => f
                .debug_tuple("ResponseFuture::Hedged")
                .field(&self.call)
                .finish(),
            false => f.write_str("ResponseFuture::Direct"),
        }
    }
}
