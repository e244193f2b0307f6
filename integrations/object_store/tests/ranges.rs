//! Ranges at and past the edges of an object: `HedgedStore` answers each as the store it
//! wraps does, and a range the object does not hold is asked once.

use std::time::Duration;

use bytes::Bytes;
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{store, versioned, Objects};
use hedging_test_server::{Arrival, Pace, Server, VirtualClock};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};

const SIZE: u64 = 256 * 1024;

/// What a read gave: the range and size the store reported, and how many bytes came.
async fn read(
    store: &dyn ObjectStore,
    path: &Path,
    options: GetOptions,
) -> object_store::Result<(std::ops::Range<u64>, u64, usize)> {
    let result = store.get_opts(path, options).await?;
    let (range, size) = (result.range.clone(), result.meta.size);
    let bytes = result.bytes().await?;
    Ok((range, size, bytes.len()))
}

/// Every range at or past an edge of a full and an empty object, with and without `head`,
/// buffered and not: the same answer (or an error where the store errs) as the store alone.
#[tokio::test]
async fn edge_ranges_answer_as_without_the_wrapper() {
    let clock = VirtualClock::new();
    let objects = Objects::new();
    objects.put("data/big.bin", Bytes::from(vec![7u8; SIZE as usize]));
    objects.put("data/empty.bin", Bytes::new());
    let behavior = versioned(objects.clone(), |_: &Arrival| Pace::Whole);
    let server = Server::http(behavior, clock.clock()).await.unwrap();
    let plain = store(&server.url("/")).unwrap();
    for limit in [64 * 1024, 0] {
        let hedged = HedgedStore::new(
            store(&server.url("/")).unwrap(),
            clock.policy(2, Duration::from_millis(20)),
        )
        .buffer_limit(limit);
        let ranges = [
            None,
            Some(GetRange::Bounded(0..10)),
            Some(GetRange::Bounded(SIZE - 10..SIZE + 100)),
            Some(GetRange::Bounded(100..100_000)),
            Some(GetRange::Bounded(SIZE..SIZE + 5)),
            Some(GetRange::Offset(SIZE - 10)),
            Some(GetRange::Offset(SIZE)),
            Some(GetRange::Offset(0)),
            Some(GetRange::Suffix(10)),
            Some(GetRange::Suffix(SIZE + 100)),
            Some(GetRange::Suffix(0)),
        ];
        for path in ["data/big.bin", "data/empty.bin"] {
            let path = Path::from(path);
            for range in ranges.clone() {
                for head in [false, true] {
                    let options = GetOptions {
                        range: range.clone(),
                        head,
                        ..GetOptions::default()
                    };
                    let want = read(&plain, &path, options.clone())
                        .await
                        .map_err(|e| e.to_string());
                    let got = read(&hedged, &path, options.clone())
                        .await
                        .map_err(|e| e.to_string());
                    assert_eq!(
                        want.is_ok(),
                        got.is_ok(),
                        "{limit} {path} {range:?} {head}: {want:?} / {got:?}"
                    );
                    if want.is_ok() {
                        assert_eq!(want, got);
                    }
                }
            }
        }
    }
}

/// A range the object does not hold is refused (416) by every copy: another copy can
/// only repeat it, so the read should end at once, as a `NotFound` does, and as
/// hedging-opendal ends on `RangeNotSatisfied`.
#[tokio::test]
async fn a_range_past_the_end_is_not_sent_twice() {
    let clock = VirtualClock::new();
    let objects = Objects::new();
    objects.put("data/big.bin", Bytes::from(vec![7u8; SIZE as usize]));
    let behavior = versioned(objects.clone(), |_: &Arrival| Pace::Whole);
    let server = Server::http(behavior, clock.clock()).await.unwrap();
    let policy = clock.policy(2, Duration::from_millis(20));
    let hedged = HedgedStore::new(store(&server.url("/")).unwrap(), policy.clone());
    let path = Path::from("data/big.bin");
    let options = GetOptions {
        range: Some(GetRange::Bounded(SIZE..SIZE + 10)),
        ..GetOptions::default()
    };
    let error = hedged.get_opts(&path, options).await.unwrap_err();
    assert!(error.to_string().contains("416"), "{error}");
    let stats = policy.stats();
    assert_eq!(
        (server.arrivals("/data/big.bin").len(), stats.hedges),
        (1, 0),
        "a 416 is the object's answer, not a failed copy"
    );
}
