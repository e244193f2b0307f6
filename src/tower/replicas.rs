//! [`Replicas`]: a set of services, so that each copy of a call goes somewhere else.

use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use core::task::{Context, Poll};

use alloc::sync::Arc;
use alloc::vec::Vec;

use tower_service::Service;

use super::CopyFuture;

/// A set of services a call's copies are spread over: replicas of a backend (one tonic
/// `Channel` per host, one client per address) or several connections to one host.
///
/// Behind a [`HedgeService`](super::HedgeService), copy k of a call goes to replica
/// `(first + k) mod n`, where `first` moves on by one from call to call, so a hedge never
/// meets the replica (or the connection) its original is stuck on while another is
/// left:
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
/// Used on its own, a `Replicas` is a round robin: each call goes to the next replica,
/// counted over every clone. A clone taken from a `Replicas` after it sent a call (and
/// before it is readied again) continues that call instead: it sends to the replica after
/// the last one that call reached. This is how the copies of one hedged call reach
/// `first`, `first + 1`, ...; a retry middleware that clones its service after the first
/// try (as tower's `Retry` does) sends its retries to the next replicas in the same way.
/// A `Replicas` of one service sends everything to that service.
pub struct Replicas<S> {
    set: Arc<Set<S>>,
    /// The replica this handle's next call goes to, when it continues a call.
    pinned: Option<usize>,
    /// After this handle sent a call, until it is readied again: the replica its next
    /// clone is pinned to; [`NONE`] otherwise.
    next_copy: AtomicUsize,
}

/// What every clone of a [`Replicas`] shares.
struct Set<S> {
    services: Vec<S>,
    /// Calls started on the set, not continuing another: the first replica of the next.
    calls: AtomicUsize,
}

/// `next_copy` of a handle that has no call to continue.
const NONE: usize = usize::MAX;

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
            next_copy: AtomicUsize::new(NONE),
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

    /// The replica after `index`.
    fn after(&self, index: usize) -> usize {
        if index + 1 == self.len() {
            0
        } else {
            index + 1
        }
    }
}

impl<S: Service<Req> + Clone, Req> Service<Req> for Replicas<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = CopyFuture<S, Req>;

    /// Always ready; the replica a call goes to is readied inside its future.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Readied for a call of its own: it continues no earlier one.
        *self.next_copy.get_mut() = NONE;
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Req) -> CopyFuture<S, Req> {
        let index = self
            .pinned
            .take()
            .unwrap_or_else(|| self.set.calls.fetch_add(1, Relaxed) % self.len());
        *self.next_copy.get_mut() = self.after(index);
        CopyFuture::readying(self.set.services[index].clone(), request)
    }
}

impl<S> Clone for Replicas<S> {
    /// A handle of the same set; pinned to the next replica of the call this one sent,
    /// if it sent one since it was last readied.
    fn clone(&self) -> Self {
        let pinned = self
            .next_copy
            .fetch_update(Relaxed, Relaxed, |next| {
                (next != NONE).then(|| self.after(next))
            })
            .ok();
        Replicas {
            set: Arc::clone(&self.set),
            pinned,
            next_copy: AtomicUsize::new(NONE),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for Replicas<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replicas")
            .field("services", &self.set.services)
            .field("pinned", &self.pinned)
            .finish_non_exhaustive()
    }
}
