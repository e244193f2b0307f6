//! The calls a token bucket counted in the last second, for its savings cap, with tests of
//! its window.

use crate::sync::{AtomicU64, Ordering::Relaxed};

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
#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn a_slot_counts_until_the_window_rolls_past_it() {
        let recent = Recent::new();
        recent.add(5, 0);
        recent.add(7, SLOT - 1);
        assert_eq!(recent.sum(SLOT - 1), 12, "one slot, counted twice");
        recent.add(1, SECOND - 1);
        assert_eq!(recent.sum(SECOND - 1), 13, "the last slot of the window");
        assert_eq!(recent.sum(SECOND), 1, "the first slot rolled out");
        assert_eq!(recent.sum(2 * SECOND), 0);
    }

    #[test]
    fn a_slot_reused_a_window_later_starts_afresh() {
        let recent = Recent::new();
        recent.add(5, 0);
        recent.add(3, SECOND);
        assert_eq!(recent.sum(SECOND), 3);
    }

    #[test]
    fn counts_saturate() {
        let recent = Recent::new();
        recent.add(u64::MAX, 0);
        recent.add(u64::MAX, 0);
        assert_eq!(recent.sum(0), u64::from(u32::MAX));
    }

    #[test]
    fn the_slot_number_wraps_without_losing_the_window() {
        // The slot number is 32 bits: at the wrap, the window still spans it.
        let wrap = (1u64 << 32) * SLOT;
        let recent = Recent::new();
        recent.add(2, wrap - SLOT);
        recent.add(3, wrap);
        assert_eq!(recent.sum(wrap), 5);
        assert_eq!(recent.sum(wrap + SECOND - SLOT), 3);
    }

    #[test]
    fn huge_instants_do_not_overflow() {
        let recent = Recent::new();
        recent.add(4, u64::MAX);
        assert_eq!(recent.sum(u64::MAX), 4);
    }
}
