//! The model a hedged call's latency is predicted with: what
//! [`PolicyBuilder::optimal_delay`](crate::PolicyBuilder::optimal_delay) chooses its delay
//! with, and what `hedging-advisor` predicts a recorded service's tail with.
//!
//! A copy's latency is a draw from the distribution of recent latencies, independent of
//! every other copy's. Copy k starts `k × delay` after the original, if the call has not
//! ended and the budget lets it; the call ends when its first copy ends. So the chance
//! that a call is still running at `t` is the product, over the copies started before
//! `t`, of the chance that each is still running:
//!
//! ```text
//! P(call > t) = S(t) × Π_{k ≥ 1, k·d < t} (1 − g + g·S(t − k·d))
//! extra       = Σ_{k ≥ 1} g × P(call > k·d)
//! ```
//!
//! where `S` is the [`Survival`] of one copy and `g` the share of the copies asked for
//! that the budget grants ([`Plan::granted`]).
//!
//! The distribution is a list of latency classes, each with its upper edge: a latency in
//! a class counts as its upper edge, so predictions err long. Latencies only known to be
//! longer than some age (an original dropped because a hedge won: its latency is
//! *censored*) enter through the Kaplan–Meier estimate ([`kaplan_meier`]): a censored
//! latency counts among those still running up to its age and is never counted as ending,
//! so hedging, which drops the slow originals, does not talk the estimate down.
//!
//! Everything here is plain arithmetic on slices: nothing allocates, so the policy runs it
//! when its window turns, on the stack.
//!
//! ```
//! use std::time::Duration;
//! use hedging::model::{kaplan_meier, Goal, Survival};
//!
//! // 90 calls answered within 1 ms, 10 took 100 ms: a paused replica.
//! let edges = [1_000_000, 100_000_000];
//! let mut above = [0.0; 2];
//! kaplan_meier(&[90, 10], &[0, 0], &mut above);
//! let survival = Survival::new(&edges, &above);
//! let unhedged = survival.quantile(0.99);
//! assert_eq!(unhedged, Duration::from_millis(100));
//! let choice = survival.choose(&Goal::new(0.99).budget(0.15)).expect("latencies");
//! assert_eq!(choice.delay, Duration::from_millis(1));
//! assert_eq!(choice.latency, Duration::from_millis(2));
//! assert!((choice.extra - 0.10).abs() < 1e-9);
//! ```

use core::time::Duration;

/// The share of extra copies a policy without a budget may plan for.
pub const NO_BUDGET_EXTRA: f64 = 0.05;
/// How far above the best predicted tail a delay may be and still be chosen for fewer
/// extra copies.
pub const TOLERANCE: f64 = 0.05;

/// The survival of one copy: the chance that its latency exceeds `t`, a step function of
/// latency classes. Borrowed: the policy builds one on the stack from its histogram, the
/// advisor from a file.
#[derive(Clone, Copy, Debug)]
pub struct Survival<'a> {
    /// Upper edges of the classes in nanoseconds, ascending.
    edges: &'a [u64],
    /// `above[i]`: the chance a latency exceeds `edges[i]`.
    above: &'a [f64],
}

/// How the copies of a call are started: what a prediction is made for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Copy k starts `k × delay` after the original.
    pub delay: Duration,
    /// The most copies a call starts, the original included (`max_copies`).
    pub copies: usize,
    /// The share of the copies asked for that the budget grants: 1 without refusals.
    pub granted: f64,
}

impl Plan {
    /// Up to `copies` copies, `delay` apart, every one granted.
    pub const fn new(delay: Duration, copies: usize) -> Plan {
        Plan {
            delay,
            copies,
            granted: 1.0,
        }
    }
}

/// What the model predicts for one delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The delay predicted for.
    pub delay: Duration,
    /// The call latency at the goal's quantile.
    pub latency: Duration,
    /// Extra copies per call (0.05: one call in twenty starts a copy more).
    pub extra: f64,
    /// Copies asked for per call, granted or refused: `extra` where the budget grants
    /// them all.
    pub asks: f64,
    /// The share of the copies asked for that the budget was predicted to grant.
    pub granted: f64,
    /// The share of calls predicted never to end: those censored past every ended
    /// latency, which no copy caught ([`kaplan_meier`]).
    pub unended: f64,
}

/// What a delay is chosen for: the quantile to minimise, the copies a call may start, the
/// extra copies the budget allows, and the bounds on the delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goal {
    /// The quantile of call latency to minimise (`0.99`).
    pub quantile: f64,
    /// The most copies a call starts, the original included.
    pub copies: usize,
    /// The extra copies per call a budget grants, or `None` without a budget: then the
    /// delays considered are those predicted to start at most [`NO_BUDGET_EXTRA`].
    pub budget: Option<f64>,
    /// The shortest delay considered.
    pub min_delay: Duration,
    /// The longest delay considered.
    pub max_delay: Duration,
}

impl Goal {
    /// The goal of `quantile` with two copies, no budget, and any delay.
    pub const fn new(quantile: f64) -> Goal {
        Goal {
            quantile,
            copies: 2,
            budget: None,
            min_delay: Duration::ZERO,
            max_delay: Duration::MAX,
        }
    }

    /// With up to `copies` copies per call, the original included.
    pub const fn copies(self, copies: usize) -> Goal {
        Goal { copies, ..self }
    }

    /// With a budget that grants `extra` copies per call (its ratio).
    pub const fn budget(self, extra: f64) -> Goal {
        Goal {
            budget: Some(extra),
            ..self
        }
    }

    /// With the delay held to `min_delay..=max_delay`.
    pub const fn bounds(self, min_delay: Duration, max_delay: Duration) -> Goal {
        Goal {
            min_delay,
            max_delay,
            ..self
        }
    }
}

/// Fills `above` with the Kaplan–Meier estimate of survival from latency classes:
/// `ended[i]` latencies ended in class `i`, and `censored[i]` were only known to run past
/// an age in it (counted as running through the class, so the estimate errs long). The
/// three slices are read up to the shortest one's length.
///
/// Censored latencies slower than every ended one leave a share of calls that never
/// ends in the estimate: the model takes them as running on (a hedge's win says nothing
/// of how long the original would have run), not as ending at their age.
pub fn kaplan_meier(ended: &[u64], censored: &[u64], above: &mut [f64]) {
    let len = ended.len().min(censored.len()).min(above.len());
    let (ended, censored, above) = (&ended[..len], &censored[..len], &mut above[..len]);
    let mut at_risk: u64 = ended
        .iter()
        .zip(censored)
        .map(|(&ended, &censored)| ended.saturating_add(censored))
        .fold(0, u64::saturating_add);
    let mut survival = 1.0;
    for ((above, &ended), &censored) in above.iter_mut().zip(ended).zip(censored) {
        if ended > 0 {
            survival *= 1.0 - ended as f64 / at_risk as f64;
        }
        at_risk = at_risk.saturating_sub(ended.saturating_add(censored));
        *above = survival;
    }
}

impl<'a> Survival<'a> {
    /// The survival whose class `i` ends at `edges[i]` nanoseconds (ascending) and whose
    /// latencies exceed that edge with the chance `above[i]` (non-increasing, as
    /// [`kaplan_meier`] fills it). Read up to the shorter slice's length.
    pub fn new(edges: &'a [u64], above: &'a [f64]) -> Self {
        let len = edges.len().min(above.len());
        Survival {
            edges: &edges[..len],
            above: &above[..len],
        }
    }

    /// Whether no class holds a latency: every copy would run past every edge.
    pub fn is_empty(&self) -> bool {
        self.above.iter().all(|&above| above >= 1.0)
    }

    /// The chance a copy's latency exceeds `nanos`.
    #[inline]
    pub fn above(&self, nanos: u64) -> f64 {
        // The classes whose edge is at or below `nanos`: the last of them decides.
        match self.edges.partition_point(|&edge| edge <= nanos) {
            0 => 1.0,
            at => self.above[at - 1],
        }
    }

    /// The unhedged `quantile` of a copy's latency: the first class edge the quantile is
    /// reached at.
    pub fn quantile(&self, quantile: f64) -> Duration {
        self.call_quantile(Plan::new(Duration::ZERO, 1), quantile)
    }

    /// The chance that a call hedged as `plan` says is still running at `nanos`.
    pub fn call_above(&self, plan: Plan, nanos: u64) -> f64 {
        let delay = nanos_of(plan.delay);
        let mut above = self.above(nanos);
        for copy in 1..plan.copies as u64 {
            let Some(start) = delay.checked_mul(copy).filter(|&start| start < nanos) else {
                break;
            };
            above *= 1.0 - plan.granted + plan.granted * self.above(nanos - start);
        }
        above
    }

    /// The `quantile` of call latency hedged as `plan` says: the shortest time by which at
    /// least that share of calls ended.
    pub fn call_quantile(&self, plan: Plan, quantile: f64) -> Duration {
        // NaN asks for the slowest. A hair of slack, so a product such as 0.1 × 0.1 meets
        // a tail of 0.01.
        let quantile = if quantile.is_nan() {
            1.0
        } else {
            quantile.clamp(0.0, 1.0)
        };
        let tail = 1.0 - quantile + 1e-12;
        // Past the last class and the last copy's start, nothing changes any more.
        let delay = nanos_of(plan.delay);
        let last_start = delay.saturating_mul(plan.copies.saturating_sub(1) as u64);
        let (mut low, mut high) = (0, self.last_edge().saturating_add(last_start));
        if self.call_above(plan, low) <= tail {
            return Duration::ZERO;
        }
        if self.call_above(plan, high) > tail {
            // Calls censored past every ended one run on: the quantile is never reached.
            return Duration::MAX;
        }
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.call_above(plan, middle) <= tail {
                high = middle;
            } else {
                low = middle;
            }
        }
        Duration::from_nanos(high)
    }

    /// The copies beyond the first a call hedged as `plan` says asks for, on average.
    pub fn asks(&self, plan: Plan) -> f64 {
        let delay = nanos_of(plan.delay);
        (1..plan.copies as u64)
            .map_while(|copy| delay.checked_mul(copy))
            .map(|start| self.call_above(plan, start))
            .sum()
    }

    /// The prediction for `plan` at `quantile`: the call latency there and the extra
    /// copies.
    pub fn predict(&self, plan: Plan, quantile: f64) -> Prediction {
        let asks = self.asks(plan);
        Prediction {
            delay: plan.delay,
            latency: self.call_quantile(plan, quantile),
            extra: plan.granted * asks,
            asks,
            granted: plan.granted,
            unended: self.call_above(plan, u64::MAX),
        }
    }

    /// The prediction for `delay` under `goal`: with a budget, the copies asked for beyond
    /// what it grants are refused, evenly over the calls. A token bucket is funded by the
    /// calls that ask for no copy: it grants its ratio of those per call.
    pub fn predict_for(&self, goal: &Goal, delay: Duration) -> Prediction {
        let mut plan = Plan::new(delay, goal.copies.max(1));
        if let Some(ratio) = goal.budget {
            // A call that asks for a copy earns the budget nothing, so the copies it grants
            // per call are its ratio of the calls that never ask. Refusals leave more calls
            // running, which ask again: a few rounds settle it.
            let supply = ratio.max(0.0) * (1.0 - self.call_above(plan, nanos_of(delay)));
            for _ in 0..4 {
                let asks = self.asks(plan);
                let granted = if asks > supply { supply / asks } else { 1.0 };
                if (granted - plan.granted).abs() < 1e-6 {
                    break;
                }
                plan.granted = granted;
            }
        }
        self.predict(plan, goal.quantile)
    }

    /// The delay the latencies predict minimises `goal.quantile` of call latency, among
    /// the delays within its bounds whose extra copies the budget allows (with a budget,
    /// predicted with its refusals; without one, at most [`NO_BUDGET_EXTRA`]); among the
    /// delays within [`TOLERANCE`] of the best predicted tail, the one that asks for the
    /// fewest copies (granted or refused: a delay whose copies the budget would refuse is
    /// not cheap, its few granted copies go to whichever calls ask first, not to the slow
    /// ones). When no delay keeps within [`NO_BUDGET_EXTRA`], the one with the fewest
    /// extra copies (the longest of them). Where calls censored past every ended
    /// one keep the quantile out of any delay's reach, the delays are ranked at the
    /// highest quantile they reach. `None` when no class holds a latency.
    ///
    /// The delays tried are the edges of the classes some latency ended in (where the
    /// survival steps down) within the bounds, and the bounds; `max_delay` only where some
    /// latency ended past it, or some call is censored past every ended one: where every
    /// latency ended sooner, the slowest of them already stands for hedging nothing.
    pub fn choose(&self, goal: &Goal) -> Option<Prediction> {
        if self.is_empty() {
            return None;
        }
        let chosen = self.choose_at(goal)?;
        if chosen.latency < Duration::MAX {
            return Some(chosen);
        }
        // Calls censored past every ended one (their copies won, their originals were
        // dropped) keep the quantile out of reach of any delay: rank the delays at the
        // highest quantile some delay reaches instead, with room for the model's error.
        let reachable = 1.0 - chosen.unended * 1.5;
        let lowered = Goal {
            quantile: reachable.clamp(0.0, goal.quantile),
            ..*goal
        };
        let mut chosen = self.choose_at(&lowered)?;
        chosen.latency = self.call_quantile(
            Plan {
                granted: chosen.granted,
                ..Plan::new(chosen.delay, goal.copies.max(1))
            },
            goal.quantile,
        );
        Some(chosen)
    }

    /// [`Survival::choose`] at `goal.quantile` as given.
    fn choose_at(&self, goal: &Goal) -> Option<Prediction> {
        // The tail a prediction is ranked by: its latency at the quantile, then, where the
        // quantile is never reached, the share of calls that never end.
        let tail = |prediction: &Prediction| (prediction.latency, prediction.unended);
        let (min_delay, max_delay) = (goal.min_delay, goal.max_delay.max(goal.min_delay));
        // The delays the latencies tell apart: the edges of the classes some latency
        // ended in (where the survival steps down), within the bounds.
        let steps = self
            .edges
            .iter()
            .zip(self.above.iter().scan(1.0, |before, &above| {
                let step = above < *before;
                *before = above;
                Some(step)
            }))
            .filter(|&(_, step)| step)
            .map(|(&edge, _)| edge);
        // Past the slowest latency that ended, a delay hedges only calls censored past it
        // (still running, as far as is known): where there are none, every delay past it
        // hedges nothing, and the slowest latency stands for them all.
        let slowest = steps.clone().last().unwrap_or(0);
        let runs_on = self.above.last().is_some_and(|&above| above > 0.0);
        let longest = if runs_on { self.last_edge() } else { slowest };
        let candidates = core::iter::once(min_delay)
            .chain(
                steps
                    .map(Duration::from_nanos)
                    .filter(|&edge| edge > min_delay && edge < max_delay),
            )
            .chain((max_delay > min_delay && nanos_of(max_delay) <= longest).then_some(max_delay));
        let allowed = |prediction: &Prediction| match goal.budget {
            Some(_) => true,
            None => prediction.extra <= NO_BUDGET_EXTRA + 1e-9,
        };
        let mut best: Option<Prediction> = None;
        let mut fewest: Option<Prediction> = None;
        // Two passes over the candidates: the best tail, then the cheapest near it. The
        // predictions are not kept (no allocation): the second pass makes them again.
        for delay in candidates.clone() {
            let prediction = self.predict_for(goal, delay);
            if fewest.is_none_or(|fewest| prediction.extra <= fewest.extra) {
                fewest = Some(prediction);
            }
            if allowed(&prediction) && best.is_none_or(|best| tail(&prediction) < tail(&best)) {
                best = Some(prediction);
            }
        }
        let Some(best) = best else { return fewest };
        let (latency, unended) = tail(&best);
        let near = |prediction: &Prediction| match tail(prediction) {
            // A quantile never reached is near only as many calls that never end.
            (Duration::MAX, more) => {
                latency == Duration::MAX && more <= unended * (1.0 + TOLERANCE)
            }
            (at, _) => at.as_secs_f64() <= latency.as_secs_f64() * (1.0 + TOLERANCE),
        };
        let mut chosen = best;
        for delay in candidates {
            let prediction = self.predict_for(goal, delay);
            if allowed(&prediction) && near(&prediction) && prediction.asks <= chosen.asks {
                chosen = prediction;
            }
        }
        Some(chosen)
    }

    /// The last class's edge, in nanoseconds: 0 with no class.
    fn last_edge(&self) -> u64 {
        self.edges.last().copied().unwrap_or(0)
    }
}

/// `time` in nanoseconds, saturating.
fn nanos_of(time: Duration) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
