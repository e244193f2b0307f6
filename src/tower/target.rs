//! [`HedgeTarget`]: where a [`HedgeService`](super::HedgeService) sends each copy of a call.

use crate::attempt::Attempt;

/// What a [`HedgeService`](super::HedgeService) (and [`HedgeLayer::call`](super::HedgeLayer::call))
/// sends the copies of a call to: the service each copy is sent through, chosen by the
/// copy's [`Attempt`].
///
/// Every `Clone` service is one: each copy is sent through a clone of the instance that
/// sent the original, as tower's own middleware clones its inner service. A [`Replicas`](super::Replicas) set is
/// the other kind: copy k of a call goes to the replica k after the one its original
/// went to, chosen by `attempt.index()` alone, whatever order the copies' services are
/// made or readied in.
///
/// A middleware that sits between a [`HedgeService`](super::HedgeService) and a
/// `Replicas` set implements it by handing both calls on to the service it wraps, and
/// is not `Clone` itself (a `Replicas` set is not): a `Clone` type already is a target, one
/// whose copies all go where its clones go.
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
