//! [`HedgeLayer`] and [`HedgeService`]: hedging as tower middleware.
//!
//! ```
//! use std::time::Duration;
//! use hedging::{tower::HedgeLayer, Policy};
//! use tower::{service_fn, ServiceBuilder, ServiceExt};
//! # futures::executor::block_on(async {
//! let policy = Policy::builder().max_copies(2).delay(Duration::from_millis(20)).build();
//! let service = ServiceBuilder::new()
//!     .layer(HedgeLayer::new(policy.clone()))
//!     .service(service_fn(|key: String| async move { Ok::<_, std::io::Error>(key.len()) }));
//!
//! assert_eq!(service.oneshot("row-7".to_string()).await.unwrap(), 5);
//! assert_eq!(policy.stats().calls, 1);
//! # });
//! ```
//!
//! # Readiness
//!
//! Each copy of a request needs a service that is ready for it. [`HedgeService`] clones
//! the inner service per copy, as tower's own middleware does: the instance that
//! [`poll_ready`](Service::poll_ready) readied sends the original at once, and each hedge
//! drives its own clone to readiness inside the response future (a failed `poll_ready` is
//! a failed copy). A service that is not `Clone` can be wrapped in tower's `Buffer` first.
//! What the inner service must be is [`HedgeTarget`]: any `Clone` service, or a
//! [`Replicas`] set.
//!
//! # Replicas
//!
//! Given a [`Replicas`] set (one service per replica, or several connections to one
//! host), copy k of a call goes to replica `(first + k) mod n`, chosen by its attempt
//! ([`HedgeTarget::for_copy`]), `first` moving on by one from call to call, and each copy
//! readies its own replica: a hedge does not follow its original to the replica that is
//! slow, and a replica that fails to become ready fails only the copy sent to it.
//!
//! # Requests
//!
//! Requests are copied with [`Clone`] by default, or by a function given to
//! [`HedgeLayer::clone_request`] that sees each copy's [`Attempt`] and may decline: `None`
//! for the original sends the request once, unhedged; `None` for a hedge declines it and
//! every later one when it is due (a cap known in advance goes to
//! [`HedgeLayer::max_copies`]). A call that may hedge keeps its request and sends a copy
//! of it as the original, then one more per hedge.
//!
//! # Which calls may hedge
//!
//! A call may hedge when, as it is made, its policy is enabled
//! ([`Policy::set_enabled`]) and both its policy's `max_copies` and the layer's
//! [`max_copies`](HedgeLayer::max_copies) are above 1: the layer asks
//! [`Policy::copies_allowed`] with its own cap. Any other call sends the request
//! it was given, as it was given: nothing is copied and no service is cloned; it is still
//! one of the policy's `calls`. [`HedgeLayer::call_with`] tells middleware that turns its
//! request into the inner service's (an HTTP layer buffering a body for replay) which
//! case a call is, so it can leave a call that may not hedge as it was sent.

use core::fmt;
use core::mem;
use core::task::{Context, Poll};
use core::time::Duration;

use tower_layer::Layer;
use tower_service::Service;

mod copy;
mod future;
mod replicas;
mod target;

pub use self::copy::{CopyFuture, ServiceCopies};
pub use self::future::ResponseFuture;
pub use self::replicas::Replicas;
pub use self::target::HedgeTarget;

use crate::attempt::{Attempt, ByResult, Classify, When};
use crate::builder::PolicyBuilder;
use crate::hedge::Hedge;
use crate::key::KeyHash;
use crate::policy::Policy;
use crate::timer::{DefaultTimer, Timer};

/// Copies a request for each copy of a call.
///
/// Implemented by [`ByClone`] (the default: [`Clone::clone`]) and by every
/// `Fn(&Req, Attempt) -> Option<Req>`, for requests that are not `Clone`, that need
/// something of their own per copy (a header naming the attempt, a fresh id), or that
/// cannot always be copied.
pub trait CloneRequest<Req> {
    /// The request copy `attempt.index()` sends, made from the one the call was given;
    /// `None` not to send it. `None` for the original (attempt 0) sends the call's own
    /// request once, unhedged (the call is still counted); `None` for a later copy
    /// declines it and every copy after it.
    fn clone_request(&self, request: &Req, attempt: Attempt) -> Option<Req>;
}

/// Copies requests with [`Clone::clone`]; the default of [`HedgeLayer`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByClone;

impl<Req: Clone> CloneRequest<Req> for ByClone {
    #[inline]
    fn clone_request(&self, request: &Req, _attempt: Attempt) -> Option<Req> {
        Some(request.clone())
    }
}

impl<Req, F: Fn(&Req, Attempt) -> Option<Req>> CloneRequest<Req> for F {
    #[inline]
    fn clone_request(&self, request: &Req, attempt: Attempt) -> Option<Req> {
        self(request, attempt)
    }
}

/// A [`Layer`] that wraps a service in a [`HedgeService`] hedging by one [`Policy`].
///
/// Every service it wraps records into the same policy's stats.
///
/// ```
/// use std::time::Duration;
/// use hedging::{tower::HedgeLayer, Policy};
///
/// #[derive(Debug)]
/// struct Request { id: u64, attempt: usize, body: Vec<u8> } // not `Clone`
///
/// let policy = Policy::builder().delay(Duration::from_millis(20)).build();
/// let layer = HedgeLayer::new(policy)
///     .clone_request(|r: &Request, a: hedging::Attempt| {
///         Some(Request { id: r.id, attempt: a.index(), body: r.body.clone() })
///     })
///     .when(|e: &std::io::Error| e.kind() == std::io::ErrorKind::TimedOut);
/// # let _ = layer;
/// ```
pub struct HedgeLayer<T = DefaultTimer, R = ByClone, K = ByResult> {
    policy: Policy<T>,
    clone_request: R,
    classify: K,
    max_copies: usize,
}

impl<T> HedgeLayer<T> {
    /// Hedges by `policy`, copying requests with `Clone`; `Ok` wins and `Err` is
    /// retried.
    pub fn new(policy: Policy<T>) -> Self {
        HedgeLayer {
            policy,
            clone_request: ByClone,
            classify: ByResult,
            max_copies: PolicyBuilder::<T>::MAX_COPIES,
        }
    }
}

impl<T, R, K> HedgeLayer<T, R, K> {
    /// Copies requests with `clone_request` instead of [`Clone`]: it makes the request of
    /// each copy, the original's included, from the one the call was given, and may say
    /// `None` (see [`CloneRequest::clone_request`]).
    pub fn clone_request<Req, R2>(self, clone_request: R2) -> HedgeLayer<T, R2, K>
    where
        R2: Fn(&Req, Attempt) -> Option<Req>,
    {
        self.with_parts(|_, classify| (clone_request, classify))
    }

    /// Which errors are worth another copy: `true` keeps racing, `false` returns the
    /// error at once and drops the other copies. See [`Hedge::when`].
    pub fn when<E, W>(self, retryable: W) -> HedgeLayer<T, R, When<W>>
    where
        W: Fn(&E) -> bool,
    {
        self.with_classify(When(retryable))
    }

    /// What each finished copy means, with full control. See [`Hedge::classify`].
    ///
    /// Any [`Classify`] that is `Clone`: a closure
    /// `FnMut(&Result<Resp, E>) -> Verdict`, or a type of its own (one that holds
    /// settings, such as a list of codes to retry). Each call works on its own clone,
    /// which sees every copy of that call.
    pub fn classify<Resp, E, K2>(self, classify: K2) -> HedgeLayer<T, R, K2>
    where
        K2: Classify<Resp, E> + Clone,
    {
        self.with_classify(classify)
    }

    /// Caps every call's copies below the policy's, as [`Hedge::max_copies`] caps one
    /// call: for a service that takes at most `max_copies` copies of a request. A server's
    /// pushback on the last of them ends the call at once with its failure, where a
    /// `clone_request` declining the next copy would first wait the pushback out.
    /// Clamped to `1..=64`; default 64, the policy's cap alone.
    pub fn max_copies(mut self, max_copies: usize) -> Self {
        self.max_copies = max_copies.clamp(1, PolicyBuilder::<T>::MAX_COPIES);
        self
    }

    /// The policy every wrapped service hedges by.
    pub fn policy(&self) -> &Policy<T> {
        &self.policy
    }

    /// Hedges one request through `inner` as the service this layer makes would, without
    /// making one: for middleware that picks its policy request by request. `inner` must
    /// be ready (its `poll_ready` returned `Ready(Ok)`); it sends the original, and when
    /// the call may hedge it is left holding an unready handle ([`HedgeTarget::handle`],
    /// a clone), as tower's middleware leaves a service after `call`. It takes the layer:
    /// clone one per request (a clone is a few reference counts).
    ///
    /// ```
    /// use hedging::{tower::HedgeLayer, Policy};
    /// use tower::{service_fn, Service, ServiceExt};
    /// # futures::executor::block_on(async {
    /// let mut service = service_fn(|key: String| async move { Ok::<_, std::io::Error>(key.len()) });
    /// let policy = Policy::builder().max_copies(2).build();
    /// let ready = service.ready().await.unwrap();
    /// assert_eq!(HedgeLayer::new(policy).call(ready, "row-7".into()).await.unwrap(), 5);
    /// # });
    /// ```
    #[inline]
    pub fn call<S, Req>(self, inner: &mut S, request: Req) -> ResponseFuture<S, Req, T, R, K>
    where
        S: Service<Req> + HedgeTarget,
        T: Timer,
        R: CloneRequest<Req>,
    {
        self.call_with(inner, request, |request, _| request)
    }

    /// [`call`](HedgeLayer::call), for middleware whose inner service takes a request of
    /// another type than the one it was given: `prepare` makes the request to send from
    /// `request`, told whether the call may hedge (see
    /// [Which calls may hedge](self#which-calls-may-hedge)). When it is told `false`
    /// the request is sent once, as `prepare` made it, and need not be copyable: an HTTP
    /// layer then leaves the body as it was, unread.
    ///
    /// ```
    /// use hedging::{tower::HedgeLayer, Policy};
    /// use tower::{service_fn, ServiceExt};
    /// # futures::executor::block_on(async {
    /// let mut service = service_fn(|key: String| async move { Ok::<_, std::io::Error>(key) });
    /// let policy = Policy::builder().max_copies(2).build();
    /// policy.set_enabled(false);
    /// let ready = service.ready().await.unwrap();
    /// let call = HedgeLayer::new(policy.clone()).call_with(ready, "row-7", |key: &str, may_hedge| {
    ///     assert!(!may_hedge, "the policy is disabled");
    ///     key.to_string()
    /// });
    /// assert_eq!(call.await.unwrap(), "row-7");
    /// assert_eq!(policy.stats().calls, 1);
    /// # });
    /// ```
    pub fn call_with<S, Given, Req>(
        self,
        inner: &mut S,
        request: Given,
        prepare: impl FnOnce(Given, bool) -> Req,
    ) -> ResponseFuture<S, Req, T, R, K>
    where
        S: Service<Req> + HedgeTarget,
        T: Timer,
        R: CloneRequest<Req>,
    {
        let max_copies = self.policy.copies_allowed(self.max_copies);
        let request = prepare(request, max_copies > 1);
        let first = (max_copies > 1)
            .then(|| {
                let original = Attempt::new(0, max_copies, Duration::ZERO);
                self.clone_request.clone_request(&request, original)
            })
            .flatten();
        let (copies, max_copies) = match first {
            // The original sends a copy; the call's own request stays, to copy for hedges.
            // The readied instance sends the original and stays with the call: each hedge
            // readies the service it gives for the hedge's attempt (a clone; a set of
            // replicas, the replica after the original's). `inner` is left holding a handle
            // taken before it.
            Some(first) => {
                let unready = inner.handle();
                let mut ready = mem::replace(inner, unready);
                let original = ready.call(first);
                let hedges = Some((ready, request));
                let copies = ServiceCopies::new(original, hedges, self.clone_request);
                (copies, max_copies)
            }
            // A call that may not hedge, or cannot copy its request, sends it once.
            None => {
                let original = inner.call(request);
                (ServiceCopies::new(original, None, self.clone_request), 1)
            }
        };
        let hedge = Hedge::new(copies, self.policy).with_key(KeyHash::NONE);
        ResponseFuture {
            hedge: hedge.with_classify(self.classify).max_copies(max_copies),
        }
    }

    fn with_classify<K2>(self, classify: K2) -> HedgeLayer<T, R, K2> {
        self.with_parts(|clone_request, _| (clone_request, classify))
    }

    /// The layer with its request copier and classifier replaced by `replace`'s.
    fn with_parts<R2, K2>(self, replace: impl FnOnce(R, K) -> (R2, K2)) -> HedgeLayer<T, R2, K2> {
        let (clone_request, classify) = replace(self.clone_request, self.classify);
        HedgeLayer {
            policy: self.policy,
            clone_request,
            classify,
            max_copies: self.max_copies,
        }
    }
}

impl<S, T, R: Clone, K: Clone> Layer<S> for HedgeLayer<T, R, K> {
    type Service = HedgeService<S, T, R, K>;

    fn layer(&self, inner: S) -> Self::Service {
        HedgeService {
            inner,
            layer: self.clone(),
        }
    }
}

impl<T, R: Clone, K: Clone> Clone for HedgeLayer<T, R, K> {
    fn clone(&self) -> Self {
        HedgeLayer {
            policy: self.policy.clone(),
            clone_request: self.clone_request.clone(),
            classify: self.classify.clone(),
            max_copies: self.max_copies,
        }
    }
}

impl<T: fmt::Debug, R, K> fmt::Debug for HedgeLayer<T, R, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeLayer")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// A [`Service`] that hedges every call to the service it wraps; made by
/// [`HedgeLayer`] or [`HedgeService::new`].
///
/// Its response and error types are the inner service's own. See the
/// [module docs](self) for how readiness and requests are handled.
pub struct HedgeService<S, T = DefaultTimer, R = ByClone, K = ByResult> {
    inner: S,
    /// The settings; each call hedges through a clone of it.
    layer: HedgeLayer<T, R, K>,
}

impl<S, T> HedgeService<S, T> {
    /// Hedges calls to `inner` by `policy`, copying requests with `Clone`. For the
    /// other settings, build a [`HedgeLayer`].
    pub fn new(inner: S, policy: Policy<T>) -> Self {
        HedgeLayer::new(policy).layer(inner)
    }
}

impl<S, T, R, K> HedgeService<S, T, R, K> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// The policy this service hedges by.
    pub fn policy(&self) -> &Policy<T> {
        self.layer.policy()
    }
}

impl<S, Req, T, R, K> Service<Req> for HedgeService<S, T, R, K>
where
    S: Service<Req> + HedgeTarget,
    T: Timer,
    R: CloneRequest<Req> + Clone,
    K: Classify<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S, Req, T, R, K>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        self.layer.clone().call(&mut self.inner, request)
    }
}

impl<S: HedgeTarget, T, R: Clone, K: Clone> Clone for HedgeService<S, T, R, K> {
    fn clone(&self) -> Self {
        HedgeService {
            inner: self.inner.handle(),
            layer: self.layer.clone(),
        }
    }
}

impl<S: fmt::Debug, T: fmt::Debug, R, K> fmt::Debug for HedgeService<S, T, R, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgeService")
            .field("inner", &self.inner)
            .field("policy", self.layer.policy())
            .finish_non_exhaustive()
    }
}
