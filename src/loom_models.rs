//! What `tests/loom.rs` needs of the structures that are not public, and nothing more:
//! compiled only under `cfg(loom)`, never part of the crate's API.

use core::time::Duration;

use crate::keyed::{key_of, Keys};
use crate::Budget;

/// A policy's keyed table without trackers: its places and their keys.
#[derive(Debug)]
pub struct KeyTable(Keys);

impl KeyTable {
    /// A table of `places` places, whose keys go idle after `idle`.
    pub fn new(places: usize, idle: Duration) -> Self {
        KeyTable(Keys::new(places, None, idle))
    }

    /// A call's lookup of the key `word` at `now`, taking a place if need be: the place
    /// it found or took, `None` when both its places are held by keys in use.
    pub fn find_or_take(&self, word: u64, now: Duration) -> Option<usize> {
        let entry = self.0.find_or_take(key_of(word), now)?;
        Some(self.0.place_of(entry))
    }

    /// The key word held at `place` (0 while it is free).
    pub fn held_at(&self, place: usize) -> u64 {
        self.0.held_at(place)
    }
}

impl core::fmt::Debug for Keys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Keys")
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

/// A call's ask for a copy beyond its first at `now`: `Some(true)` when the copy holds an
/// outstanding slot it must give back with [`give_back`], `None` when refused.
pub fn ask(budget: &Budget, now: Duration) -> Option<bool> {
    budget.withdraw(|| now).ok()
}

/// Gives back `copies` outstanding slots, as a copy's end does.
pub fn give_back(budget: &Budget, copies: usize) {
    budget.release(copies);
}

/// Credits `ended` calls at `now`, `earning` of which asked for no copy, as a policy's ask
/// does before it withdraws.
pub fn credit(budget: &Budget, ended: u64, earning: u64, now: Duration) {
    budget.credit(ended, earning, now, Duration::ZERO);
}
