//! The reference model: the contracts of a race, step by step, on plain vectors, and the
//! budget's arithmetic. Polled at the same virtual times as the real call, it says what
//! that poll returns, which copies exist, and when the next thing happens.

use std::collections::VecDeque;
use std::time::Duration;

use hedging::{Stats, Verdict};

use super::script::{
    due_by_rule, BudgetKind, BudgetScript, CallScript, End, Factory, Fail, Later, Mode, Output,
    Script,
};

/// Token units per token: the budget keeps its balance in millionths.
const UNIT: u64 = 1_000_000;
const SECOND_NANOS: u64 = 1_000_000_000;

fn units(tokens: f64) -> u64 {
    (tokens * UNIT as f64 + 0.5) as u64
}

pub(crate) fn nanos(time: Duration) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

/// The budget as documented: a token bucket or gRPC A6 throttling, slots, and a floor.
#[derive(Debug)]
pub(crate) struct BudgetModel {
    throttling: bool,
    /// Units a call deposits (bucket) or a winning copy earns (throttling).
    ratio: u64,
    max: u64,
    pub(crate) balance: u64,
    cap: Option<u64>,
    pub(crate) outstanding: u64,
    /// `min_per_second`: copies let through per second, and when its schedule is next
    /// fully rested (nanoseconds).
    per_second: u64,
    floor_at: u64,
    /// Calls credited to the bucket so far.
    credited: u64,
}

impl BudgetModel {
    pub(crate) fn new(script: &BudgetScript) -> Self {
        let (throttling, ratio, max) = match script.kind {
            BudgetKind::Bucket { ratio, burst } => {
                let ratio = if ratio.is_nan() { 0.0 } else { ratio.max(0.0) };
                let burst = match burst {
                    Some(burst) if !burst.is_nan() => burst.max(1.0),
                    _ => 10.0,
                };
                (false, units(ratio), units(burst))
            }
            BudgetKind::Throttling { max_tokens, ratio } => {
                let (lowest, highest) = (UNIT / 1000, 1000 * UNIT);
                let max = if max_tokens.is_nan() {
                    lowest
                } else {
                    units(max_tokens).clamp(lowest, highest)
                };
                let ratio = if ratio.is_nan() {
                    lowest
                } else {
                    units(ratio).max(lowest)
                };
                (true, ratio, max)
            }
        };
        BudgetModel {
            throttling,
            ratio,
            max,
            balance: max,
            cap: script.max_outstanding.map(|copies| (copies as u64).max(1)),
            outstanding: 0,
            per_second: script.min_per_second.map_or(0, u64::from),
            floor_at: 0,
            credited: 0,
        }
    }

    pub(crate) fn capped(&self) -> bool {
        self.cap.is_some()
    }

    fn deposit(&mut self, amount: u64) {
        if amount > 0 && self.balance < self.max {
            self.balance = self.balance.saturating_add(amount).min(self.max);
        }
    }

    /// A bucket is credited with the calls that ended since its last credit.
    fn credit(&mut self, calls_ended: u64) {
        let previous = self.credited;
        self.credited = previous.max(calls_ended);
        if !self.throttling {
            self.deposit(
                calls_ended
                    .saturating_sub(previous)
                    .saturating_mul(self.ratio),
            );
        }
    }

    /// Asks for one extra copy at `now`: `Some(holds_slot)` if let through.
    fn admit(&mut self, calls_ended: u64, now: Duration) -> Option<bool> {
        self.credit(calls_ended);
        if let Some(cap) = self.cap {
            if self.outstanding >= cap {
                return None;
            }
            self.outstanding += 1;
        }
        let admitted = if self.throttling {
            self.balance > self.max / 2
        } else if self.balance >= UNIT {
            self.balance -= UNIT;
            true
        } else {
            false
        };
        if admitted || self.floor_admits(now) {
            return Some(self.capped());
        }
        if self.capped() {
            self.outstanding -= 1;
        }
        None
    }

    /// `min_per_second`: a generic cell rate algorithm with a burst of one second.
    fn floor_admits(&mut self, now: Duration) -> bool {
        if self.per_second == 0 {
            return false;
        }
        let interval = SECOND_NANOS / self.per_second;
        let now = nanos(now);
        let next = self.floor_at.max(now).saturating_add(interval);
        if next - now <= SECOND_NANOS {
            self.floor_at = next;
            true
        } else {
            false
        }
    }

    fn release(&mut self) {
        assert!(self.outstanding > 0, "model: a slot released twice");
        self.outstanding -= 1;
    }

    fn copy_won(&mut self) {
        if self.throttling {
            self.deposit(self.ratio);
        }
    }

    fn copy_failed(&mut self) {
        if self.throttling {
            self.balance = self.balance.saturating_sub(UNIT);
        }
    }

    pub(crate) fn tokens(&self) -> f64 {
        self.balance as f64 / UNIT as f64
    }
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
    fn delay_at(&self, at: Duration) -> Duration {
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
    /// Calls ended so far, the warm-ups included (what a bucket is credited from).
    pub(crate) calls_ended: u64,
}

impl World {
    /// A warm-up call won at once or before its hedge was due.
    pub(crate) fn warm_up_won(&mut self) {
        self.count(Outcome::Won { hedge: false });
    }

    fn count(&mut self, outcome: Outcome) {
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
enum Outcome {
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

    /// The first poll: the original is made and polled; a win at once returns.
    fn start_original(&mut self, now: Duration, world: &mut World) -> Option<Expected> {
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

    fn finished(&self, index: usize) -> Finished {
        let end = self.call.steps[index].end;
        match end.result() {
            Some(result) => Finished::Item(result),
            None if end == End::Empty => Finished::Ended,
            None => Finished::Panicked,
        }
    }

    /// A copy left the race: `Some` when that ends the call (or the poll unwinds).
    fn settle(
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
    fn failed(&mut self, index: usize, result: Option<Output>, replace: bool, world: &mut World) {
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

    /// Starts copy `launched` now, anchored at `anchor`; `Some` when the poll ends.
    fn start(
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
        let Some(budget) = &mut world.budget else {
            return Some(false);
        };
        if let Some(slot) = budget.admit(world.calls_ended, now) {
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
