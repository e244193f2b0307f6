//! [`HedgeTarget`]: where a [`HedgeService`](super::HedgeService) sends each copy of a call.

use crate::attempt::Attempt;

/// What a [`HedgeService`](super::HedgeService) (and
/// [`HedgeLayer::call`](super::HedgeLayer::call)) sends the copies of a call to: the
/// service each copy is sent through, chosen by the copy's [`Attempt`].
///
/// Every `Clone` service is one: each copy is sent through a clone of the instance that
/// sent the original, as tower's own middleware clones its inner service. A
/// [`Replicas`](super::Replicas) set is the other kind: copy k of a call goes to the
/// replica k after the one its original went to, chosen by `attempt.index()` alone,
/// whatever order the copies' services are made or readied in.
///
/// A middleware between a [`HedgeService`](super::HedgeService) and a `Replicas` set
/// implements it by handing both calls on to the service it wraps, and is not `Clone`
/// itself (a `Replicas` set is not): a `Clone` type is a target already, one whose copies
/// go wherever its clones' calls go.
///
/// ```
/// use std::task::{Context, Poll};
/// use std::time::Duration;
/// use hedging::tower::{HedgeLayer, HedgeTarget, Replicas};
/// use hedging::{Attempt, Policy};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// /// Upper-cases each request on its way to the service it wraps.
/// struct Shout<S>(S);
///
/// impl<S: Service<String>> Service<String> for Shout<S> {
///     type Response = S::Response;
///     type Error = S::Error;
///     type Future = S::Future;
///     fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
///         self.0.poll_ready(cx)
///     }
///     fn call(&mut self, request: String) -> S::Future {
///         self.0.call(request.to_uppercase())
///     }
/// }
///
/// impl<S: HedgeTarget> HedgeTarget for Shout<S> {
///     fn handle(&self) -> Self {
///         Shout(self.0.handle())
///     }
///     fn for_copy(&self, attempt: Attempt) -> Self {
///         Shout(self.0.for_copy(attempt))
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let replica = |name: &'static str| {
///     service_fn(move |key: String| async move { Ok::<_, std::io::Error>(format!("{name}:{key}")) })
/// };
/// let policy = Policy::builder().delay(Duration::from_millis(20)).build();
/// let service = HedgeLayer::new(policy).layer(Shout(Replicas::new([replica("a"), replica("b")])));
/// assert_eq!(service.oneshot("k".to_string()).await.unwrap(), "a:K");
/// # });
/// ```
pub trait HedgeTarget: Sized {
    /// Another handle on the same target, as `Clone` makes one: what a clone of the
    /// [`HedgeService`](super::HedgeService) holds, and what a call leaves in place of
    /// the instance that sent its original.
    fn handle(&self) -> Self;

    /// The service copy `attempt.index()` of a call is sent through, from the instance
    /// that sent the call's original (attempt 0). It is driven to readiness, then called,
    /// inside the call's future.
    fn for_copy(&self, attempt: Attempt) -> Self;
}

impl<S: Clone> HedgeTarget for S {
    /// A clone.
    #[inline]
    fn handle(&self) -> Self {
        self.clone()
    }

    /// A clone of the service that sent the original.
    #[inline]
    fn for_copy(&self, _attempt: Attempt) -> Self {
        self.clone()
    }
}
