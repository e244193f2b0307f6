//! The failure a race keeps in case no copy wins, in a place whose drop is out of line.

use super::outcome::End;
#[cfg(feature = "std")]
use super::outcome::Panic;
use crate::cold::ColdTaken;

/// The finished copy a race keeps in case no copy wins: the lowest-index failure, else
/// the lowest-index caught panic, else the lowest-index withdrawn result.
pub(super) struct Kept<T, E>(ColdTaken<Held<T, E>>);

/// A finished copy kept.
struct Held<T, E> {
    index: u8,
    lost: Lost<T, E>,
}

/// How a kept copy finished without winning.
pub(super) enum Lost<T, E> {
    Withdrawn(Result<T, E>),
    #[cfg(feature = "std")]
    Panicked(Panic),
    Failed(Result<T, E>),
}

impl<T, E> Lost<T, E> {
    /// Which end the race returns first when none wins: a failure, then a caught panic,
    /// then a withdrawn result.
    fn rank(&self) -> u8 {
        match self {
            Lost::Withdrawn(_) => 0,
            #[cfg(feature = "std")]
            Lost::Panicked(_) => 1,
            Lost::Failed(_) => 2,
        }
    }
}

impl<T, E> Kept<T, E> {
    pub(super) const fn new() -> Self {
        Kept(ColdTaken(None))
    }

    /// Keeps a finished copy if it beats the one kept: by [`Lost::rank`], and then the
    /// lower index wins.
    pub(super) fn keep(&mut self, index: usize, lost: Lost<T, E>) {
        let better = match &self.0 .0 {
            None => true,
            Some(kept) => {
                (lost.rank(), core::cmp::Reverse(index))
                    > (kept.lost.rank(), core::cmp::Reverse(kept.index.into()))
            }
        };
        if better {
            self.0 .0 = Some(Held {
                index: index as u8,
                lost,
            });
        }
    }

    /// How the race ends when every copy finished and none won.
    pub(super) fn give_up(&mut self) -> End<T, E> {
        match self.0 .0.take().map(|kept| kept.lost) {
            Some(Lost::Failed(result) | Lost::Withdrawn(result)) => End::Failed(result),
            #[cfg(feature = "std")]
            Some(Lost::Panicked(panic)) => End::Panicked(panic),
            None => End::Empty,
        }
    }

    /// How the race ends when its total timeout passed: the kept failure, if a real one,
    /// else `elapsed`, the call's `Elapsed` error.
    pub(super) fn time_out(&mut self, elapsed: impl FnOnce() -> E) -> End<T, E> {
        match self.0 .0.take().map(|kept| kept.lost) {
            Some(Lost::Failed(result)) => End::Failed(result),
            _ => End::Failed(Err(elapsed())),
        }
    }

    /// Drops what is kept: it goes with the other losers.
    pub(super) fn clear(&mut self) {
        self.0 .0 = None;
    }
}
