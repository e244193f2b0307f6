//! The reference model: the contracts of a race, step by step, on plain vectors, and the
//! budget's arithmetic (`budget.rs`). Polled at the same virtual times as the real call,
//! it says what that poll returns, which copies exist, and when the next thing happens;
//! how copies start and leave the race is in `copies.rs`, what outlives a call in
//! `world.rs`.

use std::collections::VecDeque;
use std::time::Duration;

use super::script::{due_by_rule, CallScript, Fail, Later, Mode, Output, Script};

mod budget;
mod copies;
mod world;

pub(crate) use budget::BudgetModel;
use world::Outcome;
pub(crate) use world::{nanos, AdaptiveModel, Expected, World};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    Running,
    /// A stream follows its winner.
    Committed,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Due {
    Unknown,
    At(Duration),
    Never,
}

/// Why a copy starts now; a budget refusal spends that reason only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    Due,
    NoneInFlight,
    Replace,
}

/// A copy in flight.
#[derive(Clone, Copy, Debug)]
struct Running {
    index: usize,
    /// When its result (a stream: its first item) comes; `None`: never.
    finish: Option<Duration>,
    started: Duration,
    holds_slot: bool,
}

/// How a copy left the race.
enum Finished {
    Item(Output),
    /// A stream that ended before its first item.
    Ended,
    Panicked,
}

/// The winner a stream follows after the commit.
#[derive(Debug)]
struct Winner {
    later: VecDeque<(Duration, Later)>,
    next_at: Option<Duration>,
    ends: bool,
}

/// One call, as the contracts say it goes.
pub(crate) struct Model<'s> {
    script: &'s Script,
    call: &'s CallScript,
    streams: bool,
    adaptive: Option<AdaptiveModel>,
    effective_max_delay: Option<Duration>,
    phase: Phase,
    pub(crate) max_copies: usize,
    launched: usize,
    /// Failures not yet replaced, with `replace_failed`.
    owed: usize,
    /// A `RetryAfter` holds the next copy until it is due.
    held: bool,
    next_due: Due,
    /// The copy the budget refused last (each is counted once).
    last_refused: Option<usize>,
    /// Whether the call asked the budget for a copy beyond its first.
    asked: bool,
    in_flight: Vec<Running>,
    first_start: Duration,
    /// The schedule's anchor of the newest copy: its due time, or when it started early.
    last_start: Duration,
    lowest_failure: Option<(usize, Output)>,
    lowest_withdrawn: Option<(usize, Output)>,
    caught_panic: bool,
    /// The deadline the call waits for, when it waits for one.
    wake_at: Option<Duration>,
    /// The deadline the hedge timer is armed for.
    armed_at: Option<Duration>,
    /// Whether the call made its one timer.
    pub(crate) timer_made: bool,
    /// Slots taken for copies whose start unwound (a panicking hook or factory): held
    /// until the call is dropped.
    pub(crate) orphan_slots: usize,
    winner: Option<Winner>,
    /// (index, elapsed, max_copies) of every factory call.
    pub(crate) attempts: Vec<(usize, Duration, usize)>,
    /// (index, virtual time) of each copy made.
    pub(crate) made: Vec<(usize, Duration)>,
    /// (index, elapsed, max_copies) of every `on_hedge` call.
    pub(crate) hooks: Vec<(usize, Duration, usize)>,
    pub(crate) classified: Vec<Output>,
}

impl<'s> Model<'s> {
    pub(crate) fn new(
        script: &'s Script,
        call: &'s CallScript,
        streams: bool,
        adaptive: Option<AdaptiveModel>,
    ) -> Self {
        let effective_max_delay = match &adaptive {
            Some(adaptive) => adaptive.max_delay,
            None => script.mode.effective_max_delay(script.max_delay),
        };
        Model {
            script,
            call,
            streams,
            adaptive,
            effective_max_delay,
            phase: Phase::Idle,
            max_copies: 0,
            launched: 0,
            owed: 0,
            held: false,
            next_due: Due::Unknown,
            last_refused: None,
            asked: false,
            in_flight: Vec::new(),
            first_start: Duration::ZERO,
            last_start: Duration::ZERO,
            lowest_failure: None,
            lowest_withdrawn: None,
            caught_panic: false,
            wake_at: None,
            armed_at: None,
            timer_made: false,
            orphan_slots: 0,
            winner: None,
            attempts: Vec::new(),
            made: Vec::new(),
            hooks: Vec::new(),
            classified: Vec::new(),
        }
    }

    /// Whether a stream follows its winner.
    pub(crate) fn committed(&self) -> bool {
        self.phase == Phase::Committed
    }

    /// Copies alive: those in flight, and a stream's winner.
    pub(crate) fn alive(&self) -> usize {
        match self.phase {
            Phase::Running => self.in_flight.len(),
            Phase::Committed => 1,
            Phase::Idle | Phase::Done => 0,
        }
    }

    /// Hedges in flight holding a budget slot.
    pub(crate) fn slots_held(&self) -> usize {
        match self.phase {
            Phase::Running => self.in_flight.iter().filter(|c| c.holds_slot).count(),
            _ => 0,
        }
    }

    /// Whether the hedge timer is alive: made, and the race still on.
    pub(crate) fn timer_alive(&self) -> bool {
        self.timer_made && self.phase == Phase::Running
    }

    /// The call is dropped: a race still on is cancelled.
    pub(crate) fn drop_call(&mut self, world: &mut World) {
        if self.phase == Phase::Running {
            let held = self.slots_held() + self.orphan_slots;
            for _ in 0..held {
                world
                    .budget
                    .as_mut()
                    .expect("a slot means a budget")
                    .release();
            }
            world.count(Outcome::Cancelled);
        }
        self.in_flight.clear();
        self.phase = Phase::Done;
    }

    /// The earliest time something should wake the call: a copy finishing, a deadline
    /// it waits for, or a committed stream's next item.
    pub(crate) fn next_event(&self) -> Option<Duration> {
        match self.phase {
            Phase::Running => {
                let finish = self.in_flight.iter().filter_map(|c| c.finish).min();
                finish.into_iter().chain(self.wake_at).min()
            }
            Phase::Committed => self.winner.as_ref().and_then(|w| w.next_at),
            Phase::Idle | Phase::Done => None,
        }
    }

    /// One poll at `now`; `max_copies` is what this call may start (after the roll).
    pub(crate) fn poll(&mut self, now: Duration, max_copies: usize, world: &mut World) -> Expected {
        match self.phase {
            Phase::Idle => {
                self.phase = Phase::Running;
                self.max_copies = max_copies;
                self.first_start = now;
                self.last_start = now;
                if let Some(end) = self.start_original(now, world) {
                    return end;
                }
            }
            Phase::Running => {
                // Every copy in flight whose time has come finishes, in index order.
                let mut position = 0;
                while position < self.in_flight.len() {
                    let copy = self.in_flight[position];
                    if copy.finish.is_some_and(|finish| finish <= now) {
                        self.in_flight.remove(position);
                        let finished = self.finished(copy.index);
                        if let Some(end) = self.settle(copy, finished, now, world) {
                            return end;
                        }
                    } else {
                        position += 1;
                    }
                }
            }
            Phase::Committed => return self.follow(now),
            Phase::Done => return Expected::Ended,
        }
        self.decide(now, world)
    }

    /// After polling: start copies, expire them, or end, until the call waits.
    fn decide(&mut self, now: Duration, world: &mut World) -> Expected {
        let deadlines = self.call.deadlines;
        loop {
            self.wake_at = None;
            let can_start = self.launched < self.max_copies;
            if !can_start {
                if self.in_flight.is_empty() {
                    let end = self.give_up();
                    return self.end(end, now, world);
                }
                if !deadlines.any() {
                    return Expected::Pending;
                }
            }
            if can_start && !self.held && (self.in_flight.is_empty() || self.owed > 0) {
                // No copy starts once the call's deadline came, as no copy due then does.
                let total_deadline = deadlines.total.and_then(|total| {
                    Some(self.first_start.saturating_add(total)).filter(|at| *at < Duration::MAX)
                });
                if total_deadline.is_some_and(|deadline| deadline <= now) {
                    let end = match self.lowest_failure {
                        Some((_, result)) => Expected::Failed(result),
                        None => Expected::Failed(Err(Fail::Elapsed)),
                    };
                    return self.end(end, now, world);
                }
                let reason = if self.in_flight.is_empty() {
                    Reason::NoneInFlight
                } else {
                    Reason::Replace
                };
                if let Some(end) = self.start(reason, now.max(self.last_start), now, world) {
                    return end;
                }
                continue;
            }
            let due = if can_start { self.next_due() } else { None };
            // A deadline that saturated is past the end of time: it never comes.
            let attempt_deadline = deadlines.attempt.and_then(|attempt| {
                let oldest = self.in_flight.first()?;
                Some(oldest.started.saturating_add(attempt)).filter(|at| *at < Duration::MAX)
            });
            let total_deadline = deadlines.total.and_then(|total| {
                Some(self.first_start.saturating_add(total)).filter(|at| *at < Duration::MAX)
            });
            let Some(earliest) = [due, attempt_deadline, total_deadline]
                .into_iter()
                .flatten()
                .min()
            else {
                if self.in_flight.is_empty() {
                    let end = self.give_up();
                    return self.end(end, now, world);
                }
                return Expected::Pending;
            };
            if self.armed_at == Some(earliest) {
                if earliest > now {
                    self.wake_at = Some(earliest);
                    return Expected::Pending;
                }
                self.armed_at = None; // fired
                continue;
            }
            if total_deadline.is_some_and(|deadline| deadline <= now) {
                let end = match self.lowest_failure {
                    Some((_, result)) => Expected::Failed(result),
                    None => Expected::Failed(Err(Fail::Elapsed)),
                };
                return self.end(end, now, world);
            }
            if let (Some(attempt), Some(deadline)) = (deadlines.attempt, attempt_deadline) {
                if deadline <= now {
                    self.expire(now.saturating_sub(attempt), world);
                    continue;
                }
            }
            if let Some(due) = due.filter(|due| *due <= now) {
                if let Some(end) = self.start(Reason::Due, due, now, world) {
                    return end;
                }
                continue;
            }
            self.armed_at = Some(earliest);
            self.wake_at = Some(earliest);
            self.timer_made = true;
            return Expected::Pending;
        }
    }

    /// When copy `launched` is due by the clock, computed once per copy.
    fn next_due(&mut self) -> Option<Duration> {
        if self.next_due == Due::Unknown {
            let delay = match (&self.adaptive, &self.script.mode) {
                (Some(adaptive), Mode::Fixed(_)) => Some(adaptive.delay_at(self.last_start)),
                (_, mode) => mode.delay(self.launched),
            };
            self.next_due = match delay {
                Some(delay) => {
                    let due = due_by_rule(
                        delay,
                        self.effective_max_delay,
                        self.last_start,
                        self.first_start,
                    );
                    // A due time that saturated is past the end of time: never.
                    if due < Duration::MAX {
                        Due::At(due)
                    } else {
                        Due::Never
                    }
                }
                None => Due::Never,
            };
        }
        match self.next_due {
            Due::At(due) => Some(due),
            Due::Unknown | Due::Never => None,
        }
    }

    /// Drops every copy in flight that started at or before `cutoff`: timed out.
    fn expire(&mut self, cutoff: Duration, world: &mut World) {
        while let Some(oldest) = self.in_flight.first().copied() {
            if oldest.started > cutoff {
                return;
            }
            self.in_flight.remove(0);
            if oldest.holds_slot {
                world.budget.as_mut().expect("a slot").release();
            }
            self.failed(oldest.index, Some(Err(Fail::Elapsed)), true, world);
        }
    }

    /// No copy can win: the lowest-index failure, else a caught panic, else the lowest
    /// withdrawn result, else (streams) nothing.
    fn give_up(&self) -> Expected {
        if let Some((_, result)) = self.lowest_failure {
            return Expected::Failed(result);
        }
        if self.caught_panic {
            return Expected::Resumed;
        }
        match self.lowest_withdrawn {
            Some((_, result)) => Expected::Failed(result),
            None => {
                assert!(
                    self.streams,
                    "model: a race of futures always keeps a result"
                );
                Expected::Empty
            }
        }
    }

    /// The race is over with `end`: the losers are dropped, then their slots come back;
    /// the call is counted. A stream that won commits to its winner.
    fn end(&mut self, end: Expected, now: Duration, world: &mut World) -> Expected {
        for copy in &self.in_flight {
            if copy.holds_slot {
                world.budget.as_mut().expect("a slot").release();
            }
        }
        self.in_flight.clear();
        let outcome = match &end {
            Expected::Won { index, .. } => Outcome::Won { hedge: *index > 0 },
            _ => Outcome::Failed,
        };
        world.count(outcome);
        self.phase = Phase::Done;
        if let (true, Expected::Won { index, .. }) = (self.streams, &end) {
            let step = &self.call.steps[*index];
            self.phase = Phase::Committed;
            self.winner = Some(Winner {
                later: step.later.iter().copied().collect(),
                next_at: step.later.first().map(|(latency, _)| now + *latency),
                ends: step.ends,
            });
        }
        end
    }

    /// A committed stream: the winner's later items, unjudged, as they come.
    fn follow(&mut self, now: Duration) -> Expected {
        let winner = self.winner.as_mut().expect("committed to a winner");
        match winner.next_at {
            Some(at) if at <= now => {
                let (_, item) = winner.later.pop_front().expect("an item is due");
                winner.next_at = winner.later.front().map(|(latency, _)| now + *latency);
                match item {
                    Later::Ok(value) => Expected::Item(Ok(value)),
                    Later::Err(code) => Expected::Item(Err(Fail::Code(code))),
                    Later::Panic => Expected::Unwound,
                }
            }
            Some(_) => Expected::Pending,
            None if winner.ends => {
                self.phase = Phase::Done;
                Expected::Ended
            }
            None => Expected::Pending,
        }
    }
}

/// Keeps `result` of copy `index` if no lower index is kept.
fn keep(kept: &mut Option<(usize, Output)>, index: usize, result: Output) {
    if kept.as_ref().is_none_or(|(kept, _)| index < *kept) {
        *kept = Some((index, result));
    }
}
