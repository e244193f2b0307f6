//! How copies start and leave the race in the model: the original, each hedge with its
//! budget ask and its hook, and the verdict on each result.

use std::time::Duration;

use hedging::Verdict;

use super::super::script::{End, Factory, Output};
use super::{keep, Due, Expected, Finished, Model, Reason, Running, World};

impl Model<'_> {
    /// The first poll: the original is made and polled; a win at once returns.
    pub(super) fn start_original(&mut self, now: Duration, world: &mut World) -> Option<Expected> {
        self.launched = 1;
        self.attempts.push((0, Duration::ZERO, self.max_copies));
        let step = &self.call.steps[0];
        if step.end == End::FactoryPanic {
            if !self.script.catch_unwind {
                return Some(Expected::Unwound);
            }
            let copy = self.copy_at(0, now, false);
            return self.settle(copy, Finished::Panicked, now, world);
        }
        self.made.push((0, now));
        let copy = self.copy_at(0, now, false);
        if copy.finish != Some(now) {
            self.in_flight.push(copy);
            return None;
        }
        let finished = self.finished(0);
        if let Finished::Item(result) = &finished {
            // The fast path: an original that wins at once.
            if self.call.judge.verdict(result) == Verdict::Win {
                if self.call.judge.shows(result) {
                    self.classified.push(*result);
                }
                let result = *result;
                if let Some(budget) = &mut world.budget {
                    budget.copy_won();
                }
                return Some(self.end(Expected::Won { index: 0, result }, now, world));
            }
        }
        self.settle(copy, finished, now, world)
    }

    /// Copy `index`, starting at `now`.
    fn copy_at(&self, index: usize, now: Duration, holds_slot: bool) -> Running {
        let step = &self.call.steps[index];
        Running {
            index,
            finish: (step.end != End::Never).then(|| now.saturating_add(step.latency)),
            started: now,
            holds_slot,
        }
    }

    pub(super) fn finished(&self, index: usize) -> Finished {
        let end = self.call.steps[index].end;
        match end.result() {
            Some(result) => Finished::Item(result),
            None if end == End::Empty => Finished::Ended,
            None => Finished::Panicked,
        }
    }

    /// A copy left the race: `Some` when that ends the call (or the poll unwinds).
    pub(super) fn settle(
        &mut self,
        copy: Running,
        finished: Finished,
        now: Duration,
        world: &mut World,
    ) -> Option<Expected> {
        if matches!(finished, Finished::Panicked) && !self.script.catch_unwind {
            // The copy stays where it is, slot and all, until the call is dropped.
            self.in_flight.push(copy);
            self.in_flight.sort_by_key(|copy| copy.index);
            return Some(Expected::Unwound);
        }
        if copy.holds_slot {
            world.budget.as_mut().expect("a slot").release();
        }
        let index = copy.index;
        let result = match finished {
            Finished::Ended => {
                self.failed(index, None, true, world);
                return None;
            }
            Finished::Panicked => {
                self.caught_panic = true;
                self.failed(index, None, true, world);
                return None;
            }
            Finished::Item(result) => result,
        };
        if self.call.judge.shows(&result) {
            self.classified.push(result);
        }
        match self.call.judge.verdict(&result) {
            Verdict::Win => {
                if let Some(budget) = &mut world.budget {
                    budget.copy_won();
                }
                Some(self.end(Expected::Won { index, result }, now, world))
            }
            Verdict::Fatal => Some(self.end(Expected::Failed(result), now, world)),
            Verdict::Withdraw => {
                keep(&mut self.lowest_withdrawn, index, result);
                None
            }
            Verdict::Retry => {
                self.failed(index, Some(result), true, world);
                None
            }
            Verdict::RetryAfter(after) => {
                if self.launched < self.max_copies {
                    let due = now.saturating_add(after);
                    self.next_due = if due < Duration::MAX {
                        Due::At(due)
                    } else {
                        Due::Never
                    };
                    self.held = true;
                }
                self.failed(index, Some(result), false, world);
                None
            }
            Verdict::Stop => {
                self.max_copies = self.launched;
                self.held = false;
                self.failed(index, Some(result), false, world);
                None
            }
        }
    }

    /// A failed copy: kept if it beats the failure kept, charged to a throttling budget,
    /// owed a replacement under `replace_failed` unless a pushback decides.
    pub(super) fn failed(
        &mut self,
        index: usize,
        result: Option<Output>,
        replace: bool,
        world: &mut World,
    ) {
        if let Some(budget) = &mut world.budget {
            budget.copy_failed();
        }
        if replace && self.script.replace_failed {
            self.owed += 1;
        }
        if let Some(result) = result {
            keep(&mut self.lowest_failure, index, result);
        }
    }

    /// Starts copy `launched` now, anchored at `anchor`; `Some` when the poll ends.
    pub(super) fn start(
        &mut self,
        reason: Reason,
        anchor: Duration,
        now: Duration,
        world: &mut World,
    ) -> Option<Expected> {
        let index = self.launched;
        let elapsed = now.saturating_sub(self.first_start);
        let step = &self.call.steps[index];
        let holds_slot;
        match self.call.factory {
            Factory::Plain => {
                match self.admit(index, reason, now, world) {
                    Some(slot) => holds_slot = slot,
                    None => return None,
                }
                if let Some(end) = self.hook(index, elapsed) {
                    self.orphan_slots += usize::from(holds_slot);
                    return Some(end);
                }
                self.attempts.push((index, elapsed, self.max_copies));
                if step.end == End::FactoryPanic {
                    if !self.script.catch_unwind {
                        self.orphan_slots += usize::from(holds_slot);
                        return Some(Expected::Unwound);
                    }
                    self.started(anchor, world);
                    let copy = self.copy_at(index, now, holds_slot);
                    return self.settle(copy, Finished::Panicked, now, world);
                }
                self.made.push((index, now));
            }
            Factory::Declining { from } => {
                self.attempts.push((index, elapsed, self.max_copies));
                if index >= from {
                    self.max_copies = self.launched;
                    self.next_due = Due::Never;
                    self.held = false;
                    self.owed = 0;
                    return None;
                }
                if step.end == End::FactoryPanic {
                    if !self.script.catch_unwind {
                        return Some(Expected::Unwound);
                    }
                    // Nothing was made: no token, no slot, no hook.
                    self.started(anchor, world);
                    let copy = self.copy_at(index, now, false);
                    return self.settle(copy, Finished::Panicked, now, world);
                }
                self.made.push((index, now));
                match self.admit(index, reason, now, world) {
                    Some(slot) => holds_slot = slot,
                    // Made, then dropped without a poll.
                    None => return None,
                }
                if let Some(end) = self.hook(index, elapsed) {
                    self.orphan_slots += usize::from(holds_slot);
                    return Some(end);
                }
            }
        }
        self.started(anchor, world);
        let copy = self.copy_at(index, now, holds_slot);
        if copy.finish == Some(now) {
            // Polled once as it starts: a copy with no latency finishes at once.
            let finished = self.finished(index);
            return self.settle(copy, finished, now, world);
        }
        self.in_flight.push(copy);
        None
    }

    /// Asks the budget for copy `index`; a refusal spends `reason`.
    fn admit(
        &mut self,
        index: usize,
        reason: Reason,
        now: Duration,
        world: &mut World,
    ) -> Option<bool> {
        let earners = world.earners();
        let Some(budget) = &mut world.budget else {
            return Some(false);
        };
        let admitted = budget.admit(world.calls_ended, earners, now);
        // A call that asked the budget for a copy beyond its first earns nothing, whichever
        // copy it first asked for (copy 1 may have started without asking: a declining
        // factory's caught panic). A copy due with the call itself (a zero delay, not a
        // wait, a failure or a pushback) keeps the call earning.
        let due_with_call =
            reason == Reason::Due && !self.held && self.next_due == Due::At(self.first_start);
        let first_ask = !self.asked && !due_with_call;
        if first_ask {
            // Its first ask, refused or not: the call earns nothing.
            world.calls_asked += 1;
        }
        self.asked |= first_ask;
        if let Some(slot) = admitted {
            return Some(slot);
        }
        if self.last_refused != Some(index) {
            self.last_refused = Some(index);
            world.stats.budget_denied += 1;
        }
        match reason {
            Reason::Due => {
                self.next_due = Due::Never;
                self.held = false;
            }
            Reason::NoneInFlight => self.max_copies = self.launched,
            Reason::Replace => self.owed = 0,
        }
        None
    }

    /// The `on_hedge` hook runs for copy `index`, `elapsed` into the call: `Some` if it
    /// panics.
    fn hook(&mut self, index: usize, elapsed: Duration) -> Option<Expected> {
        self.hooks.push((index, elapsed, self.max_copies));
        (self.script.hook_panics_at == Some(index)).then_some(Expected::Unwound)
    }

    /// Copy `launched` started, anchored at `anchor`.
    fn started(&mut self, anchor: Duration, world: &mut World) {
        self.last_start = anchor;
        self.launched += 1;
        self.next_due = Due::Unknown;
        self.held = false;
        self.owed = self.owed.saturating_sub(1);
        world.stats.hedges += 1;
    }
}
