//! `HedgedStore` over `object_store::http::HttpStore`, a real HTTP object-store client,
//! against the shared loopback server, which holds the first read of each path and
//! counts the copies. The policy runs on a virtual clock the tests advance; no test
//! waits for time, and one smoke test runs on the real clock.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hedging::timer::{ManualTimer, TokioTimer};
use hedging::{Policy, Stats};
use hedging_object_store::HedgedStore;
use hedging_test_server::http::Server;
use hedging_test_server::object::{objects, store, StallWhen, StallWhere};
use hedging_test_server::{Hold, HANG_GUARD};
use object_store::http::HttpStore;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt};

const DELAY: Duration = Duration::from_millis(20);
const OBJECT: &str = "/data/a.bin";

fn object(size: usize) -> Bytes {
    (0..size)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<_>>()
        .into()
}

type Store = Arc<HedgedStore<HttpStore, ManualTimer>>;

/// A server holding `data/a.bin` (256 KiB) and the first read of each path at `place`
/// until released, stamping arrivals with a virtual clock; a hedged `HttpStore` on it,
/// on that clock.
async fn setup(place: StallWhere) -> (ManualTimer, Server, Store) {
    let clock = ManualTimer::new();
    let files = HashMap::from([("data/a.bin".to_owned(), object(256 * 1024))]);
    let behavior = objects(files, StallWhen::FirstPerPath, place, Hold::Released);
    let now = clock.clone();
    let server = Server::start_with_clock(behavior, Arc::new(move || now.now()))
        .await
        .unwrap();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(DELAY)
        .timer(clock.clone())
        .build();
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), policy);
    (clock, server, Arc::new(store))
}

/// Lets the held first read of `path` be overtaken: the hedge goes out at its delay.
async fn hedge_past_the_stall(clock: &ManualTimer, server: &Server, path: &str) {
    server.until_arrived(path, 1).await;
    clock.advance(DELAY);
}

/// Asserts the hedge, not the held copy, answered: it went out at its delay.
fn assert_hedged(server: &Server, path: &str) {
    let seen = server.arrivals(path);
    assert_eq!(seen[1].at, DELAY, "the hedge went out at its delay");
}

#[tokio::test]
async fn http_head_is_hedged() {
    let (clock, server, store) = setup(StallWhere::Answer).await;

    let head = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.head(&Path::from("data/a.bin")).await }
    });
    hedge_past_the_stall(&clock, &server, OBJECT).await;
    let meta = head.await.unwrap().unwrap();
    assert_hedged(&server, OBJECT);
    assert_eq!(meta.size, 256 * 1024);
    assert_eq!(server.arrivals(OBJECT).len(), 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test]
async fn http_head_is_hedged_on_the_real_clock() {
    let files = HashMap::from([("data/a.bin".to_owned(), object(1024))]);
    let stall = Hold::For(Duration::from_secs(10));
    let behavior = objects(files, StallWhen::FirstPerPath, StallWhere::Answer, stall);
    let server = Server::start(behavior).await.unwrap();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(DELAY)
        .timer(TokioTimer::new())
        .build();
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), policy);

    let started = Instant::now();
    let meta = store.head(&Path::from("data/a.bin")).await.unwrap();
    let took = started.elapsed();
    assert_eq!(meta.size, 1024);
    assert!(
        took < Duration::from_secs(5),
        "not the 10 s stall: {took:?}"
    );
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test]
async fn http_get_range_is_hedged() {
    let (clock, server, store) = setup(StallWhere::Answer).await;

    let read = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.get_range(&Path::from("data/a.bin"), 1000..5000).await }
    });
    hedge_past_the_stall(&clock, &server, OBJECT).await;
    let bytes = read.await.unwrap().unwrap();
    assert_hedged(&server, OBJECT);
    assert_eq!(bytes, object(256 * 1024).slice(1000..5000));
    assert_eq!(server.arrivals(OBJECT).len(), 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test]
async fn http_get_ranges_is_hedged() {
    let (clock, server, store) = setup(StallWhere::Answer).await;

    let read = tokio::spawn({
        let store = Arc::clone(&store);
        let ranges = [0..100, 200_000..200_100];
        async move { store.get_ranges(&Path::from("data/a.bin"), &ranges).await }
    });
    hedge_past_the_stall(&clock, &server, OBJECT).await;
    let parts = read.await.unwrap().unwrap();
    let whole = object(256 * 1024);
    assert_eq!(
        parts,
        vec![whole.slice(0..100), whole.slice(200_000..200_100)]
    );
    assert!(server.arrivals(OBJECT).len() >= 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test]
async fn http_stalled_body_within_the_buffer_limit_is_hedged() {
    let (clock, server, store) = setup(StallWhere::Body).await;

    let read = tokio::spawn({
        let store = Arc::clone(&store);
        async move {
            let range = GetOptions::new().with_range(Some(0..128 * 1024));
            let result = store.get_opts(&Path::from("data/a.bin"), range).await?;
            result.bytes().await
        }
    });
    hedge_past_the_stall(&clock, &server, OBJECT).await;
    let bytes = read.await.unwrap().unwrap();
    assert_hedged(&server, OBJECT);
    assert_eq!(bytes, object(256 * 1024).slice(0..128 * 1024));
    assert_eq!(server.arrivals(OBJECT).len(), 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test]
async fn http_not_found_is_not_hedged() {
    let (clock, server, store) = setup(StallWhere::Answer).await;
    let missing = "/data/missing.bin";

    // The first request to a path is held: the hedge's 404 ends the call at once.
    let head = tokio::spawn({
        let store = Arc::clone(&store);
        async move { store.head(&Path::from("data/missing.bin")).await }
    });
    hedge_past_the_stall(&clock, &server, missing).await;
    let error = head.await.unwrap().unwrap_err();
    assert!(
        matches!(error, object_store::Error::NotFound { .. }),
        "{error}"
    );
    assert_eq!(server.arrivals(missing).len(), 2);

    // Later requests answer at once: a 404 is fatal, so no copy follows it.
    let error = store
        .get_range(&Path::from("data/missing.bin"), 0..10)
        .await
        .unwrap_err();
    assert!(
        matches!(error, object_store::Error::NotFound { .. }),
        "{error}"
    );
    assert_eq!(server.arrivals(missing).len(), 3, "one request, no hedge");
    assert_eq!(
        store.policy().stats(),
        Stats {
            calls: 2,
            failures: 2,
            hedges: 1,
            ..Stats::default()
        }
    );
}

#[tokio::test]
async fn http_a_retry_after_on_the_last_copy_returns_at_once() {
    let clock = ManualTimer::new();
    let behavior = objects(
        HashMap::new(),
        StallWhen::Never,
        StallWhere::Answer,
        Hold::No,
    );
    let server = Server::start(behavior).await.unwrap();
    // A delay no test advances to: only the failures start the copies.
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_secs(3600))
        .timer(clock.clone())
        .build();
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), policy);

    // Every copy is a 503 with `Retry-After: 1000`: a failure, and the third is the last.
    let path = Path::from("unavailable/a.bin");
    let read = tokio::time::timeout(HANG_GUARD, store.get_range(&path, 0..10))
        .await
        .expect("the read waited out a Retry-After no copy can follow");

    assert!(read.is_err(), "the first copy's error is returned");
    assert_eq!(clock.now(), Duration::ZERO, "nothing was waited out");
    assert_eq!(server.arrivals("/unavailable/a.bin").len(), 3);
    let stats = store.policy().stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 2));
}
