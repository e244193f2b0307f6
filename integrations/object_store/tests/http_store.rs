//! `HedgedStore` over `object_store::http::HttpStore`, a real HTTP object-store client,
//! against a loopback hyper server that stalls the first request to each path. The
//! server counts the copies; time bounds are generous (the machine may be busy).

#[path = "../examples/hedged_range_reads/loopback.rs"]
mod loopback;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hedging::timer::TokioTimer;
use hedging::{Policy, Stats};
use hedging_object_store::HedgedStore;
use loopback::{ObjectServer, StallWhen, StallWhere};
use object_store::http::HttpStore;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt};

/// Long enough that a read waiting it out is unmistakable.
const STALL: Duration = Duration::from_secs(5);
const DELAY: Duration = Duration::from_millis(20);

fn object(size: usize) -> Bytes {
    (0..size)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<_>>()
        .into()
}

/// A server stalling the first request to each path at `place`, holding `data/a.bin`
/// (256 KiB), and a hedged `HttpStore` on it.
async fn setup(place: StallWhere) -> (ObjectServer, HedgedStore<HttpStore, TokioTimer>) {
    let objects = HashMap::from([("data/a.bin".to_owned(), object(256 * 1024))]);
    let server = ObjectServer::start(objects, StallWhen::FirstPerPath, place, STALL)
        .await
        .unwrap();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(DELAY)
        .timer(TokioTimer::new())
        .build();
    let store = HedgedStore::new(server.store().unwrap(), policy);
    (server, store)
}

/// Asserts the call beat the stall by far: the hedge, not the stalled copy, answered.
fn assert_hedged(started: Instant) {
    let elapsed = started.elapsed();
    assert!(
        elapsed < STALL / 2,
        "took {elapsed:?}: the stall was waited out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_head_is_hedged() {
    let (server, store) = setup(StallWhere::Answer).await;

    let started = Instant::now();
    let meta = store.head(&Path::from("data/a.bin")).await.unwrap();
    assert_hedged(started);
    assert_eq!(meta.size, 256 * 1024);
    assert_eq!(server.requests_to("data/a.bin"), 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_get_range_is_hedged() {
    let (server, store) = setup(StallWhere::Answer).await;

    let started = Instant::now();
    let bytes = store
        .get_range(&Path::from("data/a.bin"), 1000..5000)
        .await
        .unwrap();
    assert_hedged(started);
    assert_eq!(bytes, object(256 * 1024).slice(1000..5000));
    assert_eq!(server.requests_to("data/a.bin"), 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_get_ranges_is_hedged() {
    let (server, store) = setup(StallWhere::Answer).await;

    let started = Instant::now();
    let parts = store
        .get_ranges(&Path::from("data/a.bin"), &[0..100, 200_000..200_100])
        .await
        .unwrap();
    assert_hedged(started);
    let whole = object(256 * 1024);
    assert_eq!(
        parts,
        vec![whole.slice(0..100), whole.slice(200_000..200_100)]
    );
    assert!(server.requests_to("data/a.bin") >= 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_stalled_body_within_the_buffer_limit_is_hedged() {
    let (server, store) = setup(StallWhere::Body).await;

    let started = Instant::now();
    let result = store
        .get_opts(
            &Path::from("data/a.bin"),
            GetOptions::new().with_range(Some(0..128 * 1024)),
        )
        .await
        .unwrap();
    let bytes = result.bytes().await.unwrap();
    assert_hedged(started);
    assert_eq!(bytes, object(256 * 1024).slice(0..128 * 1024));
    assert_eq!(server.requests_to("data/a.bin"), 2);
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_not_found_is_not_hedged() {
    let (server, store) = setup(StallWhere::Answer).await;
    let missing = Path::from("data/missing.bin");

    // The first request to a path stalls: the hedge's 404 ends the call at once.
    let error = store.head(&missing).await.unwrap_err();
    assert!(
        matches!(error, object_store::Error::NotFound { .. }),
        "{error}"
    );
    assert_eq!(server.requests_to("data/missing.bin"), 2);

    // Later requests answer at once: a 404 is fatal, so no copy follows it.
    let error = store.get_range(&missing, 0..10).await.unwrap_err();
    assert!(
        matches!(error, object_store::Error::NotFound { .. }),
        "{error}"
    );
    assert_eq!(
        server.requests_to("data/missing.bin"),
        3,
        "one request, no hedge"
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_a_retry_after_on_the_last_copy_returns_at_once() {
    let server = ObjectServer::start(HashMap::new(), StallWhen::Never, StallWhere::Answer, STALL)
        .await
        .unwrap();
    // A delay no test waits out: only the failures start the copies.
    let policy = Policy::builder()
        .max_copies(3)
        .delay(Duration::from_secs(30))
        .timer(TokioTimer::new())
        .build();
    let store = HedgedStore::new(server.store().unwrap(), policy);

    // Every copy is a 503 with `Retry-After: 1000`: a failure, and the third is the last.
    let path = Path::from("unavailable/a.bin");
    let read = tokio::time::timeout(Duration::from_secs(10), store.get_range(&path, 0..10))
        .await
        .expect("the read waited out a Retry-After no copy can follow");

    assert!(read.is_err(), "the first copy's error is returned");
    assert_eq!(server.requests_to("unavailable/a.bin"), 3);
    let stats = store.policy().stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 2));
}
