//! The rows of the queueing tables: how each one hedges (a fixed delay, the README's
//! configurations, tied requests), and the policies that carry them out.

use std::time::Duration;

use hedging::timer::{ManualTimer, Timer};
use hedging::{Budget, Policy};

use super::cluster::SWEPT_DELAYS_US;
use super::{ms_text, BUDGET_RATIO};

/// The tie of the tied pair row: the pair's second copy goes out unless the first
/// started within this. The Tail at Scale waits twice a network message's delay, so an
/// idle first server can start and cancel the second; this model's messages take no
/// time, so the tie waits the services' resolution, one microsecond.
pub const TIE: Duration = Duration::from_micros(1);

/// How one row of the queueing table uses the cluster; at most two copies per call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scheme {
    /// One copy per call.
    Off,
    /// A hedge this long after the original.
    Fixed(Duration),
    /// A hedge this long after the original, with the recommended row's budget: the
    /// sweep the best fixed delay in hindsight is taken from.
    FixedBudget(Duration),
    /// The README's production configuration, `optimal_delay(0.99)`, with or without its
    /// budget (see [`recommended`]).
    Recommended { budget: bool },
    /// The README's production configuration with its budget and this `adaptive_window`
    /// instead of the default 10 s (see [`windows`](super::windows)).
    RecommendedWindow(Duration),
    /// The configuration the README recommended before `optimal_delay`, an adaptive p95
    /// delay with the budget (see [`adaptive_p95`]).
    AdaptiveP95,
    /// Tied requests: a second copy this long after the first unless the first started;
    /// the first copy to start service wins and the other leaves its queue.
    Tied(Duration),
    /// A hedge `first` after the original for the calls that start before `until`, `then`
    /// after it for the rest, with the recommended row's budget: what a delay costs that
    /// reaches the best fixed delay only at `until` (see [`start`](super::start)).
    HeldStart {
        first: Duration,
        until: Duration,
        then: Duration,
    },
    /// Tied requests under the recommended hedge: each of its copies is a tied pair,
    /// the pair's second copy this long after its first unless the first started, so the
    /// pair cuts queueing and the hedge a slow service.
    TiedPair(Duration),
}

impl Scheme {
    pub fn label(&self) -> String {
        match self {
            Scheme::Off => "no hedging".to_string(),
            Scheme::Fixed(delay) => format!("fixed {}", ms_text(*delay)),
            Scheme::FixedBudget(delay) => {
                format!(
                    "fixed {} + {:.0}% budget",
                    ms_text(*delay),
                    BUDGET_RATIO * 100.0
                )
            }
            Scheme::Recommended { budget: false } => "optimal p99".to_string(),
            Scheme::Recommended { budget: true } => {
                format!("optimal p99 + {:.0}% budget", BUDGET_RATIO * 100.0)
            }
            Scheme::RecommendedWindow(window) => format!(
                "optimal p99 + {:.0}% budget, {} s window",
                BUDGET_RATIO * 100.0,
                window.as_secs()
            ),
            Scheme::AdaptiveP95 => format!("adaptive p95 + {:.0}% budget", BUDGET_RATIO * 100.0),
            Scheme::HeldStart { first, until, then } => format!(
                "{} until {:.1} s, then {} + {:.0}% budget",
                ms_text(*first),
                until.as_secs_f64(),
                ms_text(*then),
                BUDGET_RATIO * 100.0
            ),
            Scheme::Tied(delay) => format!("tied, second at {}", ms_text(*delay)),
            Scheme::TiedPair(_) => "tied pairs, optimal p99 + budget".to_string(),
        }
    }

    /// The policy a call hedges with (for tied requests, the one that ties its copies).
    pub(super) fn policy(&self, timer: ManualTimer, min_win_rate: f64) -> Policy<ManualTimer> {
        let builder = Policy::builder()
            .timer(timer.clone())
            .min_win_rate(min_win_rate);
        match *self {
            Scheme::Off => builder.max_copies(1).build(),
            Scheme::Fixed(delay) | Scheme::Tied(delay) => {
                builder.max_copies(2).delay(delay).build()
            }
            Scheme::FixedBudget(delay) => builder
                .max_copies(2)
                .delay(delay)
                .budget(&recommended_budget())
                .build(),
            Scheme::Recommended { budget } => recommended(builder, budget),
            Scheme::RecommendedWindow(window) => recommended(builder.adaptive_window(window), true),
            Scheme::AdaptiveP95 => adaptive_p95(builder),
            Scheme::HeldStart { first, until, then } => builder
                .max_copies(2)
                .delay_fn(move |_| Some(if timer.now() < until { first } else { then }))
                .budget(&recommended_budget())
                .build(),
            // The pairs are hedged as the recommended row hedges its copies.
            Scheme::TiedPair(_) => recommended(builder, true),
        }
    }

    /// The policy that ties each copy of a [`TiedPair`](Scheme::TiedPair) call.
    pub(super) fn tie(&self, timer: ManualTimer) -> Option<Policy<ManualTimer>> {
        match *self {
            Scheme::TiedPair(delay) => Some(Scheme::Tied(delay).policy(timer, 0.0)),
            _ => None,
        }
    }

    /// Whether a call's copies are tied (commit at the first to start service).
    pub fn is_tied(&self) -> bool {
        matches!(self, Scheme::Tied(_) | Scheme::TiedPair(_))
    }
}

/// The configuration the README recommends for production, on `builder`'s timer:
/// `optimal_delay(0.99)` bounded to 0.1–200 ms (20 ms until 100 latencies are known) over
/// the default 10 s window, and with `budget`, at most 10% extra copies and 50 in flight.
/// The README adds `min_win_rate`, left out here: what it changes on these rows is
/// [`run_withheld`](super::heavy::run_withheld)'s table.
pub fn recommended<T: Timer>(builder: hedging::PolicyBuilder<T>, budget: bool) -> Policy<T> {
    let builder = optimal_bounded(builder, 0.99);
    if budget {
        builder.budget(&recommended_budget()).build()
    } else {
        builder.build()
    }
}

/// The configuration the README recommended before `optimal_delay`: an adaptive p95 delay
/// bounded to 2–200 ms (20 ms until 100 latencies are known) over the default 10 s window,
/// with the recommended budget.
pub fn adaptive_p95<T: Timer>(builder: hedging::PolicyBuilder<T>) -> Policy<T> {
    builder
        .adaptive_delay(0.95)
        .min_delay(Duration::from_millis(2))
        .max_delay(Duration::from_millis(200))
        .delay(FIRST_DELAY)
        .budget(&recommended_budget())
        .build()
}

/// `optimal_delay(quantile)` bounded to 0.1–200 ms, 20 ms until 100 latencies are known:
/// the optimal rows of every workload.
pub fn optimal_bounded<T: Timer>(
    builder: hedging::PolicyBuilder<T>,
    quantile: f64,
) -> hedging::PolicyBuilder<T> {
    builder
        .optimal_delay(quantile)
        .min_delay(Duration::from_micros(100))
        .max_delay(Duration::from_millis(200))
        .delay(FIRST_DELAY)
}

/// The delay the README's adaptive configurations hedge at until 100 latencies are known.
pub const FIRST_DELAY: Duration = Duration::from_millis(20);

/// The README's budget: 10% extra copies, at most 50 in flight.
pub fn recommended_budget() -> Budget {
    Budget::new(BUDGET_RATIO).max_outstanding(50)
}

/// The fixed delays of [`SWEPT_DELAYS_US`] with the recommended row's budget, in order:
/// the rows the best fixed delay in hindsight is taken from.
pub fn swept() -> [Scheme; SWEPT_DELAYS_US.len()] {
    SWEPT_DELAYS_US.map(|micros| Scheme::FixedBudget(Duration::from_micros(micros)))
}
