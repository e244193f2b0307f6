//! `HedgedStore` over `object_store`'s `AmazonS3` (SigV4 signed, sent by hyper-util over
//! HTTP/1.1) against a real S3 server on loopback (`s3s-fs`) behind a proxy that holds
//! the first read of each object. What reaches the server is counted at the proxy; time
//! is virtual.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hedging_object_store::HedgedStore;
use hedging_test_server::s3::S3;
use hedging_test_server::{Answer, Behavior, Hold, VirtualClock};
use http::Method;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};

const DELAY: Duration = Duration::from_millis(20);
const OBJECT: &str = "/hedging/data/a.bin";

/// The first GET of each object is held until released, or until its client drops it.
fn first_read_held() -> Behavior {
    Arc::new(
        |arrival| match arrival.method == Method::GET && arrival.copy == 0 {
            true => Answer::ok().hold(Hold::Released),
            false => Answer::ok(),
        },
    )
}

fn object() -> Bytes {
    (0..64 * 1024)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<_>>()
        .into()
}

#[tokio::test]
async fn an_amazon_s3_loser_closes_its_connection_and_the_server_sees_it() {
    let clock = VirtualClock::new();
    let s3 = S3::start(first_read_held(), clock.clock()).await.unwrap();
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
    assert!(
        seen.iter().all(|copy| copy
            .header("authorization")
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256"))),
        "each copy signed with SigV4"
    );
    proxy.until_dropped(1).await;
    proxy.until_closed(1).await;
    assert_eq!(proxy.dropped(), 1, "the held original, dropped unanswered");
    assert_eq!(proxy.answered(), 1, "the hedge, answered by the S3 server");
    assert_eq!(
        proxy.closed_connections(),
        1,
        "the loser's connection, closed"
    );
    assert_eq!(proxy.connections(), 2, "the original's and the hedge's");
    assert_eq!(store.policy().stats().hedge_wins, 1);
}
