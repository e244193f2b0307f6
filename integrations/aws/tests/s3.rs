//! `HedgedHttpClient` in an `aws-sdk-s3` client against a real S3 server on loopback
//! (`s3s-fs`, which checks each request's SigV4 signature) behind a proxy that holds the
//! first request of each object and counts what reaches it. Time is virtual: a hedge goes
//! out when the test moves the policy's clock, never after a sleep.

mod common;

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging_aws::HedgedHttpClient;
use hedging_test_server::counts::assert_one_hedge_won;
use hedging_test_server::s3::{assert_the_loser_was_closed, first_held, object, S3};
use hedging_test_server::{Behavior, VirtualClock, NEVER};
use http::Method;

use common::{answered, hedged_s3, http_client, plain_s3};

const DELAY: Duration = Duration::from_millis(20);
const KEY: &str = "data/a.bin";
const OBJECT: &str = "/hedging/data/a.bin";

/// An S3 server holding as `behavior` says, with the object at `KEY` put straight to the
/// server (not through the proxy, whose counts start at zero).
async fn server_with_object(behavior: Behavior, clock: &VirtualClock) -> S3 {
    let s3 = S3::start(behavior, clock.clock()).await.unwrap();
    let direct = plain_s3(&format!("http://{}", s3.direct));
    direct
        .put_object()
        .bucket(hedging_test_server::s3::BUCKET)
        .key(KEY)
        .body(ByteStream::from(object()))
        .send()
        .await
        .unwrap();
    s3
}

/// A GetObject of `KEY` through `sdk` on a task of its own, its body read to the end.
fn read_object(sdk: &aws_sdk_s3::Client) -> tokio::task::JoinHandle<Bytes> {
    let get = sdk
        .get_object()
        .bucket(hedging_test_server::s3::BUCKET)
        .key(KEY)
        .send();
    tokio::spawn(async move {
        let answer = get.await.expect("an answer");
        answer.body.collect().await.expect("the body").into_bytes()
    })
}

fn hedged(clock: &VirtualClock) -> HedgedHttpClient<ManualTimer> {
    HedgedHttpClient::new(http_client(), clock.policy(2, DELAY))
}

#[tokio::test]
async fn a_stalled_get_object_is_rescued_by_a_hedge() {
    let clock = VirtualClock::new();
    let s3 = server_with_object(first_held(Method::GET), &clock).await;
    let client = hedged(&clock);
    let sdk = hedged_s3(&s3.proxy.origin(), client.clone());

    let read = read_object(&sdk);
    clock.hedge(&s3.proxy, OBJECT, 1, DELAY).await;

    assert_eq!(answered(read).await, object(), "the hedge's body, whole");
    let seen = s3.proxy.arrivals(OBJECT);
    assert_eq!(seen.len(), 2, "the original and one hedge");
    assert!(seen.iter().all(|copy| copy.method == Method::GET));
    let signatures: Vec<_> = seen
        .iter()
        .map(|copy| copy.header("authorization"))
        .collect();
    assert!(
        signatures[0].is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256")),
        "signed"
    );
    assert_eq!(
        signatures[0], signatures[1],
        "the hedge sent as signed, signature and all"
    );
    assert_one_hedge_won(client.policy());
}

#[tokio::test]
async fn a_stalled_head_object_is_rescued_by_a_hedge() {
    let clock = VirtualClock::new();
    let s3 = server_with_object(first_held(Method::HEAD), &clock).await;
    let client = hedged(&clock);
    let sdk = hedged_s3(&s3.proxy.origin(), client.clone());

    let head = sdk
        .head_object()
        .bucket(hedging_test_server::s3::BUCKET)
        .key(KEY)
        .send();
    let head = tokio::spawn(head);
    clock.hedge(&s3.proxy, OBJECT, 1, DELAY).await;

    let head = answered(head).await.unwrap();
    assert_eq!(head.content_length(), Some(object().len() as i64));
    let seen = s3.proxy.arrivals(OBJECT);
    assert_eq!(
        seen.iter().map(|c| c.method.clone()).collect::<Vec<_>>(),
        [Method::HEAD, Method::HEAD]
    );
    let stats = client.policy().stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn the_losers_connection_is_closed() {
    let clock = VirtualClock::new();
    let s3 = server_with_object(first_held(Method::GET), &clock).await;
    let sdk = hedged_s3(&s3.proxy.origin(), hedged(&clock));

    // The winner's body read to its end, so its connection goes back to the pool:
    // dropping an unread body would close that connection too.
    let read = read_object(&sdk);
    clock.hedge(&s3.proxy, OBJECT, 1, DELAY).await;
    assert_eq!(answered(read).await, object());

    let proxy = &s3.proxy;
    assert_the_loser_was_closed(proxy).await;
}

#[tokio::test]
async fn put_object_is_never_hedged() {
    let clock = VirtualClock::new();
    let s3 = S3::start(first_held(Method::PUT), clock.clock())
        .await
        .unwrap();
    let client = hedged(&clock);
    let sdk = hedged_s3(&s3.proxy.origin(), client.clone());

    let put = sdk
        .put_object()
        .bucket(hedging_test_server::s3::BUCKET)
        .key(KEY)
        .body(ByteStream::from(object()))
        .send();
    let put = tokio::spawn(put);
    // Held past any hedge delay, then let go: a hedged PUT would have been copied.
    clock.release(&s3.proxy, OBJECT).await;
    answered(put).await.unwrap();

    assert_eq!(s3.proxy.arrivals(OBJECT).len(), 1, "sent once");
    assert_eq!(clock.sleeps_created(), 0, "no hedge timer armed");
    let stats = client.policy().stats();
    assert_eq!((stats.calls, stats.hedges, stats.out_of_scope), (0, 0, 1));
    assert!(clock.now() >= NEVER);
}

#[tokio::test]
async fn a_streaming_body_that_cannot_be_copied_is_sent_once() {
    let clock = VirtualClock::new();
    let s3 = S3::start(first_held(Method::PUT), clock.clock())
        .await
        .unwrap();
    // PUTs listed as hedged: the body alone keeps this one from being copied.
    let client = hedged(&clock).operations(["PutObject"]);
    let sdk = hedged_s3(&s3.proxy.origin(), client.clone());
    let chunks = object()
        .chunks(8 * 1024)
        .map(Bytes::copy_from_slice)
        .collect::<Vec<_>>();
    let stream = futures_util::stream::iter(
        chunks
            .into_iter()
            .map(|chunk| Ok::<_, std::io::Error>(http_body::Frame::data(chunk))),
    );
    let body =
        aws_smithy_types::body::SdkBody::from_body_1_x(http_body_util::StreamBody::new(stream));
    assert!(body.try_clone().is_none(), "a body that cannot be copied");

    let put = sdk
        .put_object()
        .bucket(hedging_test_server::s3::BUCKET)
        .key(KEY)
        .content_length(object().len() as i64)
        .body(ByteStream::new(body))
        .send();
    let put = tokio::spawn(put);
    clock.release(&s3.proxy, OBJECT).await;
    answered(put).await.unwrap();

    assert_eq!(s3.proxy.arrivals(OBJECT).len(), 1, "sent once");
    let stats = client.policy().stats();
    assert_eq!(
        (stats.calls, stats.hedges, stats.out_of_scope),
        (1, 0, 0),
        "a call, unhedged"
    );
    let stored = plain_s3(&format!("http://{}", s3.direct))
        .get_object()
        .bucket(hedging_test_server::s3::BUCKET)
        .key(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(
        stored.body.collect().await.unwrap().into_bytes(),
        object(),
        "the whole body, once"
    );
}
