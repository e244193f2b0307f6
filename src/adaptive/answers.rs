//! Calls answered at their first poll. Such a call never reads the clock, so it records
//! no latency (that is what keeps the ready path to a few instructions), and a window of
//! the recorded latencies alone holds only the calls that waited: on three Redis replicas
//! on loopback, a sixth of the GETs answered at their first poll, and the window took the
//! 8% of calls that met a paused replica for 10%, more than a 10% budget grants once the
//! calls that ask for copies stop funding it. The policy counts every call that returns a
//! win; per slot, the wins less the latencies recorded are the calls that answered at
//! once, and the window counts them as answering at once.

use crate::stats::Cells;
use crate::sync::{Arc, AtomicU64, Ordering::Relaxed};

use super::SLOTS;

/// The policy's count of wins where each slot of the ring began.
pub(super) struct Answers {
    cells: Arc<Cells>,
    began: [AtomicU64; SLOTS as usize],
}

impl Answers {
    /// Counts what `cells` count from now on.
    pub(super) fn new(cells: Arc<Cells>) -> Self {
        let wins = cells.wins();
        Answers {
            began: core::array::from_fn(|_| AtomicU64::new(wins)),
            cells,
        }
    }

    /// `slot` begins now (or began while no call ended: then it counts none).
    pub(super) fn begin(&self, slot: u64) {
        self.began[(slot % SLOTS) as usize].store(self.cells.wins(), Relaxed);
    }

    /// The calls won in `slot`, up to now if it is `current`, the slot being filled.
    pub(super) fn won_in(&self, slot: u64, current: u64) -> u64 {
        let began = |slot: u64| self.began[(slot % SLOTS) as usize].load(Relaxed);
        let ended = if slot >= current {
            self.cells.wins()
        } else {
            began(slot + 1)
        };
        ended.saturating_sub(began(slot))
    }
}
