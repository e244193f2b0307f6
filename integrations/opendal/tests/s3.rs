//! `HedgeLayer` over OpenDAL's `s3` service (SigV4 signed, sent by hyper-util over
//! HTTP/1.1) against a real S3 server on loopback (`s3s-fs`) behind a proxy that holds
//! the requests a test picks. What reaches the server is counted at the proxy; time is
//! virtual.

mod common;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use common::*;
use hedging_opendal::HedgeLayer;
use hedging_test_server::counts::assert_one_hedge_won;
use hedging_test_server::resume::assert_resumed_once;
use hedging_test_server::s3::{assert_each_signed, assert_resumed_by_e_tag, S3};
use hedging_test_server::{Answer, Arrival, Behavior, Hold, Pace, VirtualClock, NEVER};
use http::Method;

const PATH: &str = "data/a.bin";
const KEY: &str = "/hedging/data/a.bin";
const WRITTEN: &str = "/hedging/data/b.bin";

/// The first request with `method` to each object is held until released, or until its
/// client drops it.
fn first_held(method: Method) -> Behavior {
    Arc::new(
        move |arrival: &Arrival| match arrival.method == method && arrival.copy == 0 {
            true => Answer::ok().hold(Hold::Released),
            false => Answer::ok(),
        },
    )
}

/// Each read's first GET stalls `STALL_AT` bytes into its body, until released or
/// dropped; a resume (it has `If-Match`) does not.
fn first_body_stalls() -> Behavior {
    Arc::new(|arrival: &Arrival| {
        let first = arrival.method == Method::GET && arrival.header("if-match").is_none();
        let stall = Pace::StallAfter {
            bytes: STALL_AT,
            hold: Hold::Released,
        };
        Answer::ok().pace(if first { stall } else { Pace::Whole })
    })
}

/// An S3 server whose proxy answers as `behavior`, holding `size` bytes at `PATH`.
async fn s3_with(behavior: Behavior, clock: &VirtualClock, size: usize) -> S3 {
    let s3 = S3::start(behavior, clock.clock()).await.unwrap();
    let direct = s3_direct(&s3).unwrap();
    direct.write(PATH, object(size, 0)).await.unwrap();
    s3
}

#[tokio::test]
async fn a_stalled_s3_stat_is_rescued_by_a_hedge() {
    let clock = VirtualClock::new();
    let s3 = s3_with(first_held(Method::HEAD), &clock, 4096).await;
    let layer = HedgeLayer::new(policy(&clock));
    let stats = layer.policy().clone();
    let op = s3_hedged(&s3, layer).unwrap();

    let stat = tokio::spawn(async move { op.stat(PATH).await });
    clock.hedge(&s3.proxy, KEY, 1, DELAY).await;

    let metadata = stat.await.unwrap().unwrap();
    assert_eq!(metadata.content_length(), 4096);
    let seen = s3.proxy.arrivals(KEY);
    assert_eq!(seen.len(), 2, "the held HEAD and its hedge");
    assert!(seen.iter().all(|copy| copy.method == Method::HEAD));
    assert_eq!(seen[1].at, DELAY, "the hedge, due at the delay");
    assert_one_hedge_won(&stats);
}

#[tokio::test]
async fn a_stalled_s3_read_is_rescued_and_the_losers_connection_closed() {
    let clock = VirtualClock::new();
    let s3 = s3_with(first_held(Method::GET), &clock, 64 * 1024).await;
    let layer = HedgeLayer::new(policy(&clock));
    let stats = layer.policy().clone();
    let op = s3_hedged(&s3, layer).unwrap();

    // The operator (its connection pool) outlives the read: only the loser's is closed.
    let reading = op.clone();
    let read = tokio::spawn(async move { reading.read(PATH).await });
    clock.hedge(&s3.proxy, KEY, 1, DELAY).await;

    let bytes = read.await.unwrap().unwrap();
    assert_eq!(
        bytes.to_vec(),
        object(64 * 1024, 0),
        "the hedge's read, whole"
    );
    let proxy = &s3.proxy;
    let seen = proxy.arrivals(KEY);
    assert_eq!(seen.len(), 2, "the original and one hedge");
    assert_each_signed(&seen);
    hedging_test_server::s3::assert_the_loser_was_closed(proxy).await;
    assert_one_hedge_won(&stats);
}

#[tokio::test]
async fn an_s3_body_stalled_midway_is_resumed_from_its_offset_with_if_match() {
    let clock = VirtualClock::new();
    let s3 = s3_with(first_body_stalls(), &clock, SIZE).await;
    let layer = HedgeLayer::new(policy(&clock)).buffer_limit(LIMIT);
    let stats = layer.policy().clone();
    let op = s3_hedged(&s3, layer).unwrap();

    read_through_its_resume(&op, PATH, &clock).await;
    let proxy = &s3.proxy;
    let seen = proxy.arrivals(KEY);
    assert_resumed_by_e_tag(&seen, STALL_AT, SIZE as u64, 2 * DELAY);
    proxy.until_closed(1).await;
    assert_eq!(
        proxy.closed_connections(),
        1,
        "the stalled body's connection, closed"
    );
    assert_resumed_once(&stats);
}

#[tokio::test]
async fn an_s3_object_rewritten_before_its_resume_is_an_error_never_spliced_bytes() {
    let clock = VirtualClock::new();
    let s3 = s3_with(first_body_stalls(), &clock, SIZE).await;
    let layer = HedgeLayer::new(policy(&clock)).buffer_limit(LIMIT);
    let op = s3_hedged(&s3, layer).unwrap();
    let received = Arc::new(AtomicU64::new(0));

    let read = read_streamed(&op, PATH, Arc::clone(&received));
    until_stalled(&received, STALL_AT).await;
    let direct = s3_direct(&s3).unwrap();
    direct.write(PATH, object(SIZE, 1)).await.unwrap();
    resume_at(&clock, &received, STALL_AT).await;

    // s3s-fs answers a GET whatever its If-Match says: the resume's ETag, compared with
    // the first answer's, is what refuses the second version's bytes.
    assert_refused_the_rewrite(read.await.unwrap(), SIZE, STALL_AT);
    let seen = s3.proxy.arrivals(KEY);
    assert_eq!(seen.len(), 2);
    assert!(seen[1].header("if-match").is_some(), "asked for version 0");
}

#[tokio::test]
async fn s3_writes_deletes_copies_and_lists_are_sent_once_and_counted_out_of_scope() {
    let clock = VirtualClock::new();
    // Only the write is held: the copy is a PUT too.
    let written = Arc::new(
        |arrival: &Arrival| match arrival.key == WRITTEN && arrival.copy == 0 {
            true => Answer::ok().hold(Hold::Released),
            false => Answer::ok(),
        },
    );
    let s3 = s3_with(written, &clock, 0).await;
    let layer = HedgeLayer::new(policy(&clock));
    let stats = layer.policy().clone();
    let op = s3_hedged(&s3, layer).unwrap();

    let writing = op.clone();
    let write = tokio::spawn(async move { writing.write("data/b.bin", vec![1; 1024]).await });
    // Long past any delay: a hedge would have gone out by now.
    clock.release(&s3.proxy, WRITTEN).await;
    write.await.unwrap().unwrap();
    op.copy("data/b.bin", "data/c.bin").await.unwrap();
    let listed = op.list("data/").await.unwrap();
    op.delete("data/c.bin").await.unwrap();

    assert_eq!(listed.len(), 3, "a.bin, b.bin and c.bin");
    assert_eq!(clock.now(), NEVER);
    let written = s3.proxy.arrivals(WRITTEN);
    let puts = written.iter().filter(|copy| copy.method == Method::PUT);
    assert_eq!(puts.count(), 1, "the write, sent once");
    let stats = stats.stats();
    assert_eq!(
        (stats.calls, stats.hedges, stats.out_of_scope),
        (0, 0, 4),
        "a write, a copy, a list and a delete: none a call"
    );
}
