//! What the budget tests share: copies that end after a latency on a `ManualTimer`, the
//! policy they hedge with, and calls that ask the budget.

#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::common::{ms, Driver};
use hedging::timer::{ManualTimer, Timer};
use hedging::{Attempt, Budget, Hedgeable, Policy};

pub type Copy = Pin<Box<dyn Future<Output = Result<usize, usize>> + Send>>;

/// A copy that ends after `latency`: `Ok(index)`, or `Err(index)` if `fails`.
pub fn copy(timer: &ManualTimer, index: usize, latency: Duration, fails: bool) -> Copy {
    let sleep = timer.sleep(latency);
    Box::pin(async move {
        sleep.await;
        if fails {
            Err(index)
        } else {
            Ok(index)
        }
    })
}

/// A factory whose original takes `original` and whose hedges take `hedge`.
pub fn factory(
    timer: &ManualTimer,
    original: Duration,
    hedge: Duration,
) -> impl FnMut(Attempt) -> Copy {
    let timer = timer.clone();
    move |a: Attempt| {
        copy(
            &timer,
            a.index(),
            if a.index() == 0 { original } else { hedge },
            false,
        )
    }
}

pub fn policy(timer: &ManualTimer, budget: &Budget) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(budget)
        .timer(timer.clone())
        .build()
}

/// Starts three calls whose originals take 100 ms and whose hedges take `hedge`, then
/// moves the clock to the 10 ms delay, when each asks the budget for its hedge. Every
/// call is still pending; they stay alive, holding their slots, until dropped.
pub fn three_calls_past_the_delay<'p>(
    timer: &ManualTimer,
    policy: &'p Policy<ManualTimer>,
    hedge: Duration,
) -> Vec<Driver<impl Future<Output = Result<usize, usize>> + 'p>> {
    let mut calls: Vec<_> = (0..3)
        .map(|_| Driver::new(factory(timer, ms(100), hedge).hedged(policy)))
        .collect();
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    timer.advance(ms(10));
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    calls
}

/// One call whose original takes 100 ms and whose hedge takes 1 ms: `Ok(1)` after 11 ms
/// when the hedge is allowed, `Ok(0)` after 100 ms when it is refused.
pub fn slow_call(timer: &ManualTimer, policy: &Policy<ManualTimer>) -> Result<usize, usize> {
    Driver::new(factory(timer, ms(100), ms(1)).hedged(policy)).run(timer)
}

/// One call answered at once: it asks the budget nothing and earns.
pub fn instant_call(policy: &Policy<ManualTimer>) {
    let answer: Result<u8, ()> = futures::executor::block_on((|| async { Ok(0) }).hedged(policy));
    assert_eq!(answer, Ok(0));
}

/// Starts `count` calls whose originals and hedges take 100 ms, moves the clock 10 ms to
/// their delay, when each asks the budget at the same instant, and keeps them alive.
pub fn calls_past_the_delay<'p>(
    timer: &ManualTimer,
    policy: &'p Policy<ManualTimer>,
    count: usize,
) -> Vec<Driver<impl Future<Output = Result<usize, usize>> + 'p>> {
    let mut calls: Vec<_> = (0..count)
        .map(|_| Driver::new(factory(timer, ms(100), ms(100)).hedged(policy)))
        .collect();
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    timer.advance(ms(10));
    calls
        .iter_mut()
        .for_each(|call| assert!(call.poll().is_pending()));
    calls
}

/// A call whose every copy fails at 1 ms (`Err(index)`), under `policy`.
pub fn failing_call(timer: &ManualTimer, policy: &Policy<ManualTimer>) -> Result<usize, usize> {
    let failing = {
        let timer = timer.clone();
        move |a: Attempt| copy(&timer, a.index(), ms(1), true)
    };
    Driver::new(failing.hedged(policy)).run(timer)
}
