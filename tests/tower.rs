//! `HedgeLayer` / `HedgeService` over hand-written services on `ManualTimer`: hedges go
//! out on the policy's schedule, each copy's service is driven to readiness before it is
//! called, and requests are copied only as often as needed.

mod common;
mod tower_support;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use common::{ms, policy, Backend, CopyFuture, Driver, Step};
use futures::executor::block_on;
use hedging::timer::ManualTimer;
use hedging::tower::{HedgeLayer, HedgeService};
use hedging::{Attempt, Verdict};
use tower::{Layer, Service, ServiceBuilder, ServiceExt};
use tower_support::Scripted;

#[test]
fn hedges_a_slow_call_inside_a_service_builder() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(2, 1)]);
    let policy = policy(&timer, 2, 10);
    let inner = Scripted::new(&backend);
    let counts = Arc::clone(&inner.counts);
    let mut service = ServiceBuilder::new()
        .layer(HedgeLayer::new(policy.clone()))
        .service(inner);

    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(42));

    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(12));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(
        *counts.requests.lock().unwrap(),
        vec![42, 42],
        "the hedge sent a copy"
    );
    assert_eq!(backend.alive(), 0, "the stalled original was dropped");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[test]
fn layer_call_hedges_one_request_through_a_readied_service_without_making_one() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(2, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut inner = Scripted::new(&backend);
    let counts = Arc::clone(&inner.counts);

    block_on(inner.ready()).unwrap();
    let mut call = Driver::new(HedgeLayer::new(policy.clone()).call(&mut inner, 42));

    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(*counts.requests.lock().unwrap(), vec![42, 42]);
    // One clone left in `inner` for its next call, one for the hedge.
    assert_eq!(counts.clones.load(SeqCst), 2);
    assert_eq!(backend.alive(), 0, "the stalled original was dropped");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[test]
fn hedge_orig_completes_first() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0)]);
    let mut service = HedgeService::new(Scripted::new(&backend), policy(&timer, 2, 10));

    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(7));

    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0))],
        "no hedge before its delay"
    );
}

#[test]
fn one_copy_allowed_passes_calls_through_without_clones() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(5, 0)]);
    let inner = Scripted::new(&backend);
    let counts = Arc::clone(&inner.counts);
    let request_copies = Arc::new(AtomicUsize::new(0));
    let copies = Arc::clone(&request_copies);
    let mut service = HedgeLayer::new(policy(&timer, 1, 10))
        .clone_request(move |r: &u32, _: Attempt| {
            copies.fetch_add(1, SeqCst);
            Some(*r)
        })
        .layer(inner);

    block_on(service.ready()).unwrap();
    assert_eq!(Driver::new(service.call(3)).run(&timer), Ok(0));
    assert_eq!(
        request_copies.load(SeqCst),
        0,
        "no request copy without a hedge"
    );
    assert_eq!(
        counts.clones.load(SeqCst),
        0,
        "no service clone without a hedge"
    );
}

#[test]
fn a_disabled_policy_sends_the_request_it_was_given_uncopied() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0)]);
    let inner = Scripted::new(&backend);
    let counts = Arc::clone(&inner.counts);
    let request_copies = Arc::new(AtomicUsize::new(0));
    let copies = Arc::clone(&request_copies);
    let policy = policy(&timer, 3, 10);
    policy.set_enabled(false);
    let mut service = HedgeLayer::new(policy.clone())
        .clone_request(move |r: &u32, _: Attempt| {
            copies.fetch_add(1, SeqCst);
            Some(*r)
        })
        .layer(inner);

    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(3));
    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(timer.next_deadline(), Some(ms(50)), "no hedge timer");
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(*counts.requests.lock().unwrap(), vec![3]);
    assert_eq!(
        request_copies.load(SeqCst),
        0,
        "the request sent is the one given"
    );
    assert_eq!(counts.clones.load(SeqCst), 0, "no service clone");
    let stats = policy.stats();
    assert_eq!(
        (stats.calls, stats.wins, stats.hedges, stats.out_of_scope),
        (1, 1, 0, 0),
        "a call, counted as one"
    );
}

/// A request that is not `Clone`.
#[derive(Debug, PartialEq)]
struct Query(u32);

/// A service taking `Query`, delegating to `Scripted`.
#[derive(Clone)]
struct QueryService(Scripted);

impl Service<Query> for QueryService {
    type Response = u32;
    type Error = u32;
    type Future = CopyFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), u32>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Query) -> CopyFuture {
        self.0.call(request.0)
    }
}

#[test]
fn clone_request_makes_each_copy_from_the_call_request_with_its_attempt() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::never(), Step::ok(1, 2)]);
    let inner = Scripted::new(&backend);
    let counts = Arc::clone(&inner.counts);
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&attempts);
    let mut service = HedgeLayer::new(policy(&timer, 3, 10))
        .clone_request(move |q: &Query, a: Attempt| {
            seen.lock().unwrap().push(a.index());
            // Each copy says which attempt it is, as a header would.
            Some(Query(q.0 + 100 * a.index() as u32))
        })
        .layer(QueryService(inner));

    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(Query(9)));

    assert_eq!(call.run(&timer), Ok(2));
    assert_eq!(*counts.requests.lock().unwrap(), vec![9, 109, 209]);
    assert_eq!(*attempts.lock().unwrap(), vec![0, 1, 2]);
}

#[test]
fn clone_request_none_for_the_original_sends_the_call_once_unhedged() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(50, 0), Step::ok(1, 1)]);
    let inner = Scripted::new(&backend);
    let counts = Arc::clone(&inner.counts);
    let policy = policy(&timer, 2, 10);
    let mut service = HedgeLayer::new(policy.clone())
        .clone_request(|_: &Query, _: Attempt| None)
        .layer(QueryService(inner));

    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(Query(4)));
    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(
        timer.next_deadline(),
        Some(ms(50)),
        "no hedge timer, only the copy's"
    );
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(*counts.requests.lock().unwrap(), vec![4]);
    assert_eq!(
        counts.clones.load(SeqCst),
        0,
        "no service clone for a call that cannot hedge"
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.hedges), (1, 1, 0));
}

#[test]
fn clone_request_none_for_a_hedge_declines_it_and_every_later_one() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(100, 0), Step::ok(100, 1), Step::ok(1, 2)]);
    let policy = policy(&timer, 3, 10);
    let mut service = HedgeLayer::new(policy.clone())
        .clone_request(|q: &Query, a: Attempt| (a.index() < 2).then_some(Query(q.0)))
        .layer(QueryService(Scripted::new(&backend)));

    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(Query(4)));
    assert_eq!(call.run(&timer), Ok(0));
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(policy.stats().hedges, 1);
}

#[test]
fn max_copies_ends_a_call_pushed_back_on_its_last_copy_at_once() {
    let timer = ManualTimer::new();
    // Copy 1 is pushed back at 15 ms, copy 0 at 20 ms; copy 2 would be declined.
    let backend = Backend::new(&timer, [Step::err(20, 7), Step::err(5, 8), Step::ok(1, 2)]);
    let policy = policy(&timer, 5, 10);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let mut service = HedgeLayer::new(policy.clone())
        .clone_request(move |q: &Query, a: Attempt| {
            seen.lock().unwrap().push((a.index(), a.max_copies()));
            (a.index() < 2).then_some(Query(q.0))
        })
        .classify(|r: &Result<u32, u32>| match r {
            Ok(_) => Verdict::Win,
            Err(_) => Verdict::RetryAfter(std::time::Duration::from_secs(1000)),
        })
        .max_copies(2)
        .layer(QueryService(Scripted::new(&backend)));

    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(Query(4)));
    assert_eq!(call.run(&timer), Err(7));
    assert_eq!(timer.now(), ms(20), "no copy is left to hold");
    assert_eq!(*asked.lock().unwrap(), vec![(0, 2), (1, 2)]);
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn when_ends_the_race_on_a_fatal_error() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::err(5, 7), Step::ok(1, 1)]);
    let policy = policy(&timer, 2, 10);
    let mut service = HedgeLayer::new(policy.clone())
        .when(|e: &u32| *e != 7)
        .layer(Scripted::new(&backend));

    block_on(service.ready()).unwrap();
    assert_eq!(Driver::new(service.call(1)).run(&timer), Err(7));
    assert_eq!(backend.started(), 1);
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn classify_can_withdraw_a_response() {
    let timer = ManualTimer::new();
    // The original answers 0, an "empty" answer; the hedge answers 1.
    let backend = Backend::new(&timer, [Step::ok(2, 0), Step::ok(1, 1)]);
    let mut service = HedgeLayer::new(policy(&timer, 2, 10))
        .classify(|r: &Result<u32, u32>| match r {
            Ok(0) => Verdict::Withdraw,
            Ok(_) => Verdict::Win,
            Err(_) => Verdict::Retry,
        })
        .layer(Scripted::new(&backend));

    block_on(service.ready()).unwrap();
    assert_eq!(Driver::new(service.call(1)).run(&timer), Ok(1));
    assert_eq!(
        backend.starts(),
        vec![(0, ms(0)), (1, ms(2))],
        "withdrawn: next copy at once"
    );
}

/// A classifier with settings of its own: errors at or above `fatal_from` end the call.
#[derive(Clone)]
struct FatalFrom {
    fatal_from: u32,
}

impl hedging::Classify<u32, u32> for FatalFrom {
    fn verdict(&mut self, result: &Result<u32, u32>) -> Verdict {
        match result {
            Ok(_) => Verdict::Win,
            Err(code) if *code >= self.fatal_from => Verdict::Fatal,
            Err(_) => Verdict::Retry,
        }
    }
}

#[test]
fn classify_takes_any_cloneable_classify_not_only_a_closure() {
    let timer = ManualTimer::new();
    // The original fails with 3 (retried: copy 1 at once), copy 1 with 9 (fatal).
    let backend = Backend::new(&timer, [Step::err(1, 3), Step::err(1, 9), Step::ok(1, 1)]);
    let policy = policy(&timer, 3, 10);
    let mut service = HedgeLayer::new(policy.clone())
        .classify(FatalFrom { fatal_from: 5 })
        .layer(Scripted::new(&backend));

    block_on(service.ready()).unwrap();
    assert_eq!(Driver::new(service.call(1)).run(&timer), Err(9));
    assert_eq!(backend.started(), 2, "the fatal error ended the call");
    assert_eq!(policy.stats().failures, 1);
}

/// Hands out readiness permits; a clone starts unready, like tower's `Buffer`, and
/// calling an instance that is not ready panics, as tower allows services to.
struct Gated {
    inner: Scripted,
    gate: Arc<Gate>,
    ready: bool,
}

#[derive(Default)]
struct Gate {
    permits: AtomicUsize,
    polls: AtomicUsize,
    fail: std::sync::atomic::AtomicBool,
    waiters: Mutex<Vec<Waker>>,
}

impl Gate {
    fn open(&self, permits: usize) {
        self.permits.fetch_add(permits, SeqCst);
        self.waiters.lock().unwrap().drain(..).for_each(Waker::wake);
    }
}

impl Clone for Gated {
    fn clone(&self) -> Self {
        Gated {
            inner: self.inner.clone(),
            gate: Arc::clone(&self.gate),
            ready: false,
        }
    }
}

impl Service<u32> for Gated {
    type Response = u32;
    type Error = u32;
    type Future = CopyFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), u32>> {
        self.gate.polls.fetch_add(1, SeqCst);
        if self.ready {
            return Poll::Ready(Ok(()));
        }
        if self.gate.fail.load(SeqCst) {
            return Poll::Ready(Err(99));
        }
        let taken = self
            .gate
            .permits
            .fetch_update(SeqCst, SeqCst, |p| p.checked_sub(1));
        if taken.is_ok() {
            self.ready = true;
            return Poll::Ready(Ok(()));
        }
        self.gate.waiters.lock().unwrap().push(cx.waker().clone());
        Poll::Pending
    }

    fn call(&mut self, request: u32) -> CopyFuture {
        assert!(self.ready, "called before poll_ready returned Ready");
        self.ready = false;
        self.inner.call(request)
    }
}

#[test]
fn each_hedge_drives_its_own_service_clone_to_readiness() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::never(), Step::ok(3, 1)]);
    let gate = Arc::new(Gate::default());
    let gated = Gated {
        inner: Scripted::new(&backend),
        gate: Arc::clone(&gate),
        ready: false,
    };
    let mut service = HedgeService::new(gated, policy(&timer, 2, 10));

    gate.open(1);
    block_on(service.ready()).unwrap();
    let mut call = Driver::new(service.call(5));
    assert_eq!(call.poll(), Poll::Pending);
    assert_eq!(backend.started(), 1);

    // The hedge is due, but its service clone has no permit: it waits, unsent.
    assert_eq!(call.run_until(&timer, ms(50)), None);
    assert_eq!(
        backend.started(),
        1,
        "a hedge is not sent before its service is ready"
    );
    let polls_while_waiting = gate.polls.load(SeqCst);

    gate.open(1);
    assert_eq!(
        call.poll_if_woken(),
        Some(Poll::Pending),
        "readiness woke the call"
    );
    assert!(gate.polls.load(SeqCst) > polls_while_waiting);
    assert_eq!(backend.starts(), vec![(0, ms(0)), (1, ms(50))]);
    assert_eq!(call.run(&timer), Ok(1));
    assert_eq!(timer.now(), ms(53));
}

#[test]
fn a_hedge_whose_service_fails_readiness_is_a_failed_copy() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(30, 0)]);
    let gate = Arc::new(Gate::default());
    let gated = Gated {
        inner: Scripted::new(&backend),
        gate: Arc::clone(&gate),
        ready: false,
    };
    let policy = policy(&timer, 2, 10);
    let mut service = HedgeService::new(gated, policy.clone());

    gate.open(1);
    block_on(service.ready()).unwrap();
    gate.fail.store(true, SeqCst);
    let mut call = Driver::new(service.call(5));

    assert_eq!(call.run(&timer), Ok(0), "the original still wins");
    assert_eq!(timer.now(), ms(30));
    assert_eq!(backend.started(), 1, "the failed hedge sent nothing");
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.wins, stats.hedge_wins), (1, 1, 0));
}

#[test]
fn readiness_errors_of_the_inner_service_pass_through() {
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, []);
    let gate = Arc::new(Gate::default());
    gate.fail.store(true, SeqCst);
    let gated = Gated {
        inner: Scripted::new(&backend),
        gate,
        ready: false,
    };
    let mut service = HedgeService::new(gated, policy(&timer, 2, 10));
    assert_eq!(block_on(service.ready()).err(), Some(99));
}

#[test]
fn response_future_is_send_for_send_services() {
    fn assert_send<T: Send>(_: &T) {}
    let timer = ManualTimer::new();
    let backend = Backend::new(&timer, [Step::ok(0, 0)]);
    let mut service = HedgeService::new(Scripted::new(&backend), policy(&timer, 2, 10));
    let future = service.call(1);
    assert_send(&future);
    assert_eq!(block_on(future), Ok(0));
}

/// Answers every request with itself, at once.
#[derive(Clone, Debug, PartialEq)]
struct Echo;

impl Service<u32> for Echo {
    type Response = u32;
    type Error = u32;
    type Future = std::future::Ready<Result<u32, u32>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), u32>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        std::future::ready(Ok(request))
    }
}

#[test]
fn layers_services_and_responses_expose_their_parts_clone_and_debug() {
    use futures::future::FusedFuture;

    let timer = ManualTimer::new();
    let layer = HedgeLayer::new(policy(&timer, 3, 10)).classify(|r: &Result<u32, u32>| match r {
        Ok(_) => Verdict::Win,
        Err(_) => Verdict::Retry,
    });
    assert_eq!(layer.policy().max_copies(), 3);
    let layer = layer.clone();
    assert!(format!("{layer:?}").starts_with("HedgeLayer { policy: Policy {"));

    let mut service = layer.layer(Echo);
    assert_eq!(service.policy().max_copies(), 3);
    assert_eq!(service.get_ref(), &Echo);
    assert_eq!(service.get_mut(), &mut Echo);
    let copy = service.clone();
    assert!(format!("{copy:?}").contains("inner: Echo"));
    assert_eq!(copy.into_inner(), Echo);

    block_on(futures::future::poll_fn(|cx| service.poll_ready(cx))).unwrap();
    let mut response = Driver::new(service.call(7));
    assert!(format!("{:?}", response.future).starts_with("ResponseFuture { hedge: Hedge {"));
    assert!(!response.future.is_terminated());
    assert_eq!(response.run(&timer), Ok(7));
    assert!(response.future.is_terminated());

    let plain = HedgeService::new(Echo, policy(&timer, 2, 10));
    assert_eq!(block_on(plain.oneshot(5)), Ok(5));
}
