//! Scripts: what the fuzzer's bytes say about a policy, the copies of each call, and
//! what the caller does.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use hedging::{Elapsed, PolicyBuilder, Verdict};

use super::{ms, MS};

mod budget;

pub(crate) use budget::{BudgetKind, BudgetScript};

/// A copy's error: a scripted code, or the timeout's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fail {
    Code(u8),
    Elapsed,
}

impl From<Elapsed> for Fail {
    fn from(_: Elapsed) -> Self {
        Fail::Elapsed
    }
}

/// What a copy yields: a future's output, or a stream's item.
pub(crate) type Output = std::result::Result<u8, Fail>;

/// How one copy ends (a stream: how its first item comes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    Ok(u8),
    Err(u8),
    /// The copy's `poll` panics once its latency has passed.
    Panic,
    /// Pending forever, and never wakes anyone.
    Never,
    /// The factory panics instead of making the copy.
    FactoryPanic,
    /// A stream that ends before its first item.
    Empty,
}

impl End {
    /// The result a copy ending so yields, if any.
    pub(crate) fn result(self) -> Option<Output> {
        match self {
            End::Ok(value) => Some(Ok(value)),
            End::Err(code) => Some(Err(Fail::Code(code))),
            End::Panic | End::Never | End::FactoryPanic | End::Empty => None,
        }
    }
}

/// A stream's item after its first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Later {
    Ok(u8),
    Err(u8),
    /// The stream's `poll_next` panics.
    Panic,
}

#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// From the copy's start to its end (a stream: to its first item).
    pub(crate) latency: Duration,
    pub(crate) end: End,
    /// A stream's later items, each with its latency after the item before.
    pub(crate) later: Vec<(Duration, Later)>,
    /// Whether a stream ends after its later items (else it stays pending forever).
    pub(crate) ends: bool,
}

impl Step {
    fn read(u: &mut Unstructured<'_>, streams: bool) -> Result<Step> {
        let latency = ms(u.int_in_range(0..=40)?);
        let end = match (streams, u.int_in_range(0..=15u8)?) {
            (false, 0..=5) | (true, 0..=4) => End::Ok(u.arbitrary()?),
            (false, 6..=10) | (true, 5..=9) => End::Err(u.arbitrary()?),
            (true, 10 | 11) => End::Empty,
            (false, 11 | 12) | (true, 12) => End::Never,
            (_, 13 | 14) => End::Panic,
            _ => End::FactoryPanic,
        };
        let mut later = Vec::new();
        let mut ends = true;
        if streams && end.result().is_some() {
            for _ in 0..u.int_in_range(0..=3u8)? {
                let latency = ms(u.int_in_range(0..=20)?);
                let item = match u.int_in_range(0..=7u8)? {
                    0..=3 => Later::Ok(u.arbitrary()?),
                    4..=6 => Later::Err(u.arbitrary()?),
                    _ => Later::Panic,
                };
                later.push((latency, item));
            }
            ends = !u.ratio(1, 5)?;
        }
        Ok(Step {
            latency,
            end,
            later,
            ends,
        })
    }
}

/// When copies start, as the builder's mode methods set it.
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    Fixed(Duration),
    Parallel,
    Fallback,
    /// `delay_fn`: entry k is the delay before copy k; missing entries are `None`.
    PerCopy(Arc<Vec<Option<Duration>>>),
}

impl Mode {
    pub(crate) fn delay(&self, copy: usize) -> Option<Duration> {
        match self {
            Mode::Fixed(delay) => Some(*delay),
            Mode::Parallel => Some(Duration::ZERO),
            Mode::Fallback => None,
            Mode::PerCopy(delays) => delays.get(copy).copied().flatten(),
        }
    }

    /// The cap the policy applies: a `max_delay` below a fixed delay is raised to it.
    pub(crate) fn effective_max_delay(&self, max_delay: Option<Duration>) -> Option<Duration> {
        match self {
            Mode::Fixed(delay) => max_delay.map(|cap| cap.max(*delay)),
            Mode::Parallel => max_delay,
            Mode::Fallback | Mode::PerCopy(_) => max_delay,
        }
    }

    pub(crate) fn apply<T>(
        &self,
        builder: PolicyBuilder<T>,
        delay_fn_calls: &Arc<Mutex<Vec<usize>>>,
    ) -> PolicyBuilder<T> {
        match self {
            Mode::Fixed(delay) => builder.delay(*delay),
            Mode::Parallel => builder.parallel(),
            Mode::Fallback => builder.fallback(),
            Mode::PerCopy(delays) => {
                let delays = Arc::clone(delays);
                let calls = Arc::clone(delay_fn_calls);
                builder.delay_fn(move |copy| {
                    calls.lock().unwrap_or_else(|e| e.into_inner()).push(copy);
                    delays.get(copy).copied().flatten()
                })
            }
        }
    }
}

/// The schedule rule of the contracts table, written out on its own: copy k is due
/// `delay` after copy k-1 started; once that would pass `max_delay` after the original,
/// copies are spread `max(delay / 4, 1 ms)` apart.
pub(crate) fn due_by_rule(
    delay: Duration,
    max_delay: Option<Duration>,
    previous: Duration,
    first: Duration,
) -> Duration {
    let natural = previous.saturating_add(delay);
    match max_delay {
        Some(cap) if natural > first.saturating_add(cap) => {
            let spread = (delay / 4).max(MS);
            first
                .saturating_add(cap)
                .max(previous.saturating_add(spread))
        }
        _ => natural,
    }
}

/// A duration from any scale: zero, nanoseconds, milliseconds, seconds, or near the top.
pub(crate) fn any_duration(u: &mut Unstructured<'_>) -> Result<Duration> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => Duration::ZERO,
        1 => Duration::from_nanos(u.int_in_range(0..=2_000_000)?),
        2..=4 => ms(u.int_in_range(0..=1_000)?),
        5 => Duration::from_secs(u.arbitrary::<u32>()?.into()),
        6 => Duration::MAX - Duration::from_nanos(u.int_in_range(0..=1_000_000)?),
        _ => Duration::new(u.arbitrary()?, u.int_in_range(0..=999_999_999)?),
    })
}

/// Which classification a call uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Judge {
    ByResult,
    /// `.when(retryable)`: even codes are retried, odd ones are fatal.
    When,
    /// `.classify(classified)`: every verdict occurs.
    Classify,
}

pub(crate) fn retryable(code: u8) -> bool {
    code.is_multiple_of(2)
}

/// The verdict of `.classify` in scripts, on every result a copy can yield.
pub(crate) fn classified(result: &Output) -> Verdict {
    match result {
        Ok(value) => match value % 8 {
            0 => Verdict::Retry,
            1 => Verdict::Withdraw,
            2 => Verdict::RetryAfter(ms(u64::from(value / 8 % 32))),
            3 => Verdict::Stop,
            _ => Verdict::Win,
        },
        Err(Fail::Code(code)) => match code % 8 {
            0 | 1 => Verdict::Retry,
            2 => Verdict::Fatal,
            3 => Verdict::Win,
            4 => Verdict::RetryAfter(ms(u64::from(code / 8 % 32))),
            5 if (code / 8).is_multiple_of(2) => Verdict::RetryAfter(Duration::ZERO),
            5 => Verdict::RetryAfter(Duration::MAX),
            6 => Verdict::Stop,
            _ => Verdict::Withdraw,
        },
        // Never shown to a classifier: a timed-out copy is a `Retry` by contract.
        Err(Fail::Elapsed) => Verdict::Retry,
    }
}

impl Judge {
    pub(crate) fn verdict(self, result: &Output) -> Verdict {
        match (self, result) {
            (Judge::ByResult | Judge::When, Ok(_)) => Verdict::Win,
            (Judge::ByResult, Err(_)) => Verdict::Retry,
            (Judge::When, Err(Fail::Code(code))) if retryable(*code) => Verdict::Retry,
            (Judge::When, Err(Fail::Code(_))) => Verdict::Fatal,
            (Judge::When, Err(Fail::Elapsed)) => Verdict::Retry,
            (Judge::Classify, result) => classified(result),
        }
    }

    /// Whether the classifier sees `result` (`.when` sees errors only).
    pub(crate) fn shows(self, result: &Output) -> bool {
        match self {
            Judge::ByResult => false,
            Judge::When => result.is_err(),
            Judge::Classify => true,
        }
    }
}

/// How a call's factory makes copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Factory {
    /// `FnMut(Attempt) -> Fut`.
    Plain,
    /// `FnMut(Attempt) -> Option<Fut>`, declining every copy from index `from` on.
    Declining { from: usize },
}

/// `Hedge::attempt_timeout` and `Hedge::timeout`, when set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Deadlines {
    pub(crate) attempt: Option<Duration>,
    pub(crate) total: Option<Duration>,
}

impl Deadlines {
    fn read(u: &mut Unstructured<'_>) -> Result<Deadlines> {
        let mut timeout = |most: u64| -> Result<Option<Duration>> {
            if !u.ratio(1, 3)? {
                return Ok(None);
            }
            Ok(Some(match u.int_in_range(0..=7u8)? {
                0 => Duration::ZERO,
                1 => Duration::MAX,
                _ => ms(u.int_in_range(1..=most)?),
            }))
        };
        Ok(Deadlines {
            attempt: timeout(60)?,
            total: timeout(150)?,
        })
    }

    pub(crate) fn any(self) -> bool {
        self.attempt.is_some() || self.total.is_some()
    }
}

/// `adaptive_delay` on top of a fixed delay, and the calls that teach it latencies.
#[derive(Clone, Debug)]
pub(crate) struct AdaptiveScript {
    pub(crate) quantile: f64,
    pub(crate) min_delay: Option<Duration>,
    pub(crate) min_samples: u32,
    pub(crate) window: Duration,
    /// Latencies of the calls run before the scripted one, each answering before its
    /// hedge is due.
    pub(crate) warm_ups: Vec<Duration>,
    /// The scripted call starts in this quarter window after the warm-ups' ...
    pub(crate) start_slot: u64,
    /// ... this many thousandths into it.
    pub(crate) start_offset: u64,
}

impl AdaptiveScript {
    fn read(u: &mut Unstructured<'_>) -> Result<AdaptiveScript> {
        let quantile = *u.choose(&[0.5, 0.9, 0.95, 1.0, 0.0, f64::NAN])?;
        let min_delay = if u.ratio(1, 2)? {
            Some(ms(u.int_in_range(0..=5)?))
        } else {
            None
        };
        let min_samples = u.int_in_range(0..=4)?;
        let window = *u.choose(&[ms(100), ms(120), ms(200), ms(1000), ms(40)])?;
        let mut warm_ups = Vec::new();
        for _ in 0..u.int_in_range(0..=6u8)? {
            warm_ups.push(ms(u.int_in_range(0..=40)?));
        }
        Ok(AdaptiveScript {
            quantile,
            min_delay,
            min_samples,
            window,
            warm_ups,
            start_slot: u.int_in_range(1..=6)?,
            start_offset: u.int_in_range(0..=999)?,
        })
    }

    pub(crate) fn apply<T>(&self, builder: PolicyBuilder<T>) -> PolicyBuilder<T> {
        let builder = builder
            .adaptive_delay(self.quantile)
            .adaptive_min_samples(self.min_samples)
            .adaptive_window(self.window);
        match self.min_delay {
            Some(min_delay) => builder.min_delay(min_delay),
            None => builder,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Action {
    /// Poll if woken, else move the clock to the next deadline.
    Run,
    /// Move the clock by this much (past several events at once), then poll if woken.
    Advance(Duration),
    /// This many other calls through the policy, each won at once by its original: traffic
    /// that earns a bucket tokens while this call is in flight.
    Traffic(usize),
    /// Poll although not woken: a correct future does not mind.
    SpuriousPoll,
    /// Drop the call here.
    Drop,
}

/// How many calls a burst of traffic makes: enough, at the ratios scripted, for a second
/// of them to lift a bucket's savings above the least it may save.
const TRAFFIC: [usize; 6] = [1, 2, 5, 12, 30, 80];

/// One call through the policy.
#[derive(Debug)]
pub(crate) struct CallScript {
    /// Time passing before the call is first polled.
    pub(crate) gap: Duration,
    /// Calls won at once by their original, after the gap and before this one.
    pub(crate) traffic_before: usize,
    pub(crate) judge: Judge,
    pub(crate) factory: Factory,
    pub(crate) deadlines: Deadlines,
    pub(crate) steps: Vec<Step>,
    pub(crate) actions: Vec<Action>,
}

impl CallScript {
    /// `traffic`: other calls may go through the policy around this one.
    fn read(
        u: &mut Unstructured<'_>,
        copies: usize,
        streams: bool,
        last: bool,
        traffic: bool,
    ) -> Result<CallScript> {
        // Up to three seconds: the budget's savings window may roll on between calls.
        let gap = if u.ratio(1, 2)? {
            ms(u.int_in_range(0..=3000)?)
        } else {
            Duration::ZERO
        };
        let traffic_before = if traffic && u.ratio(1, 3)? {
            *u.choose(&TRAFFIC)?
        } else {
            0
        };
        let judge = match u.int_in_range(0..=2u8)? {
            0 => Judge::ByResult,
            1 => Judge::When,
            _ => Judge::Classify,
        };
        let factory = if u.ratio(1, 4)? {
            Factory::Declining {
                from: u.int_in_range(1..=copies)?,
            }
        } else {
            Factory::Plain
        };
        let deadlines = Deadlines::read(u)?;
        let steps = (0..copies)
            .map(|_| Step::read(u, streams))
            .collect::<Result<Vec<_>>>()?;
        let most = if last { 48 } else { u.int_in_range(0..=32)? };
        let mut actions = Vec::new();
        while actions.len() < most && !u.is_empty() {
            actions.push(match u.int_in_range(0..=17u8)? {
                0..=8 => Action::Run,
                9..=11 => Action::Advance(ms(u.int_in_range(0..=60)?)),
                // Up to 2.5 s: past the budget's one-second savings window.
                12 => Action::Advance(ms(u.int_in_range(0..=2500)?)),
                13 | 14 => Action::SpuriousPoll,
                15 => Action::Drop,
                _ if traffic => Action::Traffic(*u.choose(&TRAFFIC)?),
                _ => Action::Run,
            });
        }
        Ok(CallScript {
            gap,
            traffic_before,
            judge,
            factory,
            deadlines,
            steps,
            actions,
        })
    }
}

/// A policy and the calls made through it, one after the other.
#[derive(Debug)]
pub(crate) struct Script {
    /// As given to the builder (0 is clamped to 1).
    pub(crate) max_copies: usize,
    pub(crate) mode: Mode,
    pub(crate) max_delay: Option<Duration>,
    /// Only with a fixed delay, and then with a single call.
    pub(crate) adaptive: Option<AdaptiveScript>,
    pub(crate) hedge_probability: f64,
    pub(crate) catch_unwind: bool,
    pub(crate) replace_failed: bool,
    /// The `on_hedge` hook panics for this copy.
    pub(crate) hook_panics_at: Option<usize>,
    pub(crate) budget: Option<BudgetScript>,
    pub(crate) calls: Vec<CallScript>,
}

impl Script {
    pub(crate) fn read(u: &mut Unstructured<'_>, streams: bool) -> Result<Script> {
        let max_copies = u.int_in_range(0..=6usize)?;
        let copies = max_copies.max(1);
        let mode = match u.int_in_range(0..=5u8)? {
            0..=2 => Mode::Fixed(ms(u.int_in_range(0..=40)?)),
            3 => Mode::Parallel,
            4 => Mode::Fallback,
            _ => {
                let mut delays = vec![None];
                for _ in 1..copies {
                    let delay = ms(u.int_in_range(0..=40)?);
                    delays.push((!u.ratio(1, 6)?).then_some(delay));
                }
                Mode::PerCopy(Arc::new(delays))
            }
        };
        let max_delay = if u.ratio(1, 3)? {
            Some(ms(u.int_in_range(0..=100)?))
        } else {
            None
        };
        let adaptive = if matches!(mode, Mode::Fixed(_)) && u.ratio(1, 16)? {
            Some(AdaptiveScript::read(u)?)
        } else {
            None
        };
        let hedge_probability = match u.int_in_range(0..=9u8)? {
            0 => 0.0,
            1 => 0.5,
            2 => f64::NAN,
            3 => -1.0,
            4 => 7.0,
            _ => 1.0,
        };
        let catch_unwind = u.arbitrary()?;
        let replace_failed = u.ratio(1, 3)?;
        let hook_panics_at = if u.ratio(1, 8)? {
            Some(u.int_in_range(1..=copies)?)
        } else {
            None
        };
        let budget = if u.ratio(1, 3)? {
            Some(BudgetScript::read(u)?)
        } else {
            None
        };
        let calls = if adaptive.is_none() && u.ratio(1, 4)? {
            u.int_in_range(2..=3)?
        } else {
            1
        };
        let calls = (0..calls)
            .map(|call| {
                // Traffic would teach an adaptive delay latencies of its own.
                let traffic = adaptive.is_none();
                CallScript::read(u, copies, streams, call + 1 == calls, traffic)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Script {
            max_copies,
            mode,
            max_delay,
            adaptive,
            hedge_probability,
            catch_unwind,
            replace_failed,
            hook_panics_at,
            budget,
            calls,
        })
    }
}
