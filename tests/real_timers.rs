//! Smoke tests of the timers on the real clock, with generous bounds: each sleeps,
//! re-arms, and drives one hedge. Everything else drives time with `ManualTimer`.

use std::future::{pending, Future};
use std::pin::pin;
use std::time::{Duration, Instant};

use hedging::timer::Timer;
use hedging::{Attempt, Hedgeable, Policy};

const MS: Duration = Duration::from_millis(1);
/// Far above any scheduling noise on a loaded machine, far below the hour a broken
/// re-arm would wait.
const GENEROUS: Duration = Duration::from_secs(20);

/// Sleeps, re-arms a one-hour sleep to 1 ms, and hedges a call whose original never
/// answers.
fn smoke<T: Timer>(timer: T) {
    let started = timer.now();
    let wall = Instant::now();
    run(timer.sleep(2 * MS));
    assert!(
        timer.now() - started >= 2 * MS,
        "now() moves with the sleep"
    );

    let mut sleep = pin!(timer.sleep(Duration::from_secs(3600)));
    timer.reset(sleep.as_mut(), MS);
    run(sleep);
    assert!(
        wall.elapsed() < GENEROUS,
        "reset moved the one-hour deadline"
    );

    let policy = Policy::builder()
        .max_copies(2)
        .delay(MS)
        .timer(timer)
        .build();
    let answer = run((|attempt: Attempt| async move {
        if attempt.is_hedge() {
            Ok::<_, ()>(attempt.index())
        } else {
            pending().await
        }
    })
    .hedged(&policy));
    assert_eq!(answer, Ok(1), "the hedge answered for the stuck original");
    assert_eq!(policy.stats().hedge_wins, 1);
    assert!(wall.elapsed() < GENEROUS);
}

/// Any executor will do: the timers need no particular runtime.
fn run<F: Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

#[cfg(feature = "futures-timer")]
#[test]
fn futures_timer_sleeps_rearms_and_drives_a_hedge() {
    let timer = hedging::timer::FuturesTimer::new();
    assert_eq!(format!("{timer:?}"), "FuturesTimer");
    smoke(timer);
}

#[cfg(feature = "async-io")]
#[test]
fn async_io_timer_sleeps_rearms_and_drives_a_hedge() {
    let timer = hedging::timer::AsyncIoTimer::new();
    assert_eq!(format!("{timer:?}"), "AsyncIoTimer");
    let sleep = timer.sleep(Duration::from_secs(1));
    assert!(format!("{sleep:?}").starts_with("AsyncIoSleep"));
    drop(sleep);
    smoke(timer);
}
