//! The `schedule` target: the delay schedule alone, at every scale.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Hedgeable, Policy, Stats};

use super::script::{any_duration, due_by_rule, Mode};
use super::{CountingWaker, MS};
/// Arbitrary delays, caps, copy counts and `delay_fn` values, at every scale: copies start
/// when the schedule rule says (counted from due times, however late the timer fires),
/// never earlier than the copy before, as many as the mode allows, with one timer.
pub fn schedule(data: &[u8]) {
    let Ok(()) = run_schedule(&mut Unstructured::new(data)) else {
        return;
    };
}

fn run_schedule(u: &mut Unstructured<'_>) -> Result<()> {
    let max_copies = u.int_in_range(1..=16usize)?;
    let mode = match u.int_in_range(0..=4u8)? {
        0 | 1 => Mode::Fixed(any_duration(u)?),
        2 => Mode::Parallel,
        3 => Mode::Fallback,
        _ => {
            let mut delays = vec![None];
            for _ in 1..max_copies {
                let delay = any_duration(u)?;
                delays.push((!u.ratio(1, 10)?).then_some(delay));
            }
            Mode::PerCopy(Arc::new(delays))
        }
    };
    let max_delay = if u.arbitrary()? {
        Some(any_duration(u)?)
    } else {
        None
    };
    let late = u.arbitrary::<bool>()?;
    let mut lateness = Vec::new();
    for _ in 0..max_copies {
        lateness.push(if late {
            any_duration(u)?
        } else {
            Duration::ZERO
        });
    }

    let timer = ManualTimer::new();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let builder = Policy::builder()
        .max_copies(max_copies)
        .timer(timer.clone());
    let builder = mode.apply(builder, &asked);
    let builder = match max_delay {
        Some(max_delay) => builder.max_delay(max_delay),
        None => builder,
    };
    let policy = builder.build();

    // Every copy stays pending: the whole schedule plays out.
    let made = Rc::new(RefCell::new(Vec::<(Attempt, Duration)>::new()));
    let factory = {
        let (made, timer) = (Rc::clone(&made), timer.clone());
        move |attempt: Attempt| {
            made.borrow_mut().push((attempt, timer.now()));
            std::future::pending::<std::result::Result<(), ()>>()
        }
    };
    let mut hedge = Box::pin(factory.hedged(&policy));
    let waker = Waker::from(Arc::new(CountingWaker::default()));
    let mut cx = Context::from_waker(&waker);
    let mut late = lateness.into_iter();
    for _ in 0..=max_copies {
        assert!(hedge.as_mut().poll(&mut cx).is_pending());
        let Some(next) = timer.next_deadline() else {
            break;
        };
        let now = timer.now();
        timer.advance((next - now).saturating_add(late.next().unwrap_or_default()));
    }
    assert_eq!(timer.next_deadline(), None, "the schedule ran out");

    let made = made.borrow();
    let cap = mode.effective_max_delay(max_delay);
    // Replay the rule from due times (the schedule's anchor, however late the timer
    // fired): copies start until one is not timed or is due at the end of time.
    let mut due_times = vec![Duration::ZERO];
    for copy in 1..max_copies {
        let Some(delay) = mode.delay(copy) else {
            break;
        };
        let previous = *due_times.last().expect("the original's");
        let due = due_by_rule(delay, cap, previous, Duration::ZERO);
        if due == Duration::MAX {
            break;
        }
        assert!(due >= previous, "monotonic");
        let natural = previous.saturating_add(delay);
        if cap.is_some_and(|cap| natural > cap) {
            // Past the cap: at the cap, or one spread after the copy before.
            let spread = (delay / 4).max(MS);
            assert!(Some(due) == cap || due == previous.saturating_add(spread));
        }
        due_times.push(due);
    }
    assert_eq!(made.len(), due_times.len(), "copies started");
    for ((copy, made_at), due) in made.iter().zip(&due_times) {
        // The call's clock started at zero: `elapsed` is when the copy really started.
        assert_eq!(copy.elapsed(), *made_at, "copy {} elapsed", copy.index());
        assert!(
            *made_at >= *due,
            "copy {} started before it was due",
            copy.index()
        );
    }
    let hedge_timers = timer.sleeps_created();
    assert!(hedge_timers <= 1, "one timer per call, re-armed");
    if matches!(mode, Mode::Parallel | Mode::Fallback) {
        assert_eq!(hedge_timers, 0, "parallel and fallback arm no timer");
    }
    let asked = asked.lock().unwrap_or_else(|e| e.into_inner());
    for (position, copy) in asked.iter().enumerate() {
        assert!((1..max_copies).contains(copy));
        assert!(
            !asked[..position].contains(copy),
            "delay_fn asked twice about copy {copy}"
        );
    }
    drop(hedge);
    assert_eq!(timer.live_sleeps(), 0);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            cancelled: 1,
            hedges: made.len() as u64 - 1,
            ..Stats::default()
        }
    );
    Ok(())
}
