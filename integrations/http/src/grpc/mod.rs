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
//! | hedging only the methods the config names | [`methods`](GrpcHedgeLayer::methods), [`all_methods`](GrpcHedgeLayer::all_methods) |
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

mod methods;
mod status;
mod timeout;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hedging::timer::Timer;
use hedging::{Attempt, Policy};
use http::{HeaderName, HeaderValue, Request, Response};
use http_body::Body;
use tower_layer::Layer;
use tower_service::Service;

use crate::body::{ReplayBody, DEFAULT_MAX_REPLAY_BYTES};
use crate::hedge::{copy_request, start, Copies};
use crate::NoHedge;

use self::methods::Methods;
pub use self::status::GrpcVerdict;

/// A6's client-side cap on attempts: the original and at most four hedges. The race is
/// told it, so a pushback on the last attempt ends the call at once.
pub const MAX_ATTEMPTS: usize = 5;

const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");
const PREVIOUS_ATTEMPTS: HeaderName = HeaderName::from_static("grpc-previous-rpc-attempts");

/// The response future of [`GrpcHedge`].
pub type ResponseFuture<S, B, T> = crate::ResponseFuture<S, B, T, GrpcVerdict>;

/// A [`Layer`] that hedges gRPC calls as gRPC's design A6 does: [`GrpcHedge`] around
/// the inner service (a tonic `Channel`, or any `Service<http::Request<B>>` speaking
/// gRPC over HTTP/2).
///
/// Only the methods named with [`methods`](GrpcHedgeLayer::methods) are hedged (or
/// every one, with [`all_methods`](GrpcHedgeLayer::all_methods)); any other call is sent
/// once. The policy's `max_copies` is A6's `maxAttempts` (capped at [`MAX_ATTEMPTS`]),
/// its `delay` A6's `hedgingDelay`.
///
/// ```
/// use std::time::Duration;
/// use hedging::{timer::TokioTimer, Policy};
/// use hedging_http::grpc::GrpcHedgeLayer;
///
/// let policy = Policy::builder()
///     .max_copies(3)                      // maxAttempts
///     .delay(Duration::from_millis(10))   // hedgingDelay
///     .timer(TokioTimer::new())
///     .build();
/// let layer = GrpcHedgeLayer::new(policy)
///     .methods(["shop.Catalog", "shop.Cart/Get"])
///     .non_fatal_codes([14, 13]); // UNAVAILABLE, INTERNAL
/// # let _ = layer;
/// ```
///
/// # Defaults
///
/// - methods: none (A6 hedges only the methods its config names);
/// - `non_fatal_codes`: `[14]` (`UNAVAILABLE`);
/// - `max_replay_bytes`: 64 KiB.
pub struct GrpcHedgeLayer<T> {
    policy: Policy<T>,
    methods: Arc<Methods>,
    verdict: GrpcVerdict,
    max_replay_bytes: usize,
}

impl<T> GrpcHedgeLayer<T> {
    /// Hedges by `policy` the methods named later with
    /// [`methods`](GrpcHedgeLayer::methods); none until then.
    pub fn new(policy: Policy<T>) -> Self {
        GrpcHedgeLayer {
            policy,
            methods: Arc::new(Methods::default()),
            verdict: GrpcVerdict::default(),
            max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
        }
    }

    /// Hedges these methods only, named as A6's service config names them:
    /// `package.Service` for every method of a service, `package.Service/Method` for one.
    /// Replaces earlier names and [`all_methods`](GrpcHedgeLayer::all_methods).
    pub fn methods(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.methods = Arc::new(Methods::named(names));
        self
    }

    /// Hedges every method (A6's method config with an empty name). Only for services
    /// whose every method is safe to run twice.
    pub fn all_methods(mut self) -> Self {
        self.methods = Arc::new(Methods::all());
        self
    }

    /// The gRPC status codes after which other copies may still succeed (A6's
    /// `nonFatalStatusCodes`), as integers: `tonic::Code::Unavailable as i32` is `14`.
    /// Replaces the default `[14]`. Any other status ends the call with it.
    pub fn non_fatal_codes(mut self, codes: impl IntoIterator<Item = i32>) -> Self {
        self.verdict = GrpcVerdict::new(codes);
        self
    }

    crate::accessors::define_layer_settings!();
}

impl<S, T> Layer<S> for GrpcHedgeLayer<T> {
    type Service = GrpcHedge<S, T>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcHedge {
            inner,
            layer: self.clone(),
        }
    }
}

impl<T> Clone for GrpcHedgeLayer<T> {
    fn clone(&self) -> Self {
        GrpcHedgeLayer {
            policy: self.policy.clone(),
            methods: Arc::clone(&self.methods),
            verdict: self.verdict.clone(),
            max_replay_bytes: self.max_replay_bytes,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for GrpcHedgeLayer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcHedgeLayer")
            .field("policy", &self.policy)
            .field("methods", &self.methods)
            .field("verdict", &self.verdict)
            .field("max_replay_bytes", &self.max_replay_bytes)
            .finish()
    }
}

/// A [`Service`] that hedges gRPC calls as A6 does; made by [`GrpcHedgeLayer`].
///
/// It takes `http::Request<B>` and hands the inner service
/// `http::Request<ReplayBody<B>>`; in front of a tonic `Channel`, map the body into
/// tonic's (see the [crate docs](crate#grpc-with-tonic)).
pub struct GrpcHedge<S, T> {
    inner: S,
    layer: GrpcHedgeLayer<T>,
}

impl<S, T> GrpcHedge<S, T> {
    crate::accessors::define_inner_service_accessors!();
}

/// The `grpc-timeout` of the call as the caller sent it, kept on every copy so each can
/// be given what is left of it.
#[derive(Clone, Copy, Debug)]
struct CallTimeout(Duration);

impl<S, T, B, ResBody> Service<Request<B>> for GrpcHedge<S, T>
where
    S: Service<Request<ReplayBody<B>>, Response = Response<ResBody>> + Clone,
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
        // A call that cannot hedge leaves its body alone.
        let hedged = layer.policy.max_copies() > 1
            && layer.methods.contains(request.uri().path())
            && !NoHedge::opts_out(request.extensions());
        let mut request = request.map(|body| match hedged {
            true => ReplayBody::read(body, layer.max_replay_bytes),
            false => ReplayBody::once(body),
        });
        if request.body().is_replayable() {
            let timeout = request.headers().get(GRPC_TIMEOUT);
            if let Some(timeout) = timeout.and_then(|t| timeout::parse(t.as_bytes())) {
                request.extensions_mut().insert(CallTimeout(timeout));
            }
        }
        let copies = Copies {
            copy: copy_grpc_request::<B>,
            max_copies: MAX_ATTEMPTS,
        };
        start(
            &mut self.inner,
            &layer.policy,
            layer.verdict.clone(),
            copies,
            request,
        )
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

impl<S: Clone, T> Clone for GrpcHedge<S, T> {
    fn clone(&self) -> Self {
        GrpcHedge {
            inner: self.inner.clone(),
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
