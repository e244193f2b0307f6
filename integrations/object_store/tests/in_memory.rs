//! `HedgedStore` over `InMemory` behind a store that stalls the first read of each path,
//! on tokio's paused clock: every hedge starts exactly at its delay.

mod common;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use futures::FutureExt;
use hedging::timer::TokioTimer;
use hedging::{Policy, Stats};
use hedging_object_store::HedgedStore;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{GetOptions, GetResult, GetResultPayload, ObjectStore, ObjectStoreExt, Result};
use tokio::time::{sleep, Instant};

use common::{OnRead, Wrapped};

const DELAY: Duration = Duration::from_millis(10);
const STALL: Duration = Duration::from_secs(1);

/// How the first read of each path misbehaves.
#[derive(Clone, Copy, Debug)]
enum FirstRead {
    /// Answers after `STALL`.
    StallsItsAnswer,
    /// Answers at once with the first half of its body, the rest after `STALL`.
    StallsItsBody,
    /// Fails at once with a transport error.
    Fails,
    /// Answers like any other read.
    Answers,
}

/// An in-memory store whose first read of each path misbehaves; counts reads per path.
type Flaky = Wrapped<InMemory, FlakyReads>;

/// The reads of [`Flaky`].
#[derive(Debug)]
struct FlakyReads {
    first_read: FirstRead,
    reads: Mutex<HashMap<Path, usize>>,
}

impl Flaky {
    fn new(first_read: FirstRead) -> Self {
        Wrapped {
            inner: InMemory::new(),
            on_read: FlakyReads {
                first_read,
                reads: Mutex::new(HashMap::new()),
            },
        }
    }

    fn reads_of(&self, path: &Path) -> usize {
        let reads = self.on_read.reads.lock().unwrap();
        reads.get(path).copied().unwrap_or(0)
    }
}

impl OnRead for FlakyReads {
    const NAME: &'static str = "Flaky";

    fn read<'a, S: ObjectStore>(
        &'a self,
        inner: &'a S,
        location: &'a Path,
        options: GetOptions,
    ) -> BoxFuture<'a, Result<GetResult>> {
        let first = {
            let mut reads = self.reads.lock().unwrap();
            let count = reads.entry(location.clone()).or_insert(0);
            *count += 1;
            *count == 1
        };
        let first_read = if first {
            self.first_read
        } else {
            FirstRead::Answers
        };
        async move {
            match first_read {
                FirstRead::StallsItsAnswer => {
                    sleep(STALL).await;
                    inner.get_opts(location, options).await
                }
                FirstRead::Fails => Err(object_store::Error::Generic {
                    store: "Flaky",
                    source: "connection reset".into(),
                }),
                FirstRead::Answers => inner.get_opts(location, options).await,
                FirstRead::StallsItsBody => {
                    let result = inner.get_opts(location, options).await?;
                    let (meta, range) = (result.meta.clone(), result.range.clone());
                    let (attributes, extensions) =
                        (result.attributes.clone(), result.extensions.clone());
                    let whole = result.bytes().await?;
                    let half = whole.len() / 2;
                    let (first, rest) = (whole.slice(..half), whole.slice(half..));
                    let stalled =
                        stream::once(async move { Ok(first) }).chain(stream::once(async move {
                            sleep(STALL).await;
                            Ok(rest)
                        }));
                    Ok(GetResult {
                        payload: GetResultPayload::Stream(stalled.boxed()),
                        meta,
                        range,
                        attributes,
                        extensions,
                    })
                }
            }
        }
        .boxed()
    }
}

fn policy() -> Policy<TokioTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(DELAY)
        .timer(TokioTimer::new())
        .build()
}

/// A ranged read of the 4096 bytes at `path`, and how long its answer (not its body)
/// took to come.
async fn read_all_4096(store: &impl ObjectStore, path: &Path) -> (GetResult, Duration) {
    let started = Instant::now();
    let range = GetOptions::new().with_range(Some(0..4096));
    let result = store.get_opts(path, range).await.unwrap();
    (result, started.elapsed())
}

/// A hedged store over `Flaky` holding one object of `size` bytes (byte i is `i % 251`).
async fn store_with_object(
    first_read: FirstRead,
    size: usize,
) -> (HedgedStore<Arc<Flaky>, TokioTimer>, Arc<Flaky>, Path, Bytes) {
    let flaky = Arc::new(Flaky::new(first_read));
    let path = Path::from("data/object.bin");
    let object: Bytes = (0..size)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<_>>()
        .into();
    flaky.put(&path, object.clone().into()).await.unwrap();
    (
        HedgedStore::new(Arc::clone(&flaky), policy()),
        flaky,
        path,
        object,
    )
}

fn stats_of(store: &HedgedStore<Arc<Flaky>, TokioTimer>) -> Stats {
    store.policy().stats()
}

#[tokio::test(start_paused = true)]
async fn head_is_hedged() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsAnswer, 100).await;

    let started = Instant::now();
    let meta = store.head(&path).await.unwrap();
    assert_eq!(started.elapsed(), DELAY, "the hedge answered at its delay");
    assert_eq!(meta.size, object.len() as u64);
    assert_eq!(flaky.reads_of(&path), 2);
    assert_eq!(stats_of(&store).hedge_wins, 1);
}

#[tokio::test(start_paused = true)]
async fn get_range_is_hedged() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsAnswer, 1000).await;

    let started = Instant::now();
    let bytes = store.get_range(&path, 100..300).await.unwrap();
    assert_eq!(started.elapsed(), DELAY);
    assert_eq!(bytes, object.slice(100..300));
    assert_eq!(flaky.reads_of(&path), 2);
    assert_eq!(stats_of(&store).hedge_wins, 1);
}

#[tokio::test(start_paused = true)]
async fn get_ranges_is_hedged() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsAnswer, 1000).await;

    let ranges: [Range<u64>; 3] = [0..10, 500..520, 990..1000];
    let started = Instant::now();
    let parts = store.get_ranges(&path, &ranges).await.unwrap();
    assert_eq!(started.elapsed(), DELAY);
    let expected: Vec<Bytes> = ranges
        .iter()
        .map(|r| object.slice(r.start as usize..r.end as usize))
        .collect();
    assert_eq!(parts, expected);
    assert!(
        flaky.reads_of(&path) >= 2,
        "the hedge read the object again"
    );
    assert_eq!(stats_of(&store).hedge_wins, 1);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_within_the_buffer_limit_is_hedged() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsBody, 64 * 1024).await;

    let started = Instant::now();
    let result = store
        .get_opts(&path, GetOptions::new().with_range(Some(1024..33 * 1024)))
        .await
        .unwrap();
    let bytes = result.bytes().await.unwrap();
    assert_eq!(
        started.elapsed(),
        DELAY,
        "the body's stall was hedged, not waited out"
    );
    assert_eq!(bytes, object.slice(1024..33 * 1024));
    assert_eq!(flaky.reads_of(&path), 2);
    assert_eq!(stats_of(&store).hedge_wins, 1);
}

#[tokio::test(start_paused = true)]
async fn a_small_whole_object_get_is_buffered_too() {
    let (store, _flaky, path, object) = store_with_object(FirstRead::StallsItsBody, 4096).await;

    let started = Instant::now();
    let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(started.elapsed(), DELAY);
    assert_eq!(bytes, object);
}

#[tokio::test(start_paused = true)]
async fn a_read_over_the_buffer_limit_is_hedged_to_its_first_byte() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsAnswer, 4096).await;
    let store = store.buffer_limit(1024);

    let (result, answered_after) = read_all_4096(&store, &path).await;
    assert_eq!(
        answered_after, DELAY,
        "no first byte from the original: hedged"
    );
    assert_eq!(result.bytes().await.unwrap(), object);
    assert_eq!(flaky.reads_of(&path), 2);
}

#[tokio::test(start_paused = true)]
async fn a_read_over_the_buffer_limit_with_resume_off_commits_at_its_first_byte() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsBody, 4096).await;
    let store = store.buffer_limit(1024).resume_stalls(false);

    let started = Instant::now();
    let (result, answered_after) = read_all_4096(&store, &path).await;
    assert_eq!(
        answered_after,
        Duration::ZERO,
        "the original's first bytes came at once"
    );
    assert_eq!(result.range, 0..4096);
    assert_eq!(result.bytes().await.unwrap(), object);
    assert_eq!(
        started.elapsed(),
        STALL,
        "a stall after the first byte is not hedged"
    );
    assert_eq!(flaky.reads_of(&path), 1);
    assert_eq!(stats_of(&store).hedges, 0);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_over_the_buffer_limit_is_resumed() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsBody, 4096).await;
    let store = store.buffer_limit(1024);

    let started = Instant::now();
    let (result, answered_after) = read_all_4096(&store, &path).await;
    assert_eq!(answered_after, Duration::ZERO);
    assert_eq!(
        result.bytes().await.unwrap(),
        object,
        "every byte once, in order"
    );
    assert_eq!(
        started.elapsed(),
        2 * DELAY,
        "quiet for the delay, then a resume raced the body for one more"
    );
    assert_eq!(flaky.reads_of(&path), 2);
    let stats = stats_of(&store);
    assert_eq!((stats.hedges, stats.hedge_wins), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn not_found_is_not_hedged() {
    let (store, flaky, _path, _object) = store_with_object(FirstRead::Answers, 10).await;
    let missing = Path::from("data/missing.bin");

    // Were it retried, "failure accelerates" would start a second copy at once.
    let error = store.head(&missing).await.unwrap_err();
    assert!(
        matches!(error, object_store::Error::NotFound { .. }),
        "{error}"
    );
    assert_eq!(flaky.reads_of(&missing), 1);
    let error = store.get_range(&missing, 0..5).await.unwrap_err();
    assert!(
        matches!(error, object_store::Error::NotFound { .. }),
        "{error}"
    );
    assert_eq!(flaky.reads_of(&missing), 2, "one read per call, no copy");
    assert_eq!(
        stats_of(&store),
        Stats {
            calls: 2,
            failures: 2,
            ..Stats::default()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_transport_error_starts_the_next_copy_at_once() {
    let (store, flaky, path, object) = store_with_object(FirstRead::Fails, 100).await;

    let started = Instant::now();
    let bytes = store.get_range(&path, 0..100).await.unwrap();
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no wait for the delay after a failure"
    );
    assert_eq!(bytes, object);
    assert_eq!(flaky.reads_of(&path), 2);
    assert_eq!(stats_of(&store).hedge_wins, 1);
}

#[tokio::test(start_paused = true)]
async fn a_fast_read_sends_one_copy() {
    let (store, flaky, path, object) = store_with_object(FirstRead::StallsItsAnswer, 100).await;
    flaky.head(&path).await.unwrap(); // spends the first read's stall, unhedged

    let bytes = store.get_range(&path, 0..100).await.unwrap();
    assert_eq!(bytes, object);
    assert_eq!(
        flaky.reads_of(&path),
        2,
        "one read to spend the stall, one from the store"
    );
    assert_eq!(
        stats_of(&store),
        Stats {
            calls: 1,
            wins: 1,
            ..Stats::default()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn writes_lists_and_deletes_are_forwarded_and_out_of_scope() {
    let (store, flaky, path, _object) = store_with_object(FirstRead::StallsItsAnswer, 10).await;
    let other = Path::from("data/other.bin");

    store
        .put(&other, Bytes::from_static(b"payload").into())
        .await
        .unwrap();
    store
        .copy(&other, &Path::from("data/copy.bin"))
        .await
        .unwrap();
    let listed: Vec<_> = store.list(Some(&Path::from("data"))).collect().await;
    assert_eq!(listed.len(), 3);
    let by_delimiter = store
        .list_with_delimiter(Some(&Path::from("data")))
        .await
        .unwrap();
    assert_eq!(by_delimiter.objects.len(), 3);
    store.delete(&other).await.unwrap();
    assert_eq!(flaky.inner.list(None).count().await, 2);

    assert_eq!(
        stats_of(&store),
        Stats {
            out_of_scope: 5,
            ..Stats::default()
        },
        "none of these is a call: each is out of the store's scope"
    );
    assert_eq!(flaky.reads_of(&path), 0);
}

#[tokio::test(start_paused = true)]
async fn an_empty_object_reads_as_empty() {
    let (store, _flaky, path, _object) = store_with_object(FirstRead::StallsItsBody, 0).await;

    let result = store.get(&path).await.unwrap();
    assert_eq!(result.meta.size, 0);
    assert!(result.bytes().await.unwrap().is_empty());
}
