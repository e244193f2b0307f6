//! The policies a token bucket is shared by, and how their ended calls are credited: each
//! policy's own at its asks, every policy's when a copy finds the bucket short.

use core::time::Duration;
#[cfg(feature = "std")]
use std::sync::OnceLock;

use super::{nanos, Budget, Refused};
use crate::stats::Cells;
use crate::sync::Ordering::{Acquire, Relaxed, Release};
use crate::sync::{fence, Arc, AtomicBool, AtomicU64};

/// One policy's place among a budget's members: the cells its calls are counted in (its
/// stats' own), its calls that asked for a copy, and what was credited so far. A place
/// outlives its policy: the next policy given the budget takes it over, counting on in
/// its cells, so a budget holds as many places as policies alive at once, and calls a
/// policy ended before it was dropped are still credited.
pub(crate) struct Member {
    cells: Arc<Cells>,
    /// Whether a policy holds the place.
    held: AtomicBool,
    /// Calls that asked the budget for a copy beyond their first: they earn nothing.
    asked: AtomicU64,
    /// The ended calls credited so far, ignoring resets.
    credited_calls: AtomicU64,
    /// The most that ended calls less asking calls has been: what earned so far.
    credited_earners: AtomicU64,
    /// When the place was last credited, in nanoseconds of the crediting policy's clock.
    credited_at: AtomicU64,
    /// The next place: the list only grows, and is read without a lock.
    #[cfg(feature = "std")]
    next: OnceLock<Arc<Member>>,
}

/// The places of a budget's members, as a list that only grows.
#[cfg(feature = "std")]
#[derive(Default)]
pub(super) struct Members {
    first: OnceLock<Arc<Member>>,
}

impl Member {
    fn new(cells: Arc<Cells>) -> Self {
        Member {
            cells,
            held: AtomicBool::new(true),
            asked: AtomicU64::new(0),
            credited_calls: AtomicU64::new(0),
            credited_earners: AtomicU64::new(0),
            credited_at: AtomicU64::new(0),
            #[cfg(feature = "std")]
            next: OnceLock::new(),
        }
    }

    /// The cells the policy holding this place counts its calls in.
    pub(crate) fn cells(&self) -> &Arc<Cells> {
        &self.cells
    }

    /// The policy holding the place was dropped: the next one given the budget takes it.
    pub(crate) fn leave(&self) {
        self.held.store(false, Release);
    }

    /// Credits `budget` with this place's calls that ended since its last credit, at `at`;
    /// `first_ask`: one of its calls asks for the first time, and stops earning.
    #[inline]
    fn credit(&self, budget: &Budget, first_ask: bool, at: Duration) {
        // The calls first, then the asks: a call counted as ended asked, if it did, before
        // it was counted (a call that asked fences its count, `Race::conclude`), so its ask
        // is in `asked` too. A call that asks in between only holds `earners` back until
        // the next credit. Read the other way round, a call that asked and ended between
        // the two reads was an earner for good (the credit keeps the highest count seen):
        // eight threads sharing a budget overdrew it by up to 2.5%.
        let calls = self.cells.calls();
        fence(Acquire);
        let asked = if first_ask {
            self.asked.fetch_add(1, Relaxed)
        } else {
            self.asked.load(Relaxed)
        };
        let ended = calls.saturating_sub(self.credited_calls.fetch_max(calls, Relaxed));
        let earners = calls.saturating_sub(asked);
        // Where every call asks, the earners stay put: no update.
        let earning = if earners > self.credited_earners.load(Relaxed) {
            earners.saturating_sub(self.credited_earners.fetch_max(earners, Relaxed))
        } else {
            0
        };
        let last = Duration::from_nanos(self.credited_at.swap(nanos(at), Relaxed));
        budget.credit(ended, earning, at, at.saturating_sub(last));
    }
}

impl Budget {
    /// A place for a new policy given this budget: one its last holder left, or a new one
    /// counting in `cells`.
    pub(crate) fn join(&self, cells: Arc<Cells>) -> Arc<Member> {
        #[cfg(feature = "std")]
        {
            let mut place = &self.inner.members.first;
            let mut new = Arc::new(Member::new(cells));
            loop {
                match place.get() {
                    Some(member) => {
                        let free = !member.held.load(Relaxed)
                            && member
                                .held
                                .compare_exchange(
                                    false,
                                    true,
                                    crate::sync::Ordering::AcqRel,
                                    Relaxed,
                                )
                                .is_ok();
                        if free {
                            return Arc::clone(member);
                        }
                        place = &member.next;
                    }
                    None => match place.set(new) {
                        Ok(()) => return Arc::clone(place.get().expect("just set")),
                        // Another policy joined at the same time: on along the list.
                        Err(back) => new = back,
                    },
                }
            }
        }
        #[cfg(not(feature = "std"))]
        Arc::new(Member::new(cells))
    }

    /// Asks for one copy beyond the first for a call of the policy at `member`, after
    /// crediting that policy's ended calls; if the bucket is short, every member's calls
    /// are credited and the copy asks again. `Ok(true)` when the copy holds a
    /// `max_outstanding` slot.
    pub(crate) fn admit(
        &self,
        member: &Member,
        first_ask: bool,
        mut now: impl FnMut() -> Duration,
    ) -> Result<bool, Refused> {
        if !self.counts_calls() {
            return self.withdraw(now);
        }
        member.credit(self, first_ask, now());
        match self.withdraw(&mut now) {
            Err(Refused) if self.credit_members(now()) => self.withdraw(now),
            admitted => admitted,
        }
    }

    /// Credits every member's calls that ended since its last credit, at `at`; `false`
    /// when the budget has no member but the asking one (or, without `std`, keeps no list).
    #[cold]
    fn credit_members(&self, at: Duration) -> bool {
        #[cfg(feature = "std")]
        {
            let first = &self.inner.members.first;
            if first.get().is_none_or(|only| only.next.get().is_none()) {
                // The asking policy alone: credited already.
                return false;
            }
            let mut place = first;
            while let Some(member) = place.get() {
                member.credit(self, false, at);
                place = &member.next;
            }
            true
        }
        #[cfg(not(feature = "std"))]
        {
            let _ = at;
            false
        }
    }
}
