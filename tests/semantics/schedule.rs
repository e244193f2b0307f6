//! When copies start: failure accelerates, the schedule, the modes, the parallelism cap,
//! the fast path and the lazy timer.

use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use crate::common::{ms, policy, Backend, Driver, Step};
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy};

// --- Failure accelerates -------------------------------------------------------------

#[test]
fn a_fast_failure_starts_the_next_copy_at_once() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(2, 100), Step::ok(3, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(2))]);
    assert_eq!(timer.now(), ms(5));
}

#[test]
fn an_immediate_failure_starts_the_next_copy_in_the_same_poll() {
    let timer = ManualTimer::new();
    let backend = Backend::new(
        &timer,
        [Step::err(0, 100), Step::err(0, 101), Step::ok(0, 2)],
    );
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.poll(), Poll::Ready(Ok(2)));
    assert_eq!(
        timer.sleeps_created(),
        3,
        "only the copies' own sleeps: no hedge timer"
    );
}

#[test]
fn a_failure_while_another_copy_runs_keeps_the_schedule() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::err(1, 101), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    // Copy 1 failed at 11 while copy 0 was in flight: copy 2 still waits for 20.
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10)), (2, ms(20))]);
}

#[test]
fn the_schedule_counts_from_a_copy_started_early() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(3, 100), Step::never(), Step::ok(0, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(3)), (2, ms(13))]);
}

// --- Schedule ------------------------------------------------------------------------

#[test]
fn copy_k_starts_k_delays_after_the_original() {
    let timer = ManualTimer::new();
    let backend = Backend::new(
        &timer,
        [Step::never(), Step::never(), Step::never(), Step::ok(1, 3)],
    );
    let policy = policy(&timer, 4, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(3));
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0)), (1, ms(10)), (2, ms(20)), (3, ms(30))]
    );
}

#[test]
fn copies_past_max_delay_are_spread_a_quarter_delay_apart() {
    let timer = ManualTimer::new();
    let steps = [
        Step::never(),
        Step::never(),
        Step::never(),
        Step::never(),
        Step::ok(0, 4),
    ];
    let backend = Backend::new(&timer, steps);
    let policy = Policy::builder()
        .max_copies(5)
        .delay(ms(40))
        .max_delay(ms(50))
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(4));
    let starts: Vec<Duration> = backend.starts().into_iter().map(|(_, at)| at).collect();
    assert_eq!(starts, vec![ms(0), ms(40), ms(50), ms(60), ms(70)]);
}

#[test]
fn a_late_timer_does_not_push_the_schedule_back() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::ok(0, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    // The executor comes back late, at 14 ms: copy 1 starts then, copy 2 is still due at 20.
    timer.advance(ms(14));
    assert_eq!(call.poll_if_woken(), Some(Poll::Pending));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(14))]);
    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts()[2], (2, ms(20)));
}

#[test]
fn attempt_elapsed_is_when_the_copy_really_started() {
    let timer = ManualTimer::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let policy = policy(&timer, 3, 10);
    let factory = {
        let (timer, seen) = (timer.clone(), Arc::clone(&seen));
        move |a: Attempt| {
            seen.lock()
                .unwrap()
                .push((a.index(), a.elapsed(), timer.now()));
            std::future::pending::<Result<(), ()>>()
        }
    };
    let mut call = Driver::new(factory.hedged(&policy));
    assert_eq!(call.poll(), Poll::Pending);
    // The hedge is due at 10 ms; the executor gets to it at 14 ms.
    timer.advance(ms(14));
    assert_eq!(call.poll(), Poll::Pending);
    // The schedule stays anchored to due times: the next copy is due at 20 ms.
    timer.advance(ms(6));
    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(0, ms(0), ms(0)), (1, ms(14), ms(14)), (2, ms(20), ms(20))]
    );
}

/// `ManualTimer` misused, as the crate promises to survive: with `early`, every sleep
/// fires at half its duration; the clock reads `behind` less than `ManualTimer`'s.
#[derive(Clone)]
struct Unruly {
    inner: ManualTimer,
    early: bool,
    behind: Arc<Mutex<Duration>>,
}

impl Unruly {
    fn shortened(&self, after: Duration) -> Duration {
        if self.early {
            after / 2
        } else {
            after
        }
    }
}

impl Timer for Unruly {
    type Sleep = hedging::timer::ManualSleep;

    fn now(&self) -> Duration {
        self.inner
            .now()
            .saturating_sub(*self.behind.lock().unwrap())
    }

    fn sleep(&self, after: Duration) -> Self::Sleep {
        self.inner.sleep(self.shortened(after))
    }

    fn reset(&self, sleep: std::pin::Pin<&mut Self::Sleep>, after: Duration) {
        self.inner.reset(sleep, self.shortened(after));
    }
}

/// Three copies 10 ms apart on `unruly`, failed copies replaced at once: the original
/// never answers, copy 1 fails 1 ms after it started and copy 2 answers 1 ms after it.
/// Each copy's `Attempt::elapsed` goes to `seen`.
fn replaced_after_a_timed_copy(
    unruly: &Unruly,
    seen: &Arc<Mutex<Vec<Duration>>>,
) -> Driver<impl std::future::Future<Output = Result<u32, u32>>> {
    let backend = Backend::new(
        &unruly.inner,
        [Step::never(), Step::err(1, 1), Step::ok(1, 2)],
    );
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .replace_failed(true)
        .timer(unruly.clone())
        .build();
    let factory = {
        let (mut copy, seen) = (backend.factory(), Arc::clone(seen));
        move |a: Attempt| {
            seen.lock().unwrap().push(a.elapsed());
            copy(a)
        }
    };
    Driver::new(factory.hedged(policy))
}

#[test]
fn attempt_elapsed_never_decreases_when_a_sleep_fires_early() {
    let unruly = Unruly {
        inner: ManualTimer::new(),
        early: true,
        behind: Arc::default(),
    };
    let seen = Arc::default();
    let mut call = replaced_after_a_timed_copy(&unruly, &seen);
    // The sleep for copy 1, due at 10 ms, fires at 5: the race trusts it and starts copy 1
    // at 10. Copy 1 fails at 6 by the clock, and copy 2 starts then.
    assert_eq!(call.run(&unruly.inner), Ok(2));
    assert_eq!(*seen.lock().unwrap(), [ms(0), ms(10), ms(10)]);
}

#[test]
fn attempt_elapsed_never_decreases_when_the_clock_jumps_back() {
    let unruly = Unruly {
        inner: ManualTimer::new(),
        early: false,
        behind: Arc::default(),
    };
    let seen = Arc::default();
    let mut call = replaced_after_a_timed_copy(&unruly, &seen);
    assert_eq!(call.poll(), Poll::Pending);
    // Copy 1, due at 10 ms, starts late, at 12; then the clock jumps back 7 ms, and copy 1
    // fails 1 ms later, at 6 by the clock: copy 2 starts then.
    unruly.inner.advance(ms(12));
    assert_eq!(call.poll_if_woken(), Some(Poll::Pending));
    *unruly.behind.lock().unwrap() = ms(7);
    assert_eq!(call.run(&unruly.inner), Ok(2));
    assert_eq!(*seen.lock().unwrap(), [ms(0), ms(12), ms(12)]);
}

// --- Modes ---------------------------------------------------------------------------

#[test]
fn parallel_starts_every_copy_at_once_without_a_timer() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(3, 1), Step::ok(5, 2)]);
    let policy = Policy::builder()
        .max_copies(3)
        .parallel()
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(0)), (2, ms(0))]);
    assert_eq!(timer.sleeps_created(), 3, "the copies' own sleeps only");
    assert_eq!(call.run(&timer), Ok(1));
}

#[test]
fn zero_delay_is_parallel() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::never()]);
    let policy = policy(&timer, 3, 0);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(backend.started(), 3);
    assert_eq!(timer.sleeps_created(), 3, "the copies' own sleeps only");
}

#[test]
fn fallback_starts_the_next_copy_only_after_a_failure() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(500, 100), Step::ok(5, 1)]);
    let policy = Policy::builder()
        .max_copies(2)
        .fallback()
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run_until(&timer, ms(499)), None);
    assert_eq!(backend.started(), 1, "no timed hedge in fallback mode");
    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(500))]);
}

#[test]
fn delay_fn_sets_the_delay_before_each_copy() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::ok(1, 2)]);
    let policy = Policy::builder()
        .max_copies(3)
        .delay_fn(|copy| Some(ms(copy as u64 * 5)))
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(5)), (2, ms(15))]);
}

#[test]
fn delay_fn_none_stops_timed_copies_but_not_failover() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::err(50, 101), Step::ok(1, 2)]);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let asked_in_fn = Arc::clone(&asked);
    let policy = Policy::builder()
        .max_copies(3)
        .delay_fn(move |copy| {
            asked_in_fn.lock().unwrap().push(copy);
            (copy == 1).then_some(ms(10))
        })
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    // Copy 1 at 10; copy 2 is never timed, and copy 0 never ends, so the race waits.
    assert_eq!(call.run_until(&timer, ms(1_000)), None);
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(
        *asked.lock().unwrap(),
        vec![1, 2],
        "the function runs once per copy"
    );
}

#[test]
fn a_hedge_due_at_the_end_of_time_arms_no_timer() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(1, 1)]);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(Duration::MAX)
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(
        (timer.sleeps_created(), timer.next_deadline()),
        (1, None),
        "only the copy's own sleep: a deadline that never comes is not armed"
    );
    timer.advance(Duration::MAX);
    assert_eq!(call.poll_if_woken(), None);
    assert_eq!(backend.started(), 1);
}

// --- Parallelism cap -----------------------------------------------------------------

#[test]
fn never_more_than_max_copies_start() {
    let timer = ManualTimer::new();
    let steps = (0..10).map(|k| Step::err(1, 100 + k));
    let backend = Backend::new(&timer, steps);
    let policy = policy(&timer, 4, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Err(100));
    assert_eq!(backend.started(), 4);
    assert_eq!(policy.stats().hedges, 3);
}

#[test]
fn max_copies_zero_is_clamped_to_one() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(1, 100), Step::ok(1, 1)]);
    let policy = policy(&timer, 0, 10);
    assert_eq!(policy.max_copies(), 1);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Err(100));
    assert_eq!(backend.started(), 1);
}

#[test]
fn hedge_max_copies_caps_one_call_below_its_policy() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 3, 10);

    // Capped at 2: one hedge at 10 ms, none at 20 ms.
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::ok(1, 2)]);
    let mut call = Driver::new(backend.factory().hedged(&policy).max_copies(2));
    assert_eq!(call.run_until(&timer, ms(50)), None);
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    drop(call);

    // Capped at 1 (0 is clamped to 1): sent once, no timer, still counted.
    let backend = Backend::new(&timer, [Step::ok(5, 0)]);
    let mut call = Driver::new(backend.factory().hedged(&policy).max_copies(0));
    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(timer.sleeps_created(), 3 + 1, "the copies' own sleeps only");
    assert_eq!(call.run(&timer), Ok(0));

    // Never above the policy's cap.
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::never()]);
    let mut call = Driver::new(backend.factory().hedged(&policy).max_copies(64));
    assert_eq!(call.run_until(&timer, timer.now() + ms(100)), None);
    assert_eq!(backend.started(), 3);
    drop(call);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.cancelled), (3, 1, 2));
}

// --- Fast path and lazy timer --------------------------------------------------------

#[test]
fn one_copy_allowed_arms_no_timer() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0)]);
    let policy = policy(&timer, 1, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(timer.sleeps_created(), 1, "the copy's own sleep only");
}

#[test]
fn an_original_ready_at_once_arms_no_timer() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new((|| async { Ok::<_, ()>(1) }).hedged(&policy));
    assert_eq!(call.poll(), Poll::Ready(Ok(1)));
    assert_eq!(timer.sleeps_created(), 0);
}

#[test]
fn one_timer_per_call_is_rearmed_for_later_copies() {
    let timer = ManualTimer::new();
    let steps = [
        Step::never(),
        Step::never(),
        Step::never(),
        Step::never(),
        Step::ok(0, 4),
    ];
    let backend = Backend::new(&timer, steps);
    let policy = policy(&timer, 5, 10);
    let mut call = Driver::new((|a: Attempt| backend.copy(a.index())).hedged(&policy));

    assert_eq!(call.run(&timer), Ok(4));
    // Five copy sleeps plus exactly one hedge timer for four hedges.
    assert_eq!(timer.sleeps_created(), 5 + 1);
}

#[test]
fn no_timer_is_armed_once_every_copy_started() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never()]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run_until(&timer, ms(10)), None);
    assert_eq!(backend.started(), 2);
    assert_eq!(timer.next_deadline(), None, "nothing left to wait for");
}
