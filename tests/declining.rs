//! Factories that decline a copy: `FnMut(Attempt) -> Option<Fut>`, where `None` means no
//! copy for this attempt and none after it.

mod common;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{ms, Backend, CopyFuture, Driver, Step};
use hedging::timer::ManualTimer;
use hedging::{Attempt, Budget, Hedgeable, Policy, Verdict};

struct Replica(&'static str);

impl Replica {
    fn get(&self, key: &str) -> impl Future<Output = Result<String, ()>> {
        let answer = format!("{key}@{}", self.0);
        async move { Ok(answer) }
    }
}

#[test]
fn a_declining_factory_compiles_as_written() {
    let replicas = [Replica("a"), Replica("b")];
    let key = "k";
    let policy = Policy::builder().max_copies(3).build();
    let answer = futures::executor::block_on(
        (|a: Attempt| replicas.get(a.index()).map(|r| r.get(key))).hedged(&policy),
    );
    assert_eq!(answer.unwrap(), "k@a");
}

/// Copies by `backend` for the first `replicas` attempts, `None` after; logs the attempts
/// the factory was asked about.
fn replicas(
    backend: &Backend,
    replicas: usize,
    asked: &Arc<Mutex<Vec<usize>>>,
) -> impl FnMut(Attempt) -> Option<CopyFuture> {
    let (backend, asked) = (backend.clone(), Arc::clone(asked));
    move |a: Attempt| {
        asked.lock().unwrap().push(a.index());
        (a.index() < replicas).then(|| backend.copy(a.index()))
    }
}

#[test]
fn a_declined_copy_starts_nothing_and_the_copies_in_flight_race_on() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::ok(40, 1), Step::ok(1, 2)]);
    let hooked = Arc::new(Mutex::new(Vec::new()));
    let hook_log = Arc::clone(&hooked);
    let policy = Policy::builder()
        .max_copies(4)
        .delay(ms(10))
        .on_hedge(move |a| hook_log.lock().unwrap().push(a.index()))
        .timer(timer.clone())
        .build();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut call = Driver::new(replicas(&backend, 2, &asked).hedged(&policy));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(
        *asked.lock().unwrap(),
        vec![0, 1, 2],
        "asked once about copy 2, never about 3"
    );
    assert_eq!(
        *hooked.lock().unwrap(),
        vec![1],
        "no hook for the declined copy"
    );
    assert_eq!(policy.stats().hedges, 1);
    assert_eq!(timer.now(), ms(50));
}

#[test]
fn a_declined_copy_with_nothing_in_flight_ends_with_the_lowest_failure() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(5, 7), Step::err(5, 8)]);
    let policy = Policy::builder()
        .max_copies(5)
        .delay(ms(10))
        .timer(timer.clone())
        .build();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut call = Driver::new(replicas(&backend, 2, &asked).hedged(&policy));

    assert_eq!(call.run(&timer), Err(7));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(5))]);
    assert_eq!(timer.now(), ms(10));
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn a_pushback_on_the_last_copy_after_a_decline_ends_the_call_at_once() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(50, 7), Step::err(50, 8)]);
    let policy = Policy::builder()
        .max_copies(5)
        .delay(ms(10))
        .timer(timer.clone())
        .build();
    let asked = Arc::new(Mutex::new(Vec::new()));
    // Copy 2 is declined at 20 ms: the pushbacks after it have no copy to hold.
    let classify = |r: &Result<u32, u32>| match r {
        Ok(_) => Verdict::Win,
        Err(7) => Verdict::Stop,
        Err(_) => Verdict::RetryAfter(Duration::from_secs(1000)),
    };
    let call = replicas(&backend, 2, &asked)
        .hedged(&policy)
        .classify(classify);
    let mut call = Driver::new(call);

    assert_eq!(call.run(&timer), Err(7));
    assert_eq!(timer.now(), ms(60), "the last failure ends the call");
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(*asked.lock().unwrap(), vec![0, 1, 2]);
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn a_declined_copy_never_takes_a_token_or_a_slot() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::ok(100, 1)]);
    let budget = Budget::new(0.0).burst(1.0).max_outstanding(1);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut call = Driver::new(replicas(&backend, 1, &asked).hedged(&policy));

    assert!(call.poll().is_pending());
    timer.advance(ms(10));
    assert!(call.poll().is_pending());
    assert_eq!(*asked.lock().unwrap(), vec![0, 1]);
    assert_eq!((budget.tokens(), budget.outstanding()), (1.0, 0));
    assert_eq!(policy.stats().budget_denied, 0);
    assert_eq!(call.run(&timer), Ok(0));
}

#[test]
fn a_declining_factory_is_asked_before_the_budget_and_the_hook() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::ok(100, 1)]);
    let events = Arc::new(Mutex::new(Vec::new()));
    let hook_events = Arc::clone(&events);
    // No token: the copy the factory made is refused, dropped unstarted, never hooked.
    let budget = Budget::new(0.0).burst(1.0);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(&budget)
        .on_hedge(move |a| {
            hook_events
                .lock()
                .unwrap()
                .push(format!("hook {}", a.index()))
        })
        .timer(timer.clone())
        .build();
    let factory = |events: Arc<Mutex<Vec<String>>>, backend: Backend| {
        move |a: Attempt| {
            events.lock().unwrap().push(format!("make {}", a.index()));
            Some(backend.copy(a.index()))
        }
    };

    let call = factory(Arc::clone(&events), backend.clone()).hedged(&policy);
    assert_eq!(Driver::new(call).run(&timer), Ok(0));
    assert_eq!(*events.lock().unwrap(), ["make 0", "make 1", "hook 1"]);

    events.lock().unwrap().clear();
    let call = factory(Arc::clone(&events), backend.clone()).hedged(&policy);
    assert_eq!(Driver::new(call).run(&timer), Ok(0));
    assert_eq!(
        *events.lock().unwrap(),
        ["make 0", "make 1"],
        "refused: no hook"
    );
    assert_eq!(policy.stats().budget_denied, 1);
    assert_eq!(backend.alive(), 0);
}

#[test]
#[should_panic(expected = "the original copy cannot be declined")]
fn declining_the_original_panics_with_a_message() {
    let policy = Policy::builder().build();
    let _ = futures::executor::block_on(
        (|_: Attempt| None::<std::future::Ready<Result<(), ()>>>).hedged(&policy),
    );
}
