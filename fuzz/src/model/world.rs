//! What the model keeps across calls (the policy's stats and budget) and what it expects
//! of one poll, with the adaptive delay a call sees.

use std::time::Duration;

use hedging::Stats;

use super::super::script::Output;
use super::BudgetModel;

pub(crate) fn nanos(time: Duration) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

/// What the adaptive delay is during the scripted call. The warm-ups' latencies are all
/// recorded in the first quarter window (slot 0); a delay read in quarter c comes from the
/// four quarters before it, and the queueing rule looks at the two newest of those.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdaptiveModel {
    /// A quarter of the window: latencies are kept per quarter.
    pub(crate) slot_nanos: u64,
    /// In quarters 1 and 2: slot 0 is one of the two newest, so the queueing rule applies.
    pub(crate) early: Duration,
    /// In quarters 3 and 4: slot 0 is still in the window, the plain quantile applies.
    pub(crate) late: Duration,
    /// From quarter 5 on, the window forgot slot 0: the fixed delay again.
    pub(crate) fallback: Duration,
    /// The bound the policy applies past `max_delay`.
    pub(crate) max_delay: Option<Duration>,
}

impl AdaptiveModel {
    /// The delay read at `at`.
    pub(super) fn delay_at(&self, at: Duration) -> Duration {
        match nanos(at) / self.slot_nanos {
            0..=2 => self.early,
            3 | 4 => self.late,
            _ => self.fallback,
        }
    }
}

/// What the policy's shared state should be: its stats and its budget.
#[derive(Debug, Default)]
pub(crate) struct World {
    pub(crate) stats: Stats,
    pub(crate) budget: Option<BudgetModel>,
    /// Calls ended so far, the warm-ups and the traffic included (what a bucket is
    /// credited from).
    pub(crate) calls_ended: u64,
    /// Calls that asked the budget for a copy beyond their first, counted at their first
    /// ask, ended or not: they earn nothing.
    pub(crate) calls_asked: u64,
}

impl World {
    /// A call's original won before its hedge was due (a warm-up, or traffic whose
    /// original is ready at once): it asked for nothing, and a throttling budget earns.
    pub(crate) fn won_unhedged(&mut self) {
        if let Some(budget) = &mut self.budget {
            budget.copy_won();
        }
        self.count(Outcome::Won { hedge: false });
    }

    /// The calls a bucket counts as earners when asked now: those ended, less those that
    /// asked before.
    pub(super) fn earners(&self) -> u64 {
        self.calls_ended.saturating_sub(self.calls_asked)
    }

    pub(super) fn count(&mut self, outcome: Outcome) {
        self.stats.calls += 1;
        self.calls_ended += 1;
        match outcome {
            Outcome::Won { hedge } => {
                self.stats.wins += 1;
                self.stats.hedge_wins += u64::from(hedge);
            }
            Outcome::Failed => self.stats.failures += 1,
            Outcome::Cancelled => self.stats.cancelled += 1,
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum Outcome {
    Won { hedge: bool },
    Failed,
    Cancelled,
}

/// What one poll should return.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expected {
    Pending,
    /// Won by copy `index`: a future's output; a stream commits and yields it.
    Won {
        index: usize,
        result: Output,
    },
    /// A fatal verdict, the kept failure, or a total timeout: a future's output; a
    /// stream yields it, then ends.
    Failed(Output),
    /// Every copy of a stream ended empty: it ends without an item.
    Empty,
    /// `catch_unwind` caught copy panics, nothing won or failed: the panic resumes and the
    /// call is over.
    Resumed,
    /// A panic unwinds out of `poll` (a copy's or the factory's with `catch_unwind` off,
    /// the `on_hedge` hook's, or a committed stream's).
    Unwound,
    /// A committed stream's later item.
    Item(Output),
    /// A stream's end after its last item.
    Ended,
}
