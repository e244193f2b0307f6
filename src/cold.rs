//! Places whose value is dropped out of line, so the drop of what holds them stays small:
//! [`Cold`], dropped in place, pinned or not, and [`ColdTaken`], moved out to be dropped.

use core::pin::Pin;

use pin_project::{pin_project, pinned_drop};

/// An `Option` whose drop is one check when it is empty (none at all when what it holds
/// needs no drop): what it holds is dropped out of line, in place.
///
/// Its value is pinned when it is ([`get`](Cold::get): a call's original future); a
/// value that is [`Unpin`] is reached by `&mut` too ([`get_mut`](Cold::get_mut): the
/// failure a race keeps).
#[pin_project(PinnedDrop)]
pub(crate) struct Cold<T> {
    #[pin]
    value: Option<T>,
}

#[pinned_drop]
impl<T> PinnedDrop for Cold<T> {
    #[inline]
    fn drop(self: Pin<&mut Self>) {
        if core::mem::needs_drop::<T>() && self.value.is_some() {
            empty(self.project().value);
        }
    }
}

#[cold]
#[inline(never)]
fn empty<T>(mut value: Pin<&mut Option<T>>) {
    value.set(None);
}

impl<T> Cold<T> {
    pub(crate) const fn new() -> Self {
        Cold { value: None }
    }

    pub(crate) fn is_some(&self) -> bool {
        self.value.is_some()
    }

    #[inline]
    pub(crate) fn get(self: Pin<&mut Self>) -> Pin<&mut Option<T>> {
        self.project().value
    }
}

impl<T: Unpin> Cold<T> {
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut Option<T> {
        &mut self.value
    }
}

/// An `Option` whose value is moved out as it drops and dropped out of line. Where the
/// value need not stay pinned this lets the compiler see the place empty after: the
/// hedges' slab in one of these keeps a call's drop 4 instructions shorter on its ready
/// path than in a [`Cold`] (`benches/instructions.sh`, `ready/hedging_1_copy`: 78
/// against 82), as the slab's drop then stays out of the race's.
pub(crate) struct ColdTaken<T>(pub(crate) Option<T>);

impl<T> Drop for ColdTaken<T> {
    #[inline]
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_cold(value);
        }
    }
}

#[cold]
#[inline(never)]
fn drop_cold<T>(value: T) {
    drop(value);
}
