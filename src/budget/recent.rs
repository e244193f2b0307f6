//! The calls a token bucket counted in the last second, for its savings cap.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::SAVINGS_WINDOW;

/// The slots the savings window is counted in.
const SLOTS: usize = 8;
/// One slot's length, in nanoseconds.
const SLOT: u64 = SAVINGS_WINDOW / SLOTS as u64;

/// The calls of the last second, in [`SLOTS`] slots: each holds the slot's number (its
/// start over [`SLOT`], wrapping at 2³², every 17 years) in its high half and the calls
/// counted in it, saturating, in its low half.
pub(super) struct Recent {
    slots: [AtomicU64; SLOTS],
}

impl Recent {
    pub(super) fn new() -> Self {
        Recent {
            slots: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The slot number of `now` (nanoseconds); the truncation to 32 bits is the wrap.
    fn slot_of(now: u64) -> u32 {
        (now / SLOT) as u32
    }

    /// Counts `calls` in the slot of `now`, starting the slot afresh if it last counted
    /// an older one.
    pub(super) fn add(&self, calls: u64, now: u64) {
        let slot = Self::slot_of(now);
        let calls = u32::try_from(calls).unwrap_or(u32::MAX);
        let cell = &self.slots[slot as usize % SLOTS];
        let _ = cell.fetch_update(Relaxed, Relaxed, |packed| {
            let (counted_in, counted) = ((packed >> 32) as u32, packed as u32);
            let counted = if counted_in == slot {
                counted.saturating_add(calls)
            } else {
                calls
            };
            Some(u64::from(slot) << 32 | u64::from(counted))
        });
    }

    /// The calls counted in the slots of the last second up to `now`.
    pub(super) fn sum(&self, now: u64) -> u64 {
        let slot = Self::slot_of(now);
        self.slots
            .iter()
            .map(|cell| cell.load(Relaxed))
            .filter(|packed| slot.wrapping_sub((packed >> 32) as u32) < SLOTS as u32)
            .map(|packed| u64::from(packed as u32))
            .sum()
    }
}
