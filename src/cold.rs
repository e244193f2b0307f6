//! Places whose value is dropped out of line, so the drop of what holds them stays small:
//! [`Cold`], dropped in place (its value may be pinned), and [`ColdTaken`], moved out to
//! be dropped (its value is never pinned).
//!
//! They cannot be one type in safe code: a pinned value must be dropped where it
//! lies, and a value moved out tells the compiler the place is empty after, which an
//! in-place drop behind an out-of-line call does not; the holder then pays for the empty
//! place's own drop. One type for every place took the ready path past its budget of 75
//! instructions over a bare `.await`: the experiment and its `benches/instructions.sh`
//! counts are in docs/performance.md, under "Tried and not kept".

use core::pin::Pin;

use pin_project::{pin_project, pinned_drop};

/// An `Option` in a pinned place whose drop is one check when it is empty (none at all
/// when what it holds needs no drop): what it holds is dropped out of line, in place. It
/// holds a call's original future.
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

/// An `Option` whose value is moved out as it drops and dropped out of line: the hedges'
/// slab, the failure a race keeps.
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
