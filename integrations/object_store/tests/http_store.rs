//! `HedgedStore` over `object_store::http::HttpStore`, a real HTTP object-store client,
//! against the shared loopback server, which holds the first read of each path and
//! counts the copies. The policy runs on a virtual clock the tests advance; no test
//! waits for time, and one smoke test runs on the real clock.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging::Stats;
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{objects, store, StallWhen, StallWhere};
use hedging_test_server::{overtakes_the_stall, real_clock, tokio_policy, SMOKE_STALL};
use hedging_test_server::{Hold, Server, VirtualClock, HANG_GUARD, NEVER};
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
async fn setup(place: StallWhere) -> (VirtualClock, Server, Store) {
    let clock = VirtualClock::new();
    let files = HashMap::from([("data/a.bin".to_owned(), object(256 * 1024))]);
    let behavior = objects(files, StallWhen::FirstPerPath, place, Hold::Released);
    let server = Server::http(behavior, clock.clock()).await.unwrap();
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), clock.policy(2, DELAY));
    (clock, server, Arc::new(store))
}

/// Reads through a hedged store whose first read of `data/a.bin` is held at `place`,
/// lets the hedge go out at its delay, and asserts the hedge won: the read's result, and
/// the server.
async fn hedged_read<T, F, Fut>(place: StallWhere, read: F) -> (T, Server)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = object_store::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let (clock, server, store) = setup(place).await;
    let read = tokio::spawn(read(Arc::clone(&store)));
    clock.hedge(&server, OBJECT, 1, DELAY).await;
    let value = read.await.unwrap().unwrap();
    let hedge = &server.arrivals(OBJECT)[1];
    assert_eq!(hedge.at, DELAY, "the hedge went out at its delay");
    assert_eq!(store.policy().stats().hedge_wins, 1);
    (value, server)
}

fn a_bin() -> Path {
    Path::from("data/a.bin")
}

#[tokio::test]
async fn http_head_is_hedged() {
    let head = |store: Store| async move { store.head(&a_bin()).await };
    let (meta, server) = hedged_read(StallWhere::Answer, head).await;

    assert_eq!(meta.size, 256 * 1024);
    assert_eq!(server.arrivals(OBJECT).len(), 2);
}

#[tokio::test]
async fn http_head_is_hedged_on_the_real_clock() {
    let files = HashMap::from([("data/a.bin".to_owned(), object(1024))]);
    let stall = Hold::For(SMOKE_STALL);
    let behavior = objects(files, StallWhen::FirstPerPath, StallWhere::Answer, stall);
    let server = Server::http(behavior, real_clock()).await.unwrap();
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), tokio_policy(DELAY));

    let meta = overtakes_the_stall(store.head(&a_bin())).await;
    assert_eq!(meta.unwrap().size, 1024);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test]
async fn http_get_range_is_hedged() {
    let range = |store: Store| async move { store.get_range(&a_bin(), 1000..5000).await };
    let (bytes, server) = hedged_read(StallWhere::Answer, range).await;

    assert_eq!(bytes, object(256 * 1024).slice(1000..5000));
    assert_eq!(server.arrivals(OBJECT).len(), 2);
}

#[tokio::test]
async fn http_get_ranges_is_hedged() {
    let ranges = [0..100, 200_000..200_100];
    let read = |store: Store| async move { store.get_ranges(&a_bin(), &ranges).await };
    let (parts, server) = hedged_read(StallWhere::Answer, read).await;

    let whole = object(256 * 1024);
    assert_eq!(
        parts,
        vec![whole.slice(0..100), whole.slice(200_000..200_100)]
    );
    assert!(server.arrivals(OBJECT).len() >= 2);
}

#[tokio::test]
async fn http_stalled_body_within_the_buffer_limit_is_hedged() {
    let read = |store: Store| async move {
        let range = GetOptions::new().with_range(Some(0..128 * 1024));
        store.get_opts(&a_bin(), range).await?.bytes().await
    };
    let (bytes, server) = hedged_read(StallWhere::Body, read).await;

    assert_eq!(bytes, object(256 * 1024).slice(0..128 * 1024));
    assert_eq!(server.arrivals(OBJECT).len(), 2);
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
    clock.hedge(&server, missing, 1, DELAY).await;
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
    let clock = VirtualClock::new();
    let behavior = objects(
        HashMap::new(),
        StallWhen::Never,
        StallWhere::Answer,
        Hold::No,
    );
    let server = Server::http(behavior, clock.clock()).await.unwrap();
    // A delay no test advances to: only the failures start the copies.
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), clock.policy(3, NEVER));

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

#[tokio::test]
async fn an_http_store_loser_closes_its_connection_and_the_server_sees_it() {
    let get = |store: Store| async move { store.get(&a_bin()).await?.bytes().await };
    let (bytes, server) = hedged_read(StallWhere::Answer, get).await;

    assert_eq!(bytes, object(256 * 1024));
    server.until_dropped(1).await;
    server.until_closed(1).await;
    assert_eq!(
        server.dropped(),
        1,
        "the loser's handler was dropped unanswered"
    );
    assert_eq!(server.closed_connections(), 1, "its connection, closed");
    assert_eq!(server.connections(), 2, "the original's and the hedge's");
}
