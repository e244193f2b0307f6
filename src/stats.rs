//! [`Stats`] and the per-thread counters it sums. Each thread that counts owns a
//! cache line of counters in every policy it uses, so a call's path does no atomic
//! read-modify-write and threads never contend for a line: up to 32 threads; the
//! threads past them share one overflow line, counted atomically.

use crate::sync::{Arc, AtomicU64, Ordering::Relaxed};

/// A snapshot of a policy's counters; see [`Policy::stats`](crate::Policy::stats).
///
/// A call is counted once, where it ends, together with its outcome: `calls == wins +
/// failures + cancelled` in every snapshot, across
/// [`Policy::reset_stats`](crate::Policy::reset_stats) too. Calls in flight are not counted
/// yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stats {
    /// Calls that ended: returned (`wins + failures`), or were dropped after their first
    /// poll (`cancelled`).
    pub calls: u64,
    /// Calls that returned a result whose verdict was [`Win`](crate::Verdict::Win).
    pub wins: u64,
    /// Calls that returned a failure: a [`Fatal`](crate::Verdict::Fatal) verdict, or every
    /// copy failed or withdrew.
    pub failures: u64,
    /// Calls dropped before they finished.
    pub cancelled: u64,
    /// Copies started beyond the first, whether by the clock or after a failure.
    pub hedges: u64,
    /// Calls won by a copy other than the first.
    pub hedge_wins: u64,
    /// Copies beyond the first that the policy's [`Budget`](crate::Budget) refused to start: a copy
    /// refused when due and again after a failure counts once.
    pub budget_denied: u64,
    /// Requests a layer passed through unhedged because they were outside its scope (a
    /// method it does not hedge, a request that opted out, a gRPC method no configured name
    /// matched), counted by [`Policy::count_out_of_scope`](crate::Policy::count_out_of_scope).
    /// They are not calls: `calls` counts what the policy was asked to hedge, so
    /// `hedges / calls` means the same behind every layer.
    pub out_of_scope: u64,
    /// Calls whose hedge was due but withheld, because the recent hedges of their key (or
    /// policy) did not win often enough: see
    /// [`min_win_rate`](crate::PolicyBuilder::min_win_rate). Counted once per call.
    pub withheld: u64,
}

/// One counter of [`Stats`], as an index into a [`Shard`]. There is no counter of calls:
/// a call is counted once, where it ends, by its outcome.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counter {
    Wins = 0,
    Failures,
    Cancelled,
    Hedges,
    HedgeWins,
    BudgetDenied,
    OutOfScope,
    Withheld,
}

const COUNTERS: usize = 8;

/// One set of counters, alone on its cache line so threads do not share lines.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Shard([AtomicU64; COUNTERS]);

impl Shard {
    fn load(&self) -> [u64; COUNTERS] {
        core::array::from_fn(|counter| self.0[counter].load(Relaxed))
    }
}

/// The counters behind [`Stats`]: one shard per thread, summed when read.
///
/// A thread that owns a shard is its only writer, so it adds with a plain load and store
/// instead of a read-modify-write, and threads never contend for a cache line. Threads
/// beyond the shard count, and every thread without `std`, add atomically to a shared
/// overflow shard.
pub(crate) struct Counters {
    cells: Arc<Cells>,
    /// What [`Policy::reset_stats`](crate::Policy::reset_stats) subtracts: writers never see a reset.
    baseline: Shard,
}

/// The shards calls are counted in, in one allocation that a policy's
/// [`Budget`](crate::Budget) shares, to read the calls that ended (see [`Cells::calls`]).
pub(crate) struct Cells {
    #[cfg(feature = "std")]
    shards: [Shard; thread_slot::SHARDS],
    overflow: Shard,
}

impl Cells {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Cells {
            #[cfg(feature = "std")]
            shards: core::array::from_fn(|_| Shard::default()),
            overflow: Shard::default(),
        })
    }

    /// Calls ended so far, ignoring resets.
    pub(crate) fn calls(&self) -> u64 {
        self.sum(&[Counter::Wins, Counter::Failures, Counter::Cancelled])
    }

    /// Calls that returned a win so far, ignoring resets.
    pub(crate) fn wins(&self) -> u64 {
        self.sum(&[Counter::Wins])
    }

    /// The sum of `counters` so far: one pass over the shards a thread ever claimed (the
    /// others never counted), so a process with few threads reads few.
    fn sum(&self, counters: &[Counter]) -> u64 {
        let sum = |shard: &Shard| {
            counters.iter().fold(0u64, |sum, &counter| {
                sum.wrapping_add(shard.0[counter as usize].load(Relaxed))
            })
        };
        let total = sum(&self.overflow);
        #[cfg(feature = "std")]
        let total = self.shards[..thread_slot::claimed()]
            .iter()
            .fold(total, |total, shard| total.wrapping_add(sum(shard)));
        total
    }
}

impl Counters {
    pub(crate) fn new() -> Self {
        Counters {
            cells: Cells::new(),
            baseline: Shard::default(),
        }
    }

    /// The cells counted into.
    pub(crate) fn cells(&self) -> &Arc<Cells> {
        &self.cells
    }

    /// Counters that count into `cells` from here on, their stats starting at zero.
    pub(crate) fn sharing(cells: Arc<Cells>) -> Self {
        let counters = Counters {
            cells,
            baseline: Shard::default(),
        };
        counters.reset();
        counters
    }

    /// Adds one to each of `counters`.
    #[inline]
    pub(crate) fn add(&self, counters: &[Counter]) {
        #[cfg(feature = "std")]
        if let Some(slot) = thread_slot::current() {
            let shard = &self.cells.shards[slot];
            for &counter in counters {
                let cell = &shard.0[counter as usize];
                cell.store(cell.load(Relaxed).wrapping_add(1), Relaxed);
            }
            return;
        }
        for &counter in counters {
            self.cells.overflow.0[counter as usize].fetch_add(1, Relaxed);
        }
    }

    fn totals(&self) -> [u64; COUNTERS] {
        let totals = self.cells.overflow.load();
        #[cfg(feature = "std")]
        let totals = self.cells.shards.iter().fold(totals, |mut totals, shard| {
            for (total, value) in totals.iter_mut().zip(shard.load()) {
                *total = total.wrapping_add(value);
            }
            totals
        });
        totals
    }

    pub(crate) fn snapshot(&self) -> Stats {
        let totals = self.totals();
        let baseline = self.baseline.load();
        let value = |counter: Counter| {
            let index = counter as usize;
            totals[index].saturating_sub(baseline[index])
        };
        let (wins, failures, cancelled) = (
            value(Counter::Wins),
            value(Counter::Failures),
            value(Counter::Cancelled),
        );
        Stats {
            calls: wins + failures + cancelled,
            wins,
            failures,
            cancelled,
            hedges: value(Counter::Hedges),
            hedge_wins: value(Counter::HedgeWins),
            budget_denied: value(Counter::BudgetDenied),
            out_of_scope: value(Counter::OutOfScope),
            withheld: value(Counter::Withheld),
        }
    }

    pub(crate) fn reset(&self) {
        for (cell, total) in self.baseline.0.iter().zip(self.totals()) {
            cell.store(total, Relaxed);
        }
    }
}

/// Gives each thread a shard index of its own while it lives.
#[cfg(feature = "std")]
pub(crate) mod thread_slot {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Mutex;
    use std::vec::Vec;

    /// Shards per policy: threads beyond this many at once share the overflow shard.
    /// (Under loom, where threads count in the overflow shard, one: a snapshot's every
    /// load is a branch of the model.)
    pub(super) const SHARDS: usize = if cfg!(loom) { 1 } else { 32 };

    const UNASSIGNED: usize = usize::MAX;
    const OVERFLOW: usize = usize::MAX - 1;

    /// Indices released by threads that exited, reused before new ones.
    static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    static NEXT: AtomicUsize = AtomicUsize::new(0);

    std::thread_local! {
        /// This thread's shard index, `UNASSIGNED` until it first counts. Without a
        /// destructor of its own, reading it is one load.
        static SLOT: Cell<usize> = const { Cell::new(UNASSIGNED) };
        /// Gives the index back when the thread exits; registered by the claim.
        static RELEASE: Release = const { Release };
    }

    struct Release;

    impl Drop for Release {
        fn drop(&mut self) {
            // Counts made later in the thread's teardown go to the overflow shard.
            let index = SLOT.replace(OVERFLOW);
            if index < SHARDS {
                // The mutex orders this thread's last stores before the next owner's loads.
                FREE.lock().unwrap_or_else(|e| e.into_inner()).push(index);
            }
        }
    }

    /// How many shard indices threads have claimed so far: no shard at or past it ever
    /// counted. Read without ordering, it may lag a claim, and a reader then misses
    /// counts it will see on a later read.
    pub(super) fn claimed() -> usize {
        NEXT.load(Relaxed).min(SHARDS)
    }

    /// This thread's shard, or `None` to use the overflow shard. A thread that owns a
    /// shard pays one comparison: `UNASSIGNED` is out of range too.
    #[inline]
    pub(crate) fn current() -> Option<usize> {
        // Under loom every model thread runs on one OS thread, so std's thread-locals would
        // give two of them one shard; they count in the overflow shard instead. The shard
        // index stays std's (a `static`, a `const` thread-local): loom's are neither.
        if cfg!(loom) {
            return None;
        }
        let index = SLOT.get();
        if index < SHARDS {
            Some(index)
        } else {
            first_or_overflow(index)
        }
    }

    /// [`current`] for a thread with no shard: claims one if it never tried.
    #[cold]
    #[inline(never)]
    fn first_or_overflow(mut index: usize) -> Option<usize> {
        if index == UNASSIGNED {
            index = claim();
            SLOT.set(index);
        }
        (index < SHARDS).then_some(index)
    }

    fn claim() -> usize {
        // A thread already tearing down its locals cannot give an index back.
        if RELEASE.try_with(|_| ()).is_err() {
            return OVERFLOW;
        }
        let reused = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
        reused.unwrap_or_else(|| {
            let index = NEXT.fetch_add(1, Relaxed);
            if index < SHARDS {
                index
            } else {
                NEXT.store(SHARDS, Relaxed);
                OVERFLOW
            }
        })
    }
}
