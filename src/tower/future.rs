//! [`ResponseFuture`]: the future of one call through a [`HedgeService`](super::HedgeService).

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use pin_project::pin_project;
use tower_service::Service;

use super::{CloneRequest, HedgeTarget, ServiceCopies};
use crate::attempt::Classify;
use crate::hedge::Hedge;
use crate::key::KeyHash;
use crate::policy::Policy;
use crate::timeout::NoTimeouts;
use crate::timer::Timer;

/// The response future of [`HedgeService`](super::HedgeService): a [`Hedge`] over copies
/// of one request.
#[pin_project]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct ResponseFuture<S, Req, T, R, K>
where
    S: Service<Req> + HedgeTarget,
    T: Timer,
    R: CloneRequest<Req>,
{
    #[pin]
    pub(super) hedge: Hedge<ServiceCopies<S, Req, R>, Policy<T>, K, NoTimeouts, KeyHash>,
}

impl<S, Req, T, R, K> ResponseFuture<S, Req, T, R, K>
where
    S: Service<Req> + HedgeTarget,
    T: Timer,
    R: CloneRequest<Req>,
{
    /// Names the call's key, as [`Hedge::key`] does: with
    /// [`adaptive_keys`](crate::PolicyBuilder::adaptive_keys), the call hedges at its key's
    /// own delay. For middleware that keys each request (by host, by method); the key is
    /// hashed here, on a policy with keys, since the future outlives it.
    pub fn key<Q: core::hash::Hash + ?Sized>(self, key: &Q) -> Self {
        let hash = self.hedge.policy().key_hash(key);
        self.key_hash(hash)
    }

    /// Names the call's key by its hash, as [`Policy::key_hash`] made it: for middleware
    /// that reads the key from a request it has since moved into the call.
    pub fn key_hash(self, key: KeyHash) -> Self {
        ResponseFuture {
            hedge: self.hedge.with_key(key),
        }
    }
}

impl<S, Req, T, R, K> Future for ResponseFuture<S, Req, T, R, K>
where
    S: Service<Req> + HedgeTarget,
    T: Timer,
    R: CloneRequest<Req>,
    K: Classify<S::Response, S::Error>,
{
    type Output = Result<S::Response, S::Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().hedge.poll(cx)
    }
}

impl<S, Req, T, R, K> futures_core::FusedFuture for ResponseFuture<S, Req, T, R, K>
where
    S: Service<Req> + HedgeTarget,
    T: Timer,
    R: CloneRequest<Req>,
    K: Classify<S::Response, S::Error>,
{
    fn is_terminated(&self) -> bool {
        self.hedge.is_terminated()
    }
}

impl<S, Req, T, R, K> fmt::Debug for ResponseFuture<S, Req, T, R, K>
where
    S: Service<Req> + HedgeTarget,
    T: Timer,
    R: CloneRequest<Req>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("hedge", &self.hedge)
            .finish()
    }
}
