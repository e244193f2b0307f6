//! `tower::Replicas` behind `HedgeService`, on `ManualTimer`: copy k of a call reaches
//! replica `(first + k) mod n` with `first` moving on by one per call; each copy readies
//! its own replica, and one that stalls or refuses holds back only its own copy.

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use common::{ms, policy, Driver};
use futures::executor::block_on;
use hedging::timer::{ManualTimer, Timer};
use hedging::tower::{HedgeLayer, HedgeService, Replicas};
use tower::{Layer, Service, ServiceExt};

/// What a replica does with each request it is sent.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mood {
    /// Answers after this many milliseconds.
    Answers(u64),
    /// Is never ready.
    Stalls,
    /// Fails readiness at once.
    Refuses,
}

/// Every request each replica was sent, in order: (replica, request).
type Sent = Arc<Mutex<Vec<(usize, u32)>>>;

#[derive(Clone, Debug)]
struct Replica {
    id: usize,
    mood: Mood,
    timer: ManualTimer,
    sent: Sent,
    /// Readiness polls this replica saw, over every clone.
    readied: Arc<AtomicUsize>,
}

impl Service<u32> for Replica {
    type Response = (usize, u32);
    type Error = (usize, &'static str);
    type Future = Pin<Box<dyn Future<Output = Result<(usize, u32), (usize, &'static str)>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.readied.fetch_add(1, SeqCst);
        match self.mood {
            Mood::Answers(_) => Poll::Ready(Ok(())),
            Mood::Stalls => Poll::Pending,
            Mood::Refuses => Poll::Ready(Err((self.id, "refused"))),
        }
    }

    fn call(&mut self, request: u32) -> Self::Future {
        self.sent.lock().unwrap().push((self.id, request));
        let Mood::Answers(after) = self.mood else {
            panic!("replica {} called while not ready", self.id)
        };
        let sleep = self.timer.sleep(ms(after));
        let id = self.id;
        Box::pin(async move {
            sleep.await;
            Ok((id, request))
        })
    }
}

struct Set {
    timer: ManualTimer,
    sent: Sent,
    readied: Vec<Arc<AtomicUsize>>,
    replicas: Replicas<Replica>,
}

fn set(moods: &[Mood]) -> Set {
    let timer = ManualTimer::new();
    let sent = Sent::default();
    let readied: Vec<_> = moods.iter().map(|_| Arc::default()).collect();
    let replicas = Replicas::new(moods.iter().enumerate().map(|(id, &mood)| Replica {
        id,
        mood,
        timer: timer.clone(),
        sent: Arc::clone(&sent),
        readied: Arc::clone(&readied[id]),
    }));
    Set {
        timer,
        sent,
        readied,
        replicas,
    }
}

/// Three replicas that answer in 100 ms, behind a layer that sends up to three copies
/// 10 ms apart: every copy of a call goes out before the original answers.
fn three_slow_replicas() -> (
    ManualTimer,
    Sent,
    HedgeService<Replicas<Replica>, ManualTimer>,
) {
    let Set {
        timer,
        sent,
        replicas,
        ..
    } = set(&[Mood::Answers(100); 3]);
    let service = HedgeLayer::new(policy(&timer, 3, 10)).layer(replicas);
    (timer, sent, service)
}

#[test]
fn copy_k_reaches_replica_first_plus_k_and_first_moves_on_by_one_per_call() {
    let (timer, sent, mut service) = three_slow_replicas();

    for call in 0..4 {
        block_on(service.ready()).unwrap();
        let mut response = Driver::new(service.call(call));
        // All three copies go out (10 ms apart); the original answers first, at 100 ms.
        let started = timer.now();
        assert_eq!(response.run(&timer), Ok(((call as usize) % 3, call)));
        assert_eq!(timer.now() - started, ms(100));
    }

    let sent = sent.lock().unwrap().clone();
    assert_eq!(
        sent,
        [
            (0, 0),
            (1, 0),
            (2, 0),
            (1, 1),
            (2, 1),
            (0, 1),
            (2, 2),
            (0, 2),
            (1, 2),
            (0, 3),
            (1, 3),
            (2, 3),
        ],
        "each call's copies go round the set from the replica after the last call's first"
    );
}

#[test]
fn a_hedge_rescues_a_call_from_a_slow_replica() {
    let Set {
        timer,
        sent,
        replicas,
        ..
    } = set(&[Mood::Answers(500), Mood::Answers(3), Mood::Answers(3)]);
    let policy = policy(&timer, 2, 10);
    let mut service = HedgeLayer::new(policy.clone()).layer(replicas);

    block_on(service.ready()).unwrap();
    let mut response = Driver::new(service.call(7));

    assert_eq!(response.run(&timer), Ok((1, 7)), "the hedge, on replica 1");
    assert_eq!(timer.now(), ms(13));
    assert_eq!(*sent.lock().unwrap(), [(0, 7), (1, 7)]);
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[test]
fn a_stalled_replica_holds_back_only_its_own_copy() {
    let Set {
        timer,
        sent,
        readied,
        replicas,
    } = set(&[Mood::Stalls, Mood::Answers(3), Mood::Answers(3)]);
    let mut service = HedgeLayer::new(policy(&timer, 2, 10)).layer(replicas);

    // The set is ready though replica 0 is not: the original waits for it in its future.
    block_on(service.ready()).unwrap();
    let mut response = Driver::new(service.call(7));
    assert_eq!(response.poll(), Poll::Pending);
    assert!(
        readied[0].load(SeqCst) >= 1,
        "the original readies replica 0"
    );

    assert_eq!(response.run(&timer), Ok((1, 7)));
    assert_eq!(timer.now(), ms(13), "the hedge, sent on time, answered");
    assert_eq!(
        *sent.lock().unwrap(),
        [(1, 7)],
        "replica 0 was never called"
    );
}

#[test]
fn a_refusing_replica_is_skipped_at_once() {
    let Set {
        timer,
        sent,
        replicas,
        ..
    } = set(&[Mood::Refuses, Mood::Answers(3), Mood::Answers(3)]);
    let policy = policy(&timer, 3, 10);
    let mut service = HedgeLayer::new(policy.clone()).layer(replicas);

    block_on(service.ready()).unwrap();
    let mut response = Driver::new(service.call(7));

    assert_eq!(response.run(&timer), Ok((1, 7)));
    assert_eq!(
        timer.now(),
        ms(3),
        "the next copy started with no delay when replica 0 refused"
    );
    assert_eq!(*sent.lock().unwrap(), [(1, 7)]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins), (1, 1));
}

#[test]
fn every_replica_refusing_fails_the_call_with_the_first_refusal() {
    let Set {
        timer,
        readied,
        replicas,
        ..
    } = set(&[Mood::Refuses; 3]);
    let mut service = HedgeLayer::new(policy(&timer, 3, 10)).layer(replicas);

    block_on(service.ready()).unwrap();
    let mut response = Driver::new(service.call(7));

    // Every copy failed: the lowest-index failure, the original's, is the call's.
    assert_eq!(response.run(&timer), Err((0, "refused")));
    assert_eq!(timer.now(), ms(0), "three refusals, no waiting");
    let readied: Vec<_> = readied.iter().map(|r| r.load(SeqCst)).collect();
    assert_eq!(readied, [1, 1, 1], "each copy asked its own replica once");
}

#[test]
fn replicas_of_one_service_send_every_copy_to_it() {
    let Set {
        timer,
        sent,
        replicas,
        ..
    } = set(&[Mood::Answers(25)]);
    let mut service = HedgeLayer::new(policy(&timer, 3, 10)).layer(replicas);

    block_on(service.ready()).unwrap();
    let mut response = Driver::new(service.call(7));

    assert_eq!(response.run(&timer), Ok((0, 7)));
    assert_eq!(
        timer.now(),
        ms(25),
        "the original, as the bare service would"
    );
    assert_eq!(*sent.lock().unwrap(), [(0, 7), (0, 7), (0, 7)]);
}

#[test]
fn a_call_that_may_not_hedge_still_moves_first_on() {
    let Set {
        timer,
        sent,
        replicas,
        ..
    } = set(&[Mood::Answers(1); 3]);
    let mut service = HedgeLayer::new(policy(&timer, 1, 10)).layer(replicas);

    for call in 0..4 {
        block_on(service.ready()).unwrap();
        assert_eq!(
            Driver::new(service.call(call)).run(&timer),
            Ok((call as usize % 3, call))
        );
    }
    assert_eq!(sent.lock().unwrap().len(), 4, "one copy per call");
}

#[test]
fn on_its_own_replicas_is_a_round_robin_over_every_handle() {
    let Set {
        timer,
        sent,
        replicas,
        ..
    } = set(&[Mood::Answers(0); 3]);
    let mut one = replicas.handle();
    let mut two = replicas;

    for request in 0..4 {
        let handle = if request == 1 { &mut two } else { &mut one };
        block_on(handle.ready()).unwrap();
        let response = block_on(handle.call(request));
        assert_eq!(response, Ok((request as usize % 3, request)));
    }
    assert_eq!(*sent.lock().unwrap(), [(0, 0), (1, 1), (2, 2), (0, 3)]);
    drop(timer);
}

#[test]
fn calls_in_flight_together_each_spread_their_copies_from_their_own_first() {
    let (timer, sent, mut service) = three_slow_replicas();

    // Two calls sent before either hedges: their hedges are made interleaved, call by
    // call, as the timer fires for each.
    block_on(service.ready()).unwrap();
    let mut a = Driver::new(service.call(1));
    block_on(service.ready()).unwrap();
    let mut b = Driver::new(service.call(2));
    assert_eq!((a.poll(), b.poll()), (Poll::Pending, Poll::Pending));
    for _ in 0..2 {
        timer.advance(ms(10));
        assert_eq!((a.poll(), b.poll()), (Poll::Pending, Poll::Pending));
    }
    assert_eq!(
        sent.lock().unwrap().len(),
        6,
        "every copy of both calls was sent"
    );
    assert_eq!(a.run(&timer), Ok((0, 1)));
    assert_eq!(b.run(&timer), Ok((1, 2)));

    let mut sent = sent.lock().unwrap().clone();
    sent.sort_by_key(|&(replica, request)| (request, replica));
    assert_eq!(
        sent,
        [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)],
        "each call reached every replica once"
    );
}

#[test]
#[should_panic(expected = "Replicas::new needs at least one service")]
fn an_empty_set_is_refused() {
    let _ = Replicas::<Replica>::new([]);
}

#[test]
fn replicas_are_send_sync_and_debug_and_their_hedge_service_is_clone() {
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    fn assert_clone<T: Clone>(_: &T) {}
    let Set {
        timer, replicas, ..
    } = set(&[Mood::Answers(1); 2]);
    assert_send_sync(&replicas);
    assert_eq!(replicas.len(), 2);
    assert_eq!(replicas.services()[1].id, 1);
    let debug = format!("{:?}", replicas.handle());
    assert!(debug.starts_with("Replicas {"), "{debug}");
    let service = HedgeLayer::new(policy(&timer, 2, 10)).layer(replicas);
    assert_clone(&service);
}
