//! `HedgeService`'s hedges the race did not start when they were due (the budget refused
//! them, `min_win_rate` withheld them): a failure of the original still sends them, as
//! it does a closure's. `tests/tower.rs` holds the rest of the tower contract.

mod common;
mod tower_support;

use common::{ms, run_both, Backend, Driver, Step};
use futures::executor::block_on;
use hedging::timer::ManualTimer;
use hedging::tower::HedgeLayer;
use hedging::{Budget, Hedgeable, Policy};
use tower::{Layer, Service, ServiceExt};
use tower_support::Scripted;

/// Budget refused the hedge at 10 ms (another call held the one `max_outstanding` slot);
/// at 20 ms the original fails with nothing in flight, the slot is free again, and the
/// hedge must start, as it does for a plain closure.
#[test]
fn a_hedge_refused_when_due_still_starts_after_the_original_fails() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    // Call H holds the slot from 10 ms (its hedge) to 15 ms.
    let holder = Backend::new(&timer, [Step::never(), Step::ok(5, 1)]);
    let holding = holder.factory().hedged(&policy);
    // Call T, through the layer: its hedge is refused at 10 ms; its original fails at 20 ms.
    let backend = Backend::new(&timer, [Step::err(20, 0), Step::ok(1, 1)]);
    let mut service = HedgeLayer::new(policy.clone()).layer(Scripted::new(&backend));
    block_on(service.ready()).unwrap();
    let through_layer = service.call(7);

    let (held, answer) = run_both(&timer, holding, through_layer);
    assert_eq!(held, Some(Ok(1)));
    assert_eq!(
        policy.stats().budget_denied,
        1,
        "T's hedge was refused at 10 ms"
    );
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0)), (1, ms(20))],
        "after the failure the refused hedge is asked for again, and granted"
    );
    assert_eq!(answer, Some(Ok(1)));
}

/// `min_win_rate` withheld the hedge at 10 ms; "a copy after a failure is a retry and
/// starts as before": at 20 ms the original fails and the hedge must start.
#[test]
fn a_withheld_hedge_still_starts_after_the_original_fails() {
    let timer = ManualTimer::new();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .min_win_rate(1.0)
        .timer(timer.clone())
        .build();
    // One hedged call its hedge did not win: hedges are withheld from then on.
    let losing = Backend::new(&timer, [Step::ok(15, 0), Step::never()]);
    assert_eq!(
        Driver::new(losing.factory().hedged(&policy)).run(&timer),
        Ok(0)
    );

    let start = timer.now();
    let backend = Backend::new(&timer, [Step::err(20, 0), Step::ok(1, 1)]);
    let mut service = HedgeLayer::new(policy.clone()).layer(Scripted::new(&backend));
    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(7));
    assert_eq!(
        call.run(&timer),
        Ok(1),
        "the retry after the failure answers"
    );
    assert_eq!(policy.stats().withheld, 1);
    assert_eq!(backend.starts(), vec![(0, start), (1, start + ms(20))]);
}
