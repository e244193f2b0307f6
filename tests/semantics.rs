//! One test (at least) per row of the contracts table, driven by `ManualTimer` and
//! polled only when woken.

mod common;

use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use common::{ms, policy, Backend, Driver, Step};
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Hedgeable, Policy, Verdict};

// --- First win returns ---------------------------------------------------------------

#[test]
fn hedge_orig_completes_first() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(timer.now(), ms(5));
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0))],
        "no hedge before its delay"
    );
    assert_eq!(policy.stats().hedges, 0);
}

#[test]
fn hedge_completes_first() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(2, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(12));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.hedge_wins, stats.wins), (1, 1, 1));
}

#[test]
fn hedge_orig_completes_after_hedge_started() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(15, 0), Step::ok(20, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(timer.now(), ms(15));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(policy.stats().hedge_wins, 0);
}

#[test]
fn completes_before_hedge_arms_one_timer_and_drops_it() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    // The copy's own sleep plus the hedge timer.
    assert_eq!(timer.live_sleeps(), 2);
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(
        timer.live_sleeps(),
        0,
        "the hedge timer is dropped with the call's end"
    );
}

#[test]
fn losers_are_dropped_before_poll_returns() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    // The Hedge is still alive, yet both losers are gone.
    assert_eq!(backend.started(), 3);
    assert_eq!(backend.dropped(), 3);
    assert_eq!(timer.live_sleeps(), 0);
}

#[test]
fn the_first_win_in_index_order_wins_a_tie() {
    let timer = ManualTimer::new();
    // Copy 1 starts at 10 and finishes at 20, with copy 0.
    let backend = Backend::new(&timer, [Step::ok(20, 0), Step::ok(10, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Ok(0));
}

#[test]
fn a_kept_failure_is_dropped_before_poll_returns_the_win() {
    /// An error holding a resource: counts its drops.
    #[derive(Debug)]
    struct Held(Arc<Mutex<usize>>);
    impl Drop for Held {
        fn drop(&mut self) {
            if let Ok(mut dropped) = self.0.lock() {
                *dropped += 1;
            }
        }
    }

    let timer = ManualTimer::new();
    let dropped = Arc::new(Mutex::new(0));
    let policy = policy(&timer, 2, 10);
    let factory = {
        let (timer, dropped) = (timer.clone(), Arc::clone(&dropped));
        move |a: Attempt| {
            let sleep = timer.sleep(ms(5));
            let held = Held(Arc::clone(&dropped));
            async move {
                sleep.await;
                // The original fails (its error is kept); the hedge it starts wins.
                if a.is_hedge() {
                    drop(held);
                    Ok(a.index())
                } else {
                    Err(held)
                }
            }
        }
    };
    let mut call = Driver::new(factory.hedged(&policy));
    assert_eq!(call.run(&timer).map_err(drop), Ok(1));
    // The `Hedge` is still alive; the kept failure is not.
    assert_eq!(*dropped.lock().unwrap(), 2);
}

// --- Output type ---------------------------------------------------------------------

#[test]
fn output_type_is_the_copies_result() {
    #[derive(Debug, PartialEq)]
    struct NotFound(&'static str);

    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let answer: Result<Vec<u8>, NotFound> = futures::executor::block_on(
        (|| async { Err(NotFound("key")) })
            .hedged(&policy)
            .when(|_| false),
    );
    assert_eq!(answer, Err(NotFound("key")));
}

// --- All failed ----------------------------------------------------------------------

#[test]
fn all_failed_returns_lowest_index_error() {
    let timer = ManualTimer::new();
    // Copy 0 fails last, copy 2 first: the error of copy 0 still comes back.
    let backend = Backend::new(
        &timer,
        [Step::err(35, 100), Step::err(20, 101), Step::err(5, 102)],
    );
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Err(100));
    assert_eq!(backend.started(), 3);
    let stats = policy.stats();
    assert_eq!((stats.failures, stats.wins), (1, 0));
}

#[test]
fn a_later_win_beats_earlier_failures() {
    let timer = ManualTimer::new();
    let backend = Backend::new(
        &timer,
        [Step::err(1, 100), Step::err(1, 101), Step::ok(1, 2)],
    );
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Ok(2));
}

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

// --- No spawn ------------------------------------------------------------------------

#[test]
fn copies_are_polled_with_the_callers_waker() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(7, 0)]);
    let policy = policy(&timer, 1, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(call.wakes(), 0);
    timer.advance(ms(7));
    // The copy's sleep woke the caller's waker itself: nothing in between.
    assert_eq!(call.wakes(), 1);
    assert_eq!(call.poll(), Poll::Ready(Ok(0)));
}

#[test]
fn nothing_runs_after_the_hedge_is_dropped() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::ok(50, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run_until(&timer, ms(20)), None);
    let polls = backend.polls();
    drop(call);

    timer.advance(ms(100));
    assert_eq!(backend.polls(), polls);
    assert_eq!(backend.started(), 2);
}

// --- Hedge probability ---------------------------------------------------------------

fn hedges_over(calls: u32, probability: f64) -> u64 {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(1))
        .hedge_probability(probability)
        .timer(timer.clone())
        .build();
    for _ in 0..calls {
        let backend = Backend::new(&timer, [Step::ok(2, 0), Step::ok(5, 1)]);
        let mut call = Driver::new(backend.factory().hedged(&policy));
        assert_eq!(call.run(&timer), Ok(0));
    }
    policy.stats().hedges
}

#[test]
fn hedge_probability_zero_never_hedges() {
    assert_eq!(hedges_over(200, 0.0), 0);
}

#[test]
fn hedge_probability_one_always_hedges() {
    assert_eq!(hedges_over(200, 1.0), 200);
}

#[test]
fn hedge_probability_is_rolled_once_per_call() {
    let hedges = hedges_over(2_000, 0.25);
    // 500 expected, standard deviation about 19: a wide band that still fails for 0 or 1.
    assert!(
        (350..=650).contains(&hedges),
        "{hedges} hedges for p = 0.25"
    );
}

#[test]
fn a_missed_roll_runs_the_original_alone_even_after_a_failure() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(1, 100), Step::ok(1, 1)]);
    let policy = Policy::builder()
        .max_copies(2)
        .hedge_probability(0.0)
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Err(100));
    assert_eq!(backend.started(), 1);
}

// --- Hooks ---------------------------------------------------------------------------

#[test]
fn on_hedge_runs_just_before_each_hedge_starts() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::err(1, 101), Step::ok(1, 2)]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hook_backend = backend.clone();
    let hook_seen = Arc::clone(&seen);
    let policy = Policy::builder()
        .max_copies(3)
        .delay(ms(10))
        .on_hedge(move |attempt: &Attempt| {
            // Runs before the copy exists: the backend has seen `index` copies so far.
            assert_eq!(hook_backend.started(), attempt.index());
            hook_seen.lock().unwrap().push(*attempt);
        })
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(2));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "once per hedge, never for the original");
    assert_eq!((seen[0].index(), seen[0].elapsed()), (1, ms(10)));
    assert_eq!((seen[1].index(), seen[1].elapsed()), (2, ms(20)));
    assert!(seen.iter().all(|a| a.is_hedge() && a.max_copies() == 3));
}

#[test]
fn attempt_describes_each_copy() {
    let timer = ManualTimer::new();
    // Copy 0 fails at 4 and copy 1 at 7: each failure starts the next copy at once.
    let backend = Backend::new(
        &timer,
        [Step::err(4, 100), Step::err(3, 101), Step::ok(1, 2)],
    );
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let policy = policy(&timer, 3, 10);
    let mut factory = backend.factory();
    let seen = Arc::clone(&attempts);
    let mut call = Driver::new(
        (move |attempt: Attempt| {
            seen.lock().unwrap().push(attempt);
            factory(attempt)
        })
        .hedged(&policy),
    );

    assert_eq!(call.run(&timer), Ok(2));
    let attempts = attempts.lock().unwrap();
    let summary: Vec<_> = attempts
        .iter()
        .map(|a| (a.index(), a.is_hedge(), a.elapsed()))
        .collect();
    assert_eq!(
        summary,
        vec![(0, false, ms(0)), (1, true, ms(4)), (2, true, ms(7))]
    );
}

// --- Stats ---------------------------------------------------------------------------

#[test]
fn stats_add_up_once_no_call_is_in_flight() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let scripts: [&[Step]; 4] = [
        &[Step::ok(1, 0)],
        &[Step::never(), Step::ok(1, 1)],
        &[Step::err(1, 100), Step::err(1, 101)],
        &[Step::never(), Step::never()],
    ];
    for steps in scripts {
        let backend = Backend::new(&timer, steps.iter().copied());
        let mut call = Driver::new(backend.factory().hedged(&policy));
        let _ = call.run_until(&timer, timer.now() + ms(30));
    }
    let stats = policy.stats();
    assert_eq!(stats.calls, 4);
    assert_eq!((stats.wins, stats.failures, stats.cancelled), (2, 1, 1));
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
    assert_eq!((stats.hedges, stats.hedge_wins), (3, 1));
}

#[test]
fn stats_are_shared_by_clones_and_reset_to_zero() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let clone = policy.clone();
    futures::executor::block_on((|| async { Ok::<_, ()>(()) }).hedged(&clone)).unwrap();
    futures::executor::block_on((|| async { Ok::<_, ()>(()) }).hedged(clone)).unwrap();
    assert_eq!(policy.stats().calls, 2);

    policy.reset_stats();
    assert_eq!(policy.stats(), hedging::Stats::default());
    futures::executor::block_on((|| async { Err::<(), _>(()) }).hedged(&policy)).unwrap_err();
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 1));
}

#[test]
fn a_call_dropped_before_its_first_poll_is_not_counted() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    drop((|| async { Ok::<_, ()>(()) }).hedged(&policy));
    assert_eq!(policy.stats(), hedging::Stats::default());
}

#[test]
fn reset_stats_mid_call_keeps_calls_equal_to_their_outcomes() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.poll(), Poll::Pending);
    policy.reset_stats();
    assert_eq!(call.run(&timer), Ok(0));
    let stats = policy.stats();
    assert_eq!(stats.calls, stats.wins + stats.failures + stats.cancelled);
    assert_eq!(
        (stats.calls, stats.wins),
        (1, 1),
        "a call counts where it ends"
    );
}

#[test]
fn requests_out_of_a_layers_scope_are_counted_apart_from_calls() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    policy.count_out_of_scope();
    policy.clone().count_out_of_scope();
    let stats = policy.stats();
    assert_eq!((stats.out_of_scope, stats.calls), (2, 0), "not calls");
    futures::executor::block_on((|| async { Ok::<_, ()>(()) }).hedged(&policy)).unwrap();
    assert_eq!((policy.stats().out_of_scope, policy.stats().calls), (2, 1));
    policy.reset_stats();
    assert_eq!(policy.stats(), hedging::Stats::default());
}

// --- Classification ------------------------------------------------------------------

#[test]
fn a_non_retryable_error_ends_the_race() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::err(1, 404), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).when(|e: &u32| *e != 404));

    assert_eq!(call.run(&timer), Err(404));
    assert_eq!(timer.now(), ms(11));
    assert_eq!(backend.started(), 2);
    assert_eq!(
        backend.alive(),
        0,
        "the original was dropped with the fatal error"
    );
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn a_retryable_error_keeps_racing() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(1, 503), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).when(|e: &u32| *e == 503));
    assert_eq!(call.run(&timer), Ok(1));
}

#[test]
fn classify_can_retry_an_ok_and_win_an_err() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(1, 0), Step::err(1, 7)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(
        |r: &Result<u32, u32>| match r {
            Ok(0) => Verdict::Retry,
            _ => Verdict::Win,
        },
    ));
    assert_eq!(call.run(&timer), Err(7));
    assert_eq!(policy.stats().wins, 1);
}

#[test]
fn withdrawn_copies_are_neither_wins_nor_failures() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(1, 0), Step::err(1, 101), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(
        |r: &Result<u32, u32>| match r {
            Ok(0) => Verdict::Withdraw,
            Ok(_) => Verdict::Win,
            Err(_) => Verdict::Retry,
        },
    ));
    // Copy 0 withdraws, which starts copy 1 at once; copy 1 fails, copy 2 wins.
    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(1)), (2, ms(2))]);
}

#[test]
fn a_race_of_withdrawals_returns_the_lowest_index_one_and_a_failure_beats_them() {
    let timer = ManualTimer::new();
    let withdraw_all = |r: &Result<u32, u32>| match r {
        Err(101) => Verdict::Retry,
        _ => Verdict::Withdraw,
    };

    let backend = Backend::new(&timer, [Step::ok(5, 0), Step::ok(1, 1)]);
    let policy = Policy::builder()
        .max_copies(2)
        .parallel()
        .timer(timer.clone())
        .build();
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(withdraw_all));
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(policy.stats().failures, 1);

    let backend = Backend::new(&timer, [Step::ok(1, 0), Step::err(5, 101)]);
    let mut call = Driver::new(backend.factory().hedged(&policy).classify(withdraw_all));
    assert_eq!(call.run(&timer), Err(101));
}

// --- Poll after completion -----------------------------------------------------------

#[test]
#[should_panic(expected = "`Hedge` polled after completion")]
fn polling_after_completion_panics() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new((|| async { Ok::<_, ()>(()) }).hedged(&policy));
    assert!(call.poll().is_ready());
    let _ = call.poll();
}

#[test]
fn is_terminated_once_ready() {
    use futures::future::FusedFuture;
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(1, 0)]);
    let policy = policy(&timer, 2, 10);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert!(!call.future.is_terminated());
    assert_eq!(call.poll(), Poll::Pending);
    assert!(!call.future.is_terminated());
    assert_eq!(call.run(&timer), Ok(0));
    assert!(call.future.is_terminated());
}

// --- Send and 'static ----------------------------------------------------------------

#[test]
fn an_owned_policy_makes_a_send_static_future() {
    fn assert_send_static<F: std::future::Future + Send + 'static>(future: F) -> F {
        future
    }
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let call = assert_send_static(backend.factory().hedged(policy.clone()));
    let handle = std::thread::spawn(move || Driver::new(call).run(&timer));
    assert_eq!(handle.join().unwrap(), Ok(1));
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[test]
fn debug_output_names_the_state_without_requiring_debug_closures() {
    let timer = ManualTimer::new();
    let policy = policy(&timer, 2, 10);
    let call = (|| async { Ok::<_, ()>(()) })
        .hedged(&policy)
        .when(|_: &()| true);
    let text = format!("{call:?}");
    assert!(
        text.starts_with("Hedge {") && text.contains("phase: Idle"),
        "{text}"
    );
    let text = format!("{policy:?}");
    assert!(
        text.contains("max_copies: 2") && text.contains("Fixed(10ms)"),
        "{text}"
    );
    let text = format!("{:?}", Policy::builder().parallel());
    assert!(text.contains("Parallel"), "{text}");
}

// --- Panics --------------------------------------------------------------------------

fn catching_policy(timer: &ManualTimer, max_copies: usize) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(ms(10))
        .catch_unwind(true)
        .timer(timer.clone())
        .build()
}

#[test]
fn a_panicking_copy_propagates_by_default() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::panic(1)]);
    let policy = policy(&timer, 2, 10);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Driver::new(backend.factory().hedged(&policy)).run(&timer)
    }));

    let panic = outcome.expect_err("the copy's panic reaches the caller");
    assert_eq!(
        panic.downcast_ref::<&str>(),
        Some(&"scripted copy panicked")
    );
    assert_eq!(backend.alive(), 0, "unwinding dropped the other copy");
    assert_eq!(policy.stats().cancelled, 1);
}

#[test]
fn catch_unwind_turns_a_panicking_copy_into_a_failed_copy() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(1), Step::ok(2, 1)]);
    let policy = catching_policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy));

    assert_eq!(call.run(&timer), Ok(1));
    // The panic at 1 ms counted as a failure: the next copy started at once.
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(1))]);
}

#[test]
fn catch_unwind_prefers_an_error_to_a_panic() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(1), Step::err(1, 101)]);
    let policy = catching_policy(&timer, 2);
    let mut call = Driver::new(backend.factory().hedged(&policy));
    assert_eq!(call.run(&timer), Err(101));
}

#[test]
fn catch_unwind_resumes_the_lowest_index_panic_when_only_panics_are_left() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::panic(5), Step::panic(1)]);
    let policy = catching_policy(&timer, 2);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Driver::new(backend.factory().hedged(&policy)).run(&timer)
    }));

    assert!(outcome.is_err(), "a panic, not a made-up error");
    assert_eq!(backend.alive(), 0);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.cancelled), (1, 1, 0));
}

// --- No lost wake-ups ----------------------------------------------------------------

#[test]
fn a_hedge_polled_only_when_woken_always_finishes() {
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    for scenario in 0..500 {
        let timer = ManualTimer::new();
        let max_copies = rng.usize(1..=4);
        let steps: Vec<Step> = (0..max_copies)
            .map(|k| match rng.u8(0..3) {
                0 => Step::ok(rng.u64(0..40), k as u32),
                1 => Step::err(rng.u64(0..40), 100 + k as u32),
                _ => Step::ok(rng.u64(0..40) + 40, k as u32),
            })
            .collect();
        let builder = Policy::builder()
            .max_copies(max_copies)
            .timer(timer.clone());
        let policy = match rng.u8(0..4) {
            0 => builder.parallel(),
            1 => builder.fallback(),
            _ => builder
                .delay(ms(rng.u64(1..20)))
                .max_delay(ms(rng.u64(0..30))),
        }
        .build();
        let backend = Backend::new(&timer, steps.clone());
        let mut call = Driver::new(backend.factory().hedged(&policy));

        // `run` panics with "stalled" if the future is pending, not woken, and no timer is left.
        let output = call.run(&timer);
        assert!(
            backend.started() <= max_copies,
            "scenario {scenario}: {steps:?}"
        );
        assert_eq!(
            backend.alive(),
            0,
            "scenario {scenario}: a copy outlived the call"
        );
        assert_eq!(
            timer.live_sleeps(),
            0,
            "scenario {scenario}: the timer outlived the call"
        );
        let any_ok = steps[..backend.started()]
            .iter()
            .any(|s| matches!(s.end, common::End::Ok(_)));
        assert_eq!(
            output.is_ok(),
            any_ok,
            "scenario {scenario}: {steps:?} gave {output:?}"
        );
    }
}
