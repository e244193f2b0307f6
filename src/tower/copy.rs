//! What one copy of a [`HedgeService`](super::HedgeService) call is: the service it is
//! sent to, driven to readiness, then called.

use alloc::boxed::Box;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use pin_project::pin_project;
use tower_service::Service;

use super::{CloneRequest, HedgeTarget};
use crate::attempt::Attempt;
use crate::factory::Factory;

/// The [`Factory`] of a [`HedgeService`](super::HedgeService) call: the original was
/// sent by [`HedgeService::call`](super::HedgeService::call); each hedge gets the
/// service [`HedgeTarget::for_copy`] gives for its attempt (a clone of the one that sent
/// the original; for a [`Replicas`](super::Replicas) set, the replica after the
/// original's by the attempt's index) and a copy of the request.
pub struct ServiceCopies<S: Service<Req>, Req, R> {
    original: Option<S::Future>,
    /// The service that sent the original, which gives the service of each hedge, and
    /// the request the call was given, copied for each: `None` when the call may not
    /// hedge (decided by [`HedgeLayer::call_with`](super::HedgeLayer::call_with)). Kept
    /// until the call ends, after the last copy is made too: the race makes a copy before
    /// it asks the budget (and `min_win_rate`), and a copy refused when due is made again
    /// for the retry after a failure.
    hedges: Option<(S, Req)>,
    clone_request: R,
}

impl<S, Req, R> Factory for ServiceCopies<S, Req, R>
where
    S: Service<Req> + HedgeTarget,
    R: CloneRequest<Req>,
{
    type Ok = S::Response;
    type Error = S::Error;
    type Future = CopyFuture<S, Req>;

    fn make(&mut self, attempt: Attempt) -> Option<CopyFuture<S, Req>> {
        if let Some(original) = self.original.take() {
            return Some(CopyFuture::calling(original));
        }
        let (service, to_copy) = self.hedges.as_ref()?;
        let request = self.clone_request.clone_request(to_copy, attempt)?;
        let service = service.for_copy(attempt);
        Some(CopyFuture::readying(service, request))
    }
}

impl<S: Service<Req>, Req, R> ServiceCopies<S, Req, R> {
    /// The copies of a call whose original is `original`; `hedges` is the service that
    /// sent it and the request to copy, `None` when the call may not hedge.
    pub(super) fn new(original: S::Future, hedges: Option<(S, Req)>, clone_request: R) -> Self {
        ServiceCopies {
            original: Some(original),
            hedges,
            clone_request,
        }
    }
}

/// One copy of a [`HedgeService`](super::HedgeService) call, or one call of
/// [`Replicas`](super::Replicas): waits for its own clone of the service to be ready,
/// then calls it. A failed readiness is the copy's error.
#[pin_project]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub struct CopyFuture<S: Service<Req>, Req> {
    #[pin]
    state: CopyState<S, Req>,
}

#[pin_project(project = CopyStateProj)]
enum CopyState<S: Service<Req>, Req> {
    /// Boxed: only a hedge waits for readiness, so the original (sent at once, and the
    /// only copy of most calls) takes no more room in the call than its service's future.
    Readying(Box<Readying<S, Req>>),
    Calling {
        #[pin]
        future: S::Future,
    },
}

/// A copy's service, until it is ready for the copy's request.
struct Readying<S, Req> {
    service: S,
    request: Option<Req>,
}

impl<S: Service<Req>, Req> CopyFuture<S, Req> {
    pub(super) fn calling(future: S::Future) -> Self {
        CopyFuture {
            state: CopyState::Calling { future },
        }
    }

    pub(super) fn readying(service: S, request: Req) -> Self {
        CopyFuture {
            state: CopyState::Readying(Box::new(Readying {
                service,
                request: Some(request),
            })),
        }
    }
}

impl<S: Service<Req>, Req> Future for CopyFuture<S, Req> {
    type Output = Result<S::Response, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            let future = match state.as_mut().project() {
                CopyStateProj::Calling { future } => return future.poll(cx),
                CopyStateProj::Readying(readying) => {
                    if let Err(error) = core::task::ready!(readying.service.poll_ready(cx)) {
                        return Poll::Ready(Err(error));
                    }
                    let request = readying.request.take();
                    readying
                        .service
                        .call(request.expect("a copy sends its request once"))
                }
            };
            state.set(CopyState::Calling { future });
        }
    }
}

impl<S: Service<Req>, Req> fmt::Debug for CopyFuture<S, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            CopyState::Readying(_) => "readying",
            CopyState::Calling { .. } => "calling",
        };
        f.debug_struct("CopyFuture").field("state", &state).finish()
    }
}

impl<S: Service<Req>, Req, R> fmt::Debug for ServiceCopies<S, Req, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceCopies")
            .field("original_sent", &self.original.is_none())
            .finish_non_exhaustive()
    }
}
