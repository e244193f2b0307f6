//! [`Replicas`]: a set of services, so that each copy of a call goes somewhere else.

use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use core::task::{Context, Poll};

use alloc::sync::Arc;
use alloc::vec::Vec;

use tower_service::Service;

use super::{CopyFuture, HedgeTarget};
use crate::attempt::Attempt;

/// A set of services a call's copies are spread over: replicas of a backend (one tonic
/// `Channel` per host, one client per address) or several connections to one host.
///
/// Behind a [`HedgeService`](super::HedgeService), copy k of a call goes to replica
/// `(first + k) mod n`, chosen by the copy's attempt, where `first` moves on by one from
/// call to call, so a hedge never meets the replica (or the connection) its original is
/// stuck on while another is left:
///
/// ```
/// use std::time::Duration;
/// use hedging::tower::{HedgeLayer, Replicas};
/// use hedging::Policy;
/// use tower::{service_fn, Layer, ServiceExt};
/// # futures::executor::block_on(async {
/// let replica = |name: &'static str| {
///     service_fn(move |key: String| async move { Ok::<_, std::io::Error>(format!("{name}:{key}")) })
/// };
/// let policy = Policy::builder().delay(Duration::from_millis(20)).build();
/// let service = HedgeLayer::new(policy)
///     .layer(Replicas::new([replica("a"), replica("b"), replica("c")]));
///
/// assert_eq!(service.clone().oneshot("k".to_string()).await.unwrap(), "a:k");
/// assert_eq!(service.oneshot("k".to_string()).await.unwrap(), "b:k");
/// # });
/// ```
///
/// # Readiness
///
/// A `Replicas` is always ready: each call clones its replica's service and drives that
/// clone to readiness inside the response future, as [`HedgeService`](super::HedgeService)
/// does for each hedge. A replica that is not ready holds back only the copies sent to
/// it, and one whose readiness fails fails only that copy (whose error the race then
/// judges, as any copy's: by default another copy starts at once).
///
/// # Which replica a call goes to
///
/// A call sent through a handle of the set goes to the next replica of a round robin
/// counted over every handle: on its own, a `Replicas` is a round robin. The copies of a
/// hedged call are placed by their attempt: the set is a [`HedgeTarget`], and
/// [`HedgeTarget::for_copy`] gives copy k a handle on the replica k after the original's.
/// A `Replicas` of one service sends everything to that service.
///
/// A set is not `Clone`, so that no middleware clones it for a copy and sends that copy
/// wherever the clone's next call would go: a copy's replica comes from its attempt
/// only. Another handle on the same set is [`Replicas::handle`]; a
/// [`HedgeService`](super::HedgeService) over a set is `Clone`. Middleware between the
/// two implements [`HedgeTarget`] by handing it on; middleware each replica needs (a
/// timeout, a concurrency limit) goes inside the set, around each replica's service.
///
/// ```compile_fail,E0277
/// fn clone<T: Clone>(value: &T) -> T {
///     value.clone()
/// }
/// let set = hedging::tower::Replicas::new([tower::service_fn(|x: u8| async move { Ok::<_, ()>(x) })]);
/// let _ = clone(&set); // a set is not `Clone`
/// ```
pub struct Replicas<S> {
    set: Arc<Set<S>>,
    /// The replica this handle's next call goes to, when it sends a copy of a call.
    pinned: Option<usize>,
    /// The replica this handle's last call went to: where its call's copies count from.
    sent: usize,
}

/// What every handle of a [`Replicas`] shares.
struct Set<S> {
    services: Vec<S>,
    /// Calls started on the set, not copies of another: the first replica of the next.
    calls: AtomicUsize,
}

impl<S> Replicas<S> {
    /// The set of `services`, in the order copies go through them.
    ///
    /// # Panics
    ///
    /// If `services` is empty: a call needs somewhere to go.
    pub fn new(services: impl IntoIterator<Item = S>) -> Self {
        let services: Vec<S> = services.into_iter().collect();
        assert!(
            !services.is_empty(),
            "Replicas::new needs at least one service"
        );
        Replicas {
            set: Arc::new(Set {
                services,
                calls: AtomicUsize::new(0),
            }),
            pinned: None,
            sent: 0,
        }
    }

    /// Another handle on the same set, sharing its round robin: a call sent through it
    /// goes to the set's next replica.
    pub fn handle(&self) -> Self {
        self.handle_to(None)
    }

    /// A handle on the same set whose next call goes to replica `pinned`, if given.
    fn handle_to(&self, pinned: Option<usize>) -> Self {
        Replicas {
            set: Arc::clone(&self.set),
            pinned,
            sent: 0,
        }
    }

    /// The services, in the order copies go through them.
    pub fn services(&self) -> &[S] {
        &self.set.services
    }

    /// How many services the set has.
    pub fn len(&self) -> usize {
        self.set.services.len()
    }

    /// Always `false`: a set has at least one service.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl<S> HedgeTarget for Replicas<S> {
    /// [`Replicas::handle`].
    fn handle(&self) -> Self {
        Replicas::handle(self)
    }

    /// A handle whose next call goes to the replica `attempt.index()` after the one this
    /// handle's last call went to (`(first + k) mod n` for copy k of a call whose original
    /// went to `first`).
    fn for_copy(&self, attempt: Attempt) -> Self {
        self.handle_to(Some((self.sent + attempt.index()) % self.len()))
    }
}

impl<S: Service<Req> + Clone, Req> Service<Req> for Replicas<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = CopyFuture<S, Req>;

    /// Always ready; the replica a call goes to is readied inside its future.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> CopyFuture<S, Req> {
        let index = self
            .pinned
            .take()
            .unwrap_or_else(|| self.set.calls.fetch_add(1, Relaxed) % self.len());
        self.sent = index;
        CopyFuture::readying(self.set.services[index].clone(), request)
    }
}

impl<S: fmt::Debug> fmt::Debug for Replicas<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replicas")
            .field("services", &self.set.services)
            .field("pinned", &self.pinned)
            .field("sent", &self.sent)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use core::future::{Future, Ready};
    use core::time::Duration;

    use super::*;

    /// A replica that answers with its own number.
    #[derive(Clone)]
    struct Numbered(usize);

    impl Service<()> for Numbered {
        type Response = usize;
        type Error = ();
        type Future = Ready<Result<usize, ()>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, (): ()) -> Self::Future {
            core::future::ready(Ok(self.0))
        }
    }

    /// The replica `call`, a call sent through a handle of a set, went to.
    fn replica(call: CopyFuture<Numbered, ()>) -> usize {
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        match core::pin::pin!(call).poll(&mut cx) {
            Poll::Ready(Ok(replica)) => replica,
            other => panic!("a numbered replica answers at once: {other:?}"),
        }
    }

    /// Where `handle`'s next call goes.
    fn next_replica(mut handle: Replicas<Numbered>) -> usize {
        replica(handle.call(()))
    }

    #[test]
    fn a_copys_replica_is_chosen_by_its_attempt_in_any_order() {
        let set = Replicas::new((0..3).map(Numbered));
        let mut sent = set.handle();
        // Two calls before this one: its original goes to replica 2.
        assert_eq!(next_replica(set.handle()), 0);
        assert_eq!(next_replica(set.handle()), 1);
        assert_eq!(replica(sent.call(())), 2);

        // Asked for out of order, twice, copy k still goes to replica (2 + k) mod 3.
        for k in [3, 1, 0, 2, 1, 5] {
            let copy = sent.for_copy(Attempt::new(k, 6, Duration::ZERO));
            assert_eq!(next_replica(copy), (2 + k) % 3, "copy {k}");
        }
        // Its copies took nothing from the round robin: the set's next call goes on from it.
        assert_eq!(next_replica(set.handle()), 0);
    }
}
