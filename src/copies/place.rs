//! [`Place`]: a pinned `Option` filled in place.

use core::pin::Pin;

use pin_project::pin_project;

/// A pinned `Option` filled in place: [`Place::get_or_fill_with`] fills it with
/// pin-project's `project_replace`, which matches the old value inline and would drop it
/// only if there were one. Setting a pinned `Option` instead calls the `Option`'s whole
/// drop on the old value, which the compiler keeps out of line for a value that holds a
/// timer, even when the place is empty. (Where `Cold`, in `cold.rs`, is about how a
/// place is dropped, a `Place` is about how it is filled.)
///
/// A call's race lives in one: it is made in every call that waits. The timer's own slot
/// stays an `Option`: a timer comes from the timer's call, and filling a `Place` with it
/// moves it once more than setting the `Option` does.
#[pin_project(project = PlaceProj, project_replace = PlaceOwn)]
pub(crate) enum Place<T> {
    Empty,
    Full(#[pin] T),
}

impl<T> Place<T> {
    /// What the place holds, if anything.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        match self {
            Place::Full(value) => Some(value),
            Place::Empty => None,
        }
    }

    /// What the place holds, pinned, if anything.
    #[inline]
    pub(crate) fn get_pin_mut(self: Pin<&mut Self>) -> Option<Pin<&mut T>> {
        match self.project() {
            PlaceProj::Full(value) => Some(value),
            PlaceProj::Empty => None,
        }
    }

    /// What the place holds, pinned; filled first with `make()` if it is empty.
    #[inline]
    pub(crate) fn get_or_fill_with(
        mut self: Pin<&mut Self>,
        make: impl FnOnce() -> T,
    ) -> Pin<&mut T> {
        if self.get().is_none() {
            self.as_mut().project_replace(Place::Full(make()));
        }
        match self.project() {
            PlaceProj::Full(value) => value,
            PlaceProj::Empty => unreachable!("the place was just filled"),
        }
    }
}
