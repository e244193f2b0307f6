//! `HedgeLayer` over OpenDAL's `http` service against the loopback object server, whose
//! objects carry an ETag and whose answers stall where a test says: before the answer,
//! or midway through the body. Time is virtual.

mod common;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use common::*;
use futures::TryStreamExt;
use hedging_opendal::{Call, HedgeLayer, SizeClass};
use hedging_test_server::counts::assert_one_hedge_won;
use hedging_test_server::object::{versioned, Objects};
use hedging_test_server::resume::{assert_asks_the_rest, assert_resumed_once};
use hedging_test_server::{Arrival, Behavior, Hold, Pace, Server, VirtualClock};
use http::Method;
use opendal::raw::Operation;
use opendal::{BytesRange, Operator};

const PATH: &str = "data/big.bin";
const KEY: &str = "/data/big.bin";

/// Held after `bytes` of its body, until released or dropped.
fn stall(bytes: u64) -> Pace {
    Pace::StallAfter {
        bytes,
        hold: Hold::Released,
    }
}

/// The object server holding `PATH` (`SIZE` bytes, version 1), answering as `served`
/// makes of its objects.
async fn serve(
    clock: &VirtualClock,
    served: impl FnOnce(Objects) -> Behavior,
) -> (Server, Objects) {
    let objects = Objects::new();
    objects.put(PATH, Bytes::from(object(SIZE, 0)));
    let server = Server::http(served(objects.clone()), clock.clock())
        .await
        .unwrap();
    (server, objects)
}

/// Each first request with `method` held before its answer, until released or dropped.
fn first_held(method: Method) -> impl FnOnce(Objects) -> Behavior {
    move |objects| {
        let answers = versioned(objects, |_| Pace::Whole);
        Arc::new(move |arrival: &Arrival| {
            let answer = answers(arrival);
            match arrival.method == method && arrival.copy == 0 {
                true => answer.hold(Hold::Released),
                false => answer,
            }
        })
    }
}

/// Every read's first answer stalls after `bytes`; a resume (it has `If-Match`) does not.
fn first_bodies_stall(bytes: u64) -> impl FnOnce(Objects) -> Behavior {
    move |objects| {
        versioned(objects, move |arrival: &Arrival| {
            match arrival.header("if-match") {
                None => stall(bytes),
                Some(_) => Pace::Whole,
            }
        })
    }
}

fn hedged(server: &Server, layer: HedgeLayer<hedging::timer::ManualTimer>) -> Operator {
    http_hedged(&server.origin(), layer).unwrap()
}

#[tokio::test]
async fn a_stalled_http_stat_is_rescued_by_a_hedge() {
    let clock = VirtualClock::new();
    let (server, _) = serve(&clock, first_held(Method::HEAD)).await;
    let layer = HedgeLayer::new(policy(&clock));
    let stats = layer.policy().clone();
    let op = hedged(&server, layer);

    let stat = tokio::spawn(async move { op.stat(PATH).await });
    clock.hedge(&server, KEY, 1, DELAY).await;

    let metadata = stat.await.unwrap().unwrap();
    assert_eq!(metadata.content_length(), SIZE as u64);
    assert_eq!(metadata.etag(), Some("\"v1\""));
    let seen = server.arrivals(KEY);
    assert_eq!(seen.len(), 2, "the held HEAD and its hedge");
    assert_eq!(seen[1].at, DELAY, "the hedge, due at the delay");
    assert_one_hedge_won(&stats);
}

#[tokio::test]
async fn a_stalled_http_read_is_rescued_and_the_losers_connection_closed() {
    let clock = VirtualClock::new();
    let (server, _) = serve(&clock, first_held(Method::GET)).await;
    let layer = HedgeLayer::new(policy(&clock)).buffer_limit(SIZE as u64);
    let stats = layer.policy().clone();
    let op = hedged(&server, layer);

    let reading = op.clone();
    let read = tokio::spawn(async move { reading.read(PATH).await });
    clock.hedge(&server, KEY, 1, DELAY).await;

    let bytes = read.await.unwrap().unwrap();
    assert_eq!(bytes.to_vec(), object(SIZE, 0), "the hedge's read, whole");
    server.until_dropped(1).await;
    server.until_closed(1).await;
    assert_eq!(server.arrivals(KEY).len(), 2);
    assert_eq!(server.dropped(), 1, "the held original, dropped unanswered");
    assert_eq!(
        server.closed_connections(),
        1,
        "the loser's connection, closed"
    );
    assert_eq!(server.connections(), 2);
    assert_one_hedge_won(&stats);
}

#[tokio::test]
async fn a_ranged_http_read_stalled_midway_is_hedged_through_its_last_byte() {
    let clock = VirtualClock::new();
    // The first copy sends 1,000 of the range's 8,192 bytes, then stalls.
    let (server, _) = serve(&clock, |objects| {
        versioned(objects, |arrival: &Arrival| match arrival.copy {
            0 => stall(1_000),
            _ => Pace::Whole,
        })
    })
    .await;
    let layer = HedgeLayer::new(policy(&clock));
    let stats = layer.policy().clone();
    let op = hedged(&server, layer);

    let reading = op.clone();
    let read = tokio::spawn(async move { reading.read_with(PATH).range(4096..12288).await });
    clock.hedge(&server, KEY, 1, DELAY).await;

    let bytes = read.await.unwrap().unwrap();
    assert_eq!(
        bytes.to_vec(),
        object(SIZE, 0)[4096..12288],
        "every byte once"
    );
    let seen = server.arrivals(KEY);
    assert_eq!(seen.len(), 2, "the stalled copy and its hedge");
    assert!(seen
        .iter()
        .all(|copy| copy.header("range") == Some("bytes=4096-12287")));
    let stats = stats.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn an_http_body_stalled_midway_is_resumed_from_its_offset_with_if_match() {
    let clock = VirtualClock::new();
    let (server, _) = serve(&clock, first_bodies_stall(STALL_AT)).await;
    let layer = HedgeLayer::new(policy(&clock)).buffer_limit(LIMIT);
    let stats = layer.policy().clone();
    let op = hedged(&server, layer);

    read_through_its_resume(&op, PATH, &clock).await;
    let resume = &server.arrivals(KEY)[1];
    let version = assert_asks_the_rest(resume, STALL_AT, SIZE as u64, 2 * DELAY);
    assert_eq!(version, Some("\"v1\""), "of the same version");
    server.until_closed(1).await;
    assert_eq!(server.closed_connections(), 1, "the stalled body's, closed");
    assert_resumed_once(&stats);
}

#[tokio::test]
async fn an_http_object_changed_before_its_resume_is_an_error_never_spliced_bytes() {
    let clock = VirtualClock::new();
    let (server, objects) = serve(&clock, first_bodies_stall(STALL_AT)).await;
    let layer = HedgeLayer::new(policy(&clock)).buffer_limit(LIMIT);
    let op = hedged(&server, layer);
    let received = Arc::new(AtomicU64::new(0));

    let read = read_streamed(&op, PATH, Arc::clone(&received));
    until_stalled(&received, STALL_AT).await;
    objects.put(PATH, Bytes::from(object(SIZE, 1)));
    resume_at(&clock, &received, STALL_AT).await;

    // The server refuses the resume's If-Match ("v1", now "v2") with a 412.
    assert_refused_the_rewrite(read.await.unwrap(), SIZE, STALL_AT);
    let seen = server.arrivals(KEY);
    assert_eq!(seen.len(), 2, "the first GET and the refused resume");
    assert_eq!(seen[1].header("if-match"), Some("\"v1\""));
}

#[tokio::test]
async fn calls_are_keyed_by_operation_and_size_class() {
    let clock = VirtualClock::new();
    let (server, _) = serve(&clock, |objects| versioned(objects, |_| Pace::Whole)).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keys = Arc::clone(&seen);
    let layer = HedgeLayer::new(policy(&clock)).key_by(move |call: &Call<'_>| {
        let key = (call.operation(), call.size_class());
        keys.lock()
            .unwrap()
            .push((key, call.path().to_owned(), call.range()));
        key
    });
    let op = http_hedged(&server.origin(), layer).unwrap();

    op.stat(PATH).await.unwrap();
    op.read_with(PATH).range(1_000..5_000).await.unwrap();
    op.read(PATH).await.unwrap();

    let path = "data/big.bin".to_owned();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ((Operation::Stat, SizeClass::STAT), path.clone(), None),
            (
                (Operation::Read, 4096),
                path.clone(),
                Some(BytesRange::new(1_000, Some(4_000)))
            ),
            (
                (Operation::Read, SizeClass::UNKNOWN),
                path,
                Some(BytesRange::new(0, None))
            ),
        ]
    );
}

#[tokio::test]
async fn each_range_a_reader_fetches_is_a_hedged_call_of_its_own() {
    let clock = VirtualClock::new();
    let (server, _) = serve(&clock, first_held(Method::GET)).await;
    let layer = HedgeLayer::new(policy(&clock));
    let stats = layer.policy().clone();
    let op = hedged(&server, layer);

    // Two ranges too far apart to merge: each read whole by `oio::Read::read`.
    let reading = op.clone();
    let fetch = tokio::spawn(async move {
        let reader = reading.reader_with(PATH).gap(0).await?;
        reader.fetch(vec![0..1024, 200_000..201_024]).await
    });
    clock.hedge(&server, KEY, 1, DELAY).await;

    let ranges = fetch.await.unwrap().unwrap();
    let whole = object(SIZE, 0);
    assert_eq!(ranges[0].to_vec(), whole[..1024]);
    assert_eq!(ranges[1].to_vec(), whole[200_000..201_024]);
    assert_eq!(
        server.arrivals(KEY).len(),
        3,
        "the held first range, its hedge, the second"
    );
    let stats = stats.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (2, 1, 1));
}

/// A suffix longer than the stall resumes from the offset it reached, to the last byte.
#[tokio::test]
async fn a_stalled_suffix_read_resumes_from_its_offset_to_the_last_byte() {
    let clock = VirtualClock::new();
    let (server, _) = serve(&clock, first_bodies_stall(STALL_AT)).await;
    let op = hedged(&server, HedgeLayer::new(policy(&clock)).buffer_limit(LIMIT));
    let received = Arc::new(AtomicU64::new(0));
    let suffix = 200_000;
    let range = BytesRange::suffix(suffix);
    let read = read_range_streamed(&op, PATH, range, Arc::clone(&received));
    resume_at(&clock, &received, STALL_AT).await;

    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    let first = SIZE - suffix as usize;
    assert_eq!(bytes, object(SIZE, 0)[first..], "the last bytes, once");
    let resumed_at = first + STALL_AT as usize;
    let seen = server.arrivals(KEY);
    let asked = format!("bytes={resumed_at}-{}", SIZE - 1);
    assert_eq!(seen[1].header("range"), Some(asked.as_str()));
}

/// A range that runs past the object's end resumes to its last byte, not to the end asked.
#[tokio::test]
async fn a_stalled_range_past_the_end_resumes_to_the_last_byte() {
    let clock = VirtualClock::new();
    let (server, _) = serve(&clock, first_bodies_stall(STALL_AT)).await;
    let op = hedged(&server, HedgeLayer::new(policy(&clock)).buffer_limit(LIMIT));
    let received = Arc::new(AtomicU64::new(0));
    let range = BytesRange::new(50_000, Some(SIZE as u64));
    let read = read_range_streamed(&op, PATH, range, Arc::clone(&received));
    resume_at(&clock, &received, STALL_AT).await;

    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0)[50_000..]);
    let seen = server.arrivals(KEY);
    let asked = format!("bytes={}-{}", 50_000 + STALL_AT, SIZE - 1);
    assert_eq!(seen[1].header("range"), Some(asked.as_str()));
}

/// Every range at or past an edge of a full and an empty object, streamed and read,
/// buffered and not: through the layer, the same bytes or the same kind of error as
/// without it.
#[tokio::test]
async fn ranges_at_the_edges_answer_as_without_the_layer() {
    const EMPTY: &str = "data/empty.bin";
    let clock = VirtualClock::new();
    let (server, objects) = serve(&clock, |objects| versioned(objects, |_| Pace::Whole)).await;
    objects.put(EMPTY, Bytes::new());
    let plain = http_direct(&server.origin()).unwrap();
    let size = SIZE as u64;
    let ranges = [
        BytesRange::new(0, None),
        BytesRange::new(size - 10, None),
        BytesRange::new(size - 10, Some(100)),
        BytesRange::new(size, None),
        BytesRange::new(size + 5, Some(5)),
        BytesRange::suffix(10),
        BytesRange::suffix(size + 100),
        BytesRange::new(5, Some(0)),
        BytesRange::new(100, Some(100_000)),
    ];
    let read = |op: Operator, path: &'static str, range: BytesRange| async move {
        let reader = op.reader(path).await?;
        let chunks: Vec<_> = reader
            .clone()
            .into_stream(range)
            .await?
            .try_collect()
            .await?;
        let streamed: Vec<u8> = chunks.iter().flat_map(|chunk| chunk.to_vec()).collect();
        let read = reader.read(range).await?.to_vec();
        Ok::<_, opendal::Error>((streamed, read))
    };
    for limit in [LIMIT, 0] {
        let op = hedged(&server, HedgeLayer::new(policy(&clock)).buffer_limit(limit));
        for path in [PATH, EMPTY] {
            for range in ranges {
                let want = read(plain.clone(), path, range).await.map_err(|e| e.kind());
                let got = read(op.clone(), path, range).await.map_err(|e| e.kind());
                assert_eq!(want, got, "limit {limit}, {path}, {range:?}");
            }
        }
    }
}
