//! What the race deals in: how a copy left it ([`Finished`]) and how it ends ([`End`]).

#[cfg(feature = "std")]
use alloc::boxed::Box;

/// A panic caught under `catch_unwind`, resumed if the race has nothing else to return.
#[cfg(feature = "std")]
pub(crate) type Panic = Box<dyn core::any::Any + Send>;

/// How a copy left the race.
pub(crate) enum Finished<T, E> {
    /// Its result: a future's output, or a stream's first item.
    Item(Result<T, E>),
    /// A stream that ended before its first item: a failure with no error to keep.
    Ended,
    /// A panic caught under `catch_unwind`: a failure.
    #[cfg(feature = "std")]
    Panicked(Panic),
}

/// How a race ends.
pub(crate) enum End<T, E> {
    /// Copy `index` won with `result`.
    Won { index: usize, result: Result<T, E> },
    /// A fatal result, or the kept failure (or withdrawn result) once no copy can win.
    Failed(Result<T, E>),
    /// Every copy ended with neither an item nor an error (streams only).
    Empty,
    /// The lowest-index caught panic, when nothing else is left to return.
    #[cfg(feature = "std")]
    Panicked(Panic),
}
