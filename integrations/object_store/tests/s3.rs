//! `HedgedStore` over `object_store`'s `AmazonS3` (SigV4 signed, sent by hyper-util over
//! HTTP/1.1) against a real S3 server on loopback (`s3s-fs`) behind a proxy that holds
//! the first read of each object. What reaches the server is counted at the proxy; time
//! is virtual.

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use hedging_object_store::HedgedStore;
use hedging_test_server::resume::assert_resumed_once;
use hedging_test_server::s3::S3;
use hedging_test_server::s3::{
    assert_each_signed, assert_resumed_by_e_tag, assert_the_loser_was_closed, first_held, object,
};
use hedging_test_server::{until, Answer, Behavior, Hold, Pace, VirtualClock};
use http::Method;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};

const DELAY: Duration = Duration::from_millis(20);
const OBJECT: &str = "/hedging/data/a.bin";

#[tokio::test]
async fn an_amazon_s3_loser_closes_its_connection_and_the_server_sees_it() {
    let clock = VirtualClock::new();
    let s3 = S3::start(first_held(Method::GET), clock.clock())
        .await
        .unwrap();
    let location = Path::from("data/a.bin");
    let direct = s3.direct_store().unwrap();
    direct
        .put(&location, PutPayload::from(object()))
        .await
        .unwrap();
    let store = Arc::new(HedgedStore::new(
        s3.store().unwrap(),
        clock.policy(2, DELAY),
    ));

    let reading = Arc::clone(&store);
    let read = tokio::spawn(async move { reading.get(&location).await?.bytes().await });
    clock.hedge(&s3.proxy, OBJECT, 1, DELAY).await;

    assert_eq!(
        read.await.unwrap().unwrap(),
        object(),
        "the hedge's read, whole"
    );
    let proxy = &s3.proxy;
    let seen = proxy.arrivals(OBJECT);
    assert_eq!(seen.len(), 2, "the original and one hedge");
    assert_each_signed(&seen);
    assert_the_loser_was_closed(proxy).await;
    assert_eq!(store.policy().stats().hedge_wins, 1);
}

const BIG: &str = "/hedging/data/big.bin";
const SIZE: usize = 256 * 1024;
const STALL_AT: u64 = 100_000;

fn big(version: u8) -> Bytes {
    (0..SIZE)
        .map(|i| ((i % 251) as u8).wrapping_add(version))
        .collect()
}

/// Each read's first GET stalls `STALL_AT` bytes into its body, until released or
/// dropped; a resume (it has `If-Match`) does not.
fn first_body_stalls() -> Behavior {
    Arc::new(|arrival| {
        let first = arrival.method == Method::GET && arrival.header("if-match").is_none();
        let stall = Pace::StallAfter {
            bytes: STALL_AT,
            hold: Hold::Released,
        };
        Answer::ok().pace(if first { stall } else { Pace::Whole })
    })
}

/// An S3 server holding `data/big.bin` behind a proxy stalling first bodies; a hedged
/// `AmazonS3` reading it whole, as a stream, on a task: what it read, or its error.
async fn stalled_s3_read(
    clock: &VirtualClock,
) -> (
    S3,
    Arc<HedgedStore<common::Counted<object_store::aws::AmazonS3>, hedging::timer::ManualTimer>>,
    tokio::task::JoinHandle<object_store::Result<Vec<u8>>>,
) {
    let s3 = S3::start(first_body_stalls(), clock.clock()).await.unwrap();
    let location = Path::from("data/big.bin");
    let direct = s3.direct_store().unwrap();
    direct
        .put(&location, PutPayload::from(big(0)))
        .await
        .unwrap();
    let inner = common::Counted::new(s3.store().unwrap());
    let store = HedgedStore::new(inner, clock.policy(2, DELAY)).buffer_limit(64 * 1024);
    let store = Arc::new(store);
    let reading = Arc::clone(&store);
    let read = tokio::spawn(async move {
        let mut stream = reading.get(&location).await?.into_stream();
        let mut bytes = Vec::new();
        while let Some(chunk) = stream.next().await {
            bytes.extend_from_slice(&chunk?);
        }
        Ok(bytes)
    });
    (s3, store, read)
}

/// Waits until the reader has every byte before the stall and waits for more, then lets
/// the watch find the body stalled and the resume race's hedge go out.
async fn resume(clock: &VirtualClock, received: impl Fn() -> u64) {
    until(|| received() == STALL_AT, "the bytes before the stall").await;
    let timer = clock.timer();
    let watch = timer.next_deadline().expect("a quiet body is watched");
    clock.advance(watch - clock.now());
    let raced = clock.now();
    until(
        || timer.next_deadline() == Some(raced + DELAY),
        "the resume race",
    )
    .await;
    clock.advance(DELAY);
}

#[tokio::test]
async fn an_amazon_s3_body_stalled_mid_read_is_resumed_from_where_it_stopped() {
    let clock = VirtualClock::new();
    let (s3, store, read) = stalled_s3_read(&clock).await;
    resume(&clock, || common::received(store.inner())).await;

    assert_eq!(
        read.await.unwrap().unwrap(),
        big(0),
        "every byte once, in order"
    );
    let proxy = &s3.proxy;
    let seen = proxy.arrivals(BIG);
    assert_resumed_by_e_tag(&seen, STALL_AT, SIZE as u64, 2 * DELAY);
    assert_each_signed(&seen);
    proxy.until_closed(1).await;
    assert_eq!(
        proxy.closed_connections(),
        1,
        "the stalled body's connection, closed"
    );
    assert_resumed_once(store.policy());
}

#[tokio::test]
async fn an_amazon_s3_object_rewritten_between_stall_and_resume_is_a_precondition_error() {
    let clock = VirtualClock::new();
    let (s3, store, read) = stalled_s3_read(&clock).await;
    let received = || common::received(store.inner());
    until(|| received() == STALL_AT, "the bytes before the stall").await;
    let direct = s3.direct_store().unwrap();
    let location = Path::from("data/big.bin");
    direct
        .put(&location, PutPayload::from(big(1)))
        .await
        .unwrap();
    resume(&clock, received).await;

    // s3s-fs answers a GET whatever its If-Match says: the resume's ETag, checked
    // against the first answer's, is what refuses the second version's bytes.
    let error = read.await.unwrap().unwrap_err();
    assert!(
        matches!(error, object_store::Error::Precondition { .. }),
        "{error}"
    );
    assert_eq!(s3.proxy.arrivals(BIG).len(), 2);
    assert!(
        s3.proxy.arrivals(BIG)[1].header("if-match").is_some(),
        "asked for version 1"
    );
}
