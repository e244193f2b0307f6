//! [`HttpHedgeLayer`], the service [`HttpHedge`] and its [`ResponseFuture`]: hedged HTTP
//! requests over any `tower::Service<http::Request<B>>`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use futures_core::FusedFuture;
use hedging::key::KeyHash;
use hedging::timer::Timer;
use hedging::tower::{HedgeLayer, HedgeTarget};
use hedging::{Attempt, Classify, Policy};
use http::{Method, Request, Response};
use http_body::Body;
use pin_project::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use hedging_http_rules::HedgedMethods;

use crate::body::{ReplayBody, DEFAULT_MAX_REPLAY_BYTES};
use crate::grpc_through_http::GrpcThroughHttp;
use crate::key::{key_request, target, KeyBy};
use crate::verdict::DefaultVerdict;

/// A [`Layer`] that hedges HTTP requests by one [`Policy`]: [`HttpHedge`] around the
/// inner service.
///
/// ```
/// use std::time::Duration;
/// use hedging::{timer::TokioTimer, Policy};
/// use hedging_http::HttpHedgeLayer;
///
/// let policy = Policy::builder()
///     .delay(Duration::from_millis(20))
///     .timer(TokioTimer::new())
///     .build();
/// let layer = HttpHedgeLayer::new(policy)
///     .methods([http::Method::GET, http::Method::PUT]) // PUT is idempotent here
///     .max_replay_bytes(16 * 1024);
/// # let _ = layer;
/// ```
///
/// It hedges no gRPC call (they are `POST`s): the first one it passes through is a `WARN`
/// event (feature `tracing`) naming [`GrpcHedgeLayer`](crate::grpc::GrpcHedgeLayer).
///
/// # Keys
///
/// On a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), each call
/// is keyed by its target, so one client over a fast host and a slow one learns a delay
/// per host: the key is `(scheme, authority)`, two `&str` as the request's URI has them
/// (the `Host` header when the URI has no authority, `"http"` when it has no scheme),
/// taken before an [`Origin`](crate::Origin) set sends a copy to a replica, so every
/// replica of one target shares its delay. `policy.delay_for(&("http", "10.0.0.1:8080"))`
/// is the delay such a call gets now. [`key_by`](Self::key_by) keys otherwise. On a
/// policy without keys the key is never hashed.
///
/// # Defaults
///
/// - methods: `GET`, `HEAD`, `OPTIONS`;
/// - `max_replay_bytes`: 64 KiB;
/// - verdicts: [`default_verdict`](crate::default_verdict);
/// - key: the request's `(scheme, authority)`.
pub struct HttpHedgeLayer<T, K = DefaultVerdict> {
    policy: Policy<T>,
    methods: HedgedMethods,
    max_replay_bytes: usize,
    classify: K,
    grpc: GrpcThroughHttp,
    key_by: KeyBy<T>,
}

impl<T> HttpHedgeLayer<T> {
    /// Hedges by `policy` the `GET`, `HEAD` and `OPTIONS` requests whose bodies fit in 64
    /// KiB, with the [default verdicts](crate::default_verdict).
    pub fn new(policy: Policy<T>) -> Self {
        HttpHedgeLayer {
            policy,
            methods: HedgedMethods::default(),
            max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
            classify: DefaultVerdict,
            grpc: GrpcThroughHttp::default(),
            key_by: KeyBy::default(),
        }
    }
}

impl<T, K> HttpHedgeLayer<T, K> {
    /// Hedges requests with these methods only, replacing the default `GET`, `HEAD`,
    /// `OPTIONS`. Name only methods that are safe to send twice.
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> Self {
        self.methods = HedgedMethods::new(methods);
        self
    }

    /// What each copy's response or error means, replacing the
    /// [default verdicts](crate::default_verdict): any
    /// `FnMut(&Result<http::Response<ResBody>, E>) -> Verdict + Clone`, or a type of
    /// yours implementing [`hedging::Classify`]. Each call classifies its copies with
    /// one clone of it.
    pub fn classify<K2>(self, classify: K2) -> HttpHedgeLayer<T, K2> {
        HttpHedgeLayer {
            policy: self.policy,
            methods: self.methods,
            max_replay_bytes: self.max_replay_bytes,
            classify,
            grpc: self.grpc,
            key_by: self.key_by,
        }
    }

    crate::accessors::define_layer_settings!(
        key_by,
        /// Keys each call by what `key` makes of its request's head, replacing the default
        /// key, the request's target `(scheme, authority)` (see [Keys](Self#keys)). Called
        /// for every call the layer hedges; its key is hashed only on a policy with keys.
        ///
        /// ```
        /// # use hedging::{timer::ManualTimer, Policy};
        /// # use hedging_http::HttpHedgeLayer;
        /// # let policy = Policy::builder().adaptive_delay(0.95).adaptive_keys(64).timer(ManualTimer::new()).build();
        /// // One delay per host and first path segment: `/search` is slower than `/items`.
        /// let layer = HttpHedgeLayer::new(policy).key_by(|head: &http::request::Parts| {
        ///     let segment = head.uri.path().split('/').nth(1).unwrap_or("").to_owned();
        ///     (head.uri.host().unwrap_or("").to_owned(), segment)
        /// });
        /// # let _ = layer;
        /// ```
    );

    crate::accessors::define_layer_settings!();
}

impl<S, T, K: Clone> Layer<S> for HttpHedgeLayer<T, K> {
    type Service = HttpHedge<S, T, K>;

    fn layer(&self, inner: S) -> Self::Service {
        HttpHedge {
            inner,
            layer: self.clone(),
        }
    }
}

impl<T, K: Clone> Clone for HttpHedgeLayer<T, K> {
    fn clone(&self) -> Self {
        HttpHedgeLayer {
            policy: self.policy.clone(),
            methods: self.methods.clone(),
            max_replay_bytes: self.max_replay_bytes,
            classify: self.classify.clone(),
            grpc: self.grpc.clone(),
            key_by: self.key_by.clone(),
        }
    }
}

impl<T: fmt::Debug, K> fmt::Debug for HttpHedgeLayer<T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpHedgeLayer")
            .field("policy", &self.policy)
            .field("methods", &self.methods.as_slice())
            .field("max_replay_bytes", &self.max_replay_bytes)
            .field("key", &self.key_by)
            .finish_non_exhaustive()
    }
}

/// A [`Service`] that hedges the HTTP requests it is given; made by [`HttpHedgeLayer`].
///
/// It takes `http::Request<B>` and hands the inner service `http::Request<ReplayBody<B>>`
/// (see [`ReplayBody`]); its response and error types are the inner service's own. The
/// inner service must be a [`HedgeTarget`]: `Clone` (each hedge drives a clone of it to
/// readiness), or a [`Replicas`](hedging::tower::Replicas) set.
///
/// A request of a method the layer hedges, without [`NoHedge`](crate::NoHedge), is a
/// call: it goes through the race and counts in the policy's `calls`. While the policy is
/// disabled ([`Policy::set_enabled`]) or has one copy, such a call is sent as it was
/// given: its body is not read for replay and the request is not copied. Any other
/// request goes straight to the inner service (its body not read) and counts in the
/// policy's [`out_of_scope`](hedging::Stats::out_of_scope).
pub struct HttpHedge<S, T, K = DefaultVerdict> {
    inner: S,
    layer: HttpHedgeLayer<T, K>,
}

impl<S, T, K> HttpHedge<S, T, K> {
    crate::accessors::define_inner_service_accessors!();
}

impl<S, T, K, B, ResBody> Service<Request<B>> for HttpHedge<S, T, K>
where
    S: Service<Request<ReplayBody<B>>, Response = Response<ResBody>> + HedgeTarget,
    B: Body + Unpin,
    T: Timer,
    K: Classify<Response<ResBody>, S::Error> + Clone,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S, B, T, K>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let layer = &self.layer;
        if !layer.methods.hedges(request.method(), request.extensions()) {
            layer.grpc.check(&layer.policy, &request);
            return out_of_scope(&mut self.inner, &layer.policy, request);
        }
        let copies = Copies {
            copy: copy_request::<B>,
            max_copies: usize::MAX,
        };
        let max_replay_bytes = layer.max_replay_bytes;
        let policy = &layer.policy;
        let keyed = key_request(&layer.key_by, policy, request, |head| {
            policy.key_hash(&target(head))
        });
        start(
            &mut self.inner,
            policy,
            layer.classify.clone(),
            copies,
            keyed,
            |request, may_hedge| replayable(request, may_hedge, max_replay_bytes),
        )
    }
}

/// `request` with the body the inner service is handed: read for replay (up to
/// `max_replay_bytes`) when the call may hedge; passed through unread when it may not (a
/// disabled policy, one copy), so such a call sends its request as it was given.
pub(crate) fn replayable<B: Body + Unpin>(
    request: Request<B>,
    may_hedge: bool,
    max_replay_bytes: usize,
) -> Request<ReplayBody<B>> {
    request.map(|body| match may_hedge {
        true => ReplayBody::read(body, max_replay_bytes),
        false => ReplayBody::once(body),
    })
}

/// How a layer copies its requests, and the most copies of one it sends.
pub(crate) struct Copies<Req> {
    pub(crate) copy: CopyRequest<Req>,
    /// Told to the race, not left to `copy` to decline: the race then knows the last
    /// copy, and a pushback on it ends the call at once.
    pub(crate) max_copies: usize,
}

/// Sends `request` through the core's race, each copy judged by `classify`: the instance
/// of `inner` that `poll_ready` readied sends the original (left holding an unready clone
/// when the call may hedge), and the core readies a clone of it for each hedge. The core
/// decides whether the call may hedge and tells `prepare`, which makes the request sent
/// (see [`replayable`]). The call is one of the policy's `calls`, even when it is sent
/// once, and carries `key`, as [`key_request`] read it from the request.
pub(crate) fn start<S, B, T, K>(
    inner: &mut S,
    policy: &Policy<T>,
    classify: K,
    copies: Copies<Request<ReplayBody<B>>>,
    (request, key): (Request<B>, KeyHash),
    prepare: impl FnOnce(Request<B>, bool) -> Request<ReplayBody<B>>,
) -> ResponseFuture<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
    K: Classify<S::Response, S::Error> + Clone,
{
    let race = HedgeLayer::new(policy.clone())
        .clone_request(copies.copy)
        .classify(classify)
        .max_copies(copies.max_copies)
        .call_with(inner, request, prepare)
        .key_hash(key);
    ResponseFuture {
        state: State::Race { race },
    }
}

/// Sends a request outside the layer's scope straight to `inner`, the instance
/// `poll_ready` readied: no race, no timer, its body not read. It is counted in the
/// policy's [`out_of_scope`](hedging::Stats::out_of_scope), not in its `calls` (the rule
/// every integration keeps: <https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted>).
pub(crate) fn out_of_scope<S, B, T, K>(
    inner: &mut S,
    policy: &Policy<T>,
    request: Request<B>,
) -> ResponseFuture<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
{
    policy.count_out_of_scope();
    ResponseFuture::direct(inner.call(request.map(ReplayBody::once)))
}

/// How a layer copies a request for attempt `n`; `None` sends the request once.
pub(crate) type CopyRequest<Req> = fn(&Req, Attempt) -> Option<Req>;

/// A copy of `request` with a fresh replay of its body and its own copy of every
/// header and extension; `None` when its body cannot be replayed.
pub(crate) fn copy_request<B: Body>(
    request: &Request<ReplayBody<B>>,
    _attempt: Attempt,
) -> Option<Request<ReplayBody<B>>> {
    let body = request.body().try_clone()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}

/// The race over copies of one request: the core's [`hedging::tower::ResponseFuture`].
type Race<S, B, T, K> = hedging::tower::ResponseFuture<
    S,
    Request<ReplayBody<B>>,
    T,
    CopyRequest<Request<ReplayBody<B>>>,
    K,
>;

/// The response future of [`HttpHedge`] (and of the gRPC layers): the core's race over
/// copies of a request the layer hedges, or the inner service's own future for a request
/// outside its scope. Its output is the inner service's.
#[pin_project]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct ResponseFuture<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
{
    #[pin]
    state: State<S, B, T, K>,
}

// The race is the common case: boxing it to shrink the other variants would allocate on
// every hedged call.
#[allow(clippy::large_enum_variant)]
#[pin_project(project = StateProj)]
enum State<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
{
    /// A call the layer hedges, sent once or more.
    Race {
        #[pin]
        race: Race<S, B, T, K>,
    },
    /// A request outside the layer's scope, sent to the inner service as it is.
    OutOfScope {
        #[pin]
        response: S::Future,
    },
    /// The request outside the scope answered.
    Done,
}

impl<S, B, T, K> ResponseFuture<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
{
    /// The inner service's own future, for a request outside the layer's scope (counted
    /// by the caller).
    pub(crate) fn direct(response: S::Future) -> Self {
        ResponseFuture {
            state: State::OutOfScope { response },
        }
    }

    /// Whether the request goes through the race rather than straight to the service.
    pub(crate) fn is_race(&self) -> bool {
        matches!(self.state, State::Race { .. })
    }
}

impl<S, B, T, K> Future for ResponseFuture<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
    K: Classify<S::Response, S::Error>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        match state.as_mut().project() {
            StateProj::Race { race } => race.poll(cx),
            StateProj::OutOfScope { response } => {
                let output = ready!(response.poll(cx));
                state.set(State::Done);
                Poll::Ready(output)
            }
            StateProj::Done => panic!("`ResponseFuture` polled after completion"),
        }
    }
}

impl<S, B, T, K> FusedFuture for ResponseFuture<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
    K: Classify<S::Response, S::Error>,
{
    fn is_terminated(&self) -> bool {
        match &self.state {
            State::Race { race } => race.is_terminated(),
            State::OutOfScope { .. } => false,
            State::Done => true,
        }
    }
}

impl<S, B, T, K> fmt::Debug for ResponseFuture<S, B, T, K>
where
    S: Service<Request<ReplayBody<B>>> + HedgeTarget,
    B: Body,
    T: Timer,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Race { .. } => "race",
            State::OutOfScope { .. } => "out of scope",
            State::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl<S: HedgeTarget, T, K: Clone> Clone for HttpHedge<S, T, K> {
    fn clone(&self) -> Self {
        HttpHedge {
            inner: self.inner.handle(),
            layer: self.layer.clone(),
        }
    }
}

impl<S: fmt::Debug, T: fmt::Debug, K> fmt::Debug for HttpHedge<S, T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpHedge")
            .field("inner", &self.inner)
            .field("layer", &self.layer)
            .finish()
    }
}
