//! `HedgedHttpClient` keys each call by `(operation, resource)` on a policy with keys, or
//! by `key_by`: against the real S3 server on loopback behind its holding proxy (and the
//! DynamoDB loopback server), one hedged client over two buckets of different speed. Time
//! is virtual: each read is held by the proxy until the test has moved the clock by its
//! bucket's latency, and a hedge goes out when the test moves the clock, never after a
//! sleep.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging::{Policy, PolicyBuilder};
use hedging_aws::{HedgedHttpClient, Operation};
use hedging_test_server::s3::S3;
use hedging_test_server::{until, Answer, Behavior, Hold, VirtualClock};

use common::{answered, hedged_dynamodb, hedged_s3, http_client, plain_s3};

const FAST: &str = "fast";
const SLOW: &str = "slow";
const FAST_LATENCY: Duration = Duration::from_millis(5);
const SLOW_LATENCY: Duration = Duration::from_millis(40);
/// The fixed delay a key hedges at until it holds `SAMPLES` latencies: longer than either
/// bucket's latency, so no training read is hedged.
const FIXED: Duration = Duration::from_secs(1);
const SAMPLES: usize = 4;
/// The object every hedged read in a test reads, held until the test releases it.
const HELD: &str = "held";

/// The adaptive delay's histogram buckets are at most 1/16 above the value they hold.
fn assert_near(delay: Option<Duration>, value: Duration) {
    let delay = delay.expect("an adaptive policy has a delay");
    assert!(
        delay >= value && delay <= value + value / 16,
        "delay {delay:?} is not the bucket of {value:?}"
    );
}

/// What each bucket's objects hold.
fn object(bucket: &str) -> Bytes {
    Bytes::from(format!("the object of bucket {bucket}"))
}

fn training_object(index: usize) -> String {
    format!("object-{index}")
}

/// The first copy of every read is held until the test releases its path; hedges pass.
fn originals_held() -> Behavior {
    Arc::new(|arrival| match arrival.copy {
        0 => Answer::ok().hold(Hold::Released),
        _ => Answer::ok(),
    })
}

/// An S3 server behind a proxy holding as `behavior` says, with the buckets `fast` and
/// `slow`, each holding `HELD` and the training objects, put straight to the server.
async fn two_buckets(behavior: Behavior, clock: &VirtualClock) -> S3 {
    let s3 = S3::start(behavior, clock.clock()).await.unwrap();
    let direct = plain_s3(&format!("http://{}", s3.direct));
    for bucket in [FAST, SLOW] {
        direct.create_bucket().bucket(bucket).send().await.unwrap();
        let objects = (0..2 * SAMPLES).map(training_object);
        for key in objects.chain([HELD.to_owned()]) {
            let body = ByteStream::from(object(bucket));
            let put = direct.put_object().bucket(bucket).key(key).body(body);
            put.send().await.unwrap();
        }
    }
    s3
}

/// A policy of two copies with an adaptive p95 delay, learnt per key when `keys`.
fn adaptive(clock: &VirtualClock, keys: bool) -> PolicyBuilder<ManualTimer> {
    let builder = Policy::builder().max_copies(2).adaptive_delay(0.95);
    let builder = if keys {
        builder.adaptive_keys(8)
    } else {
        builder
    };
    builder
        .delay(FIXED)
        .adaptive_min_samples(SAMPLES as u32)
        .adaptive_window(Duration::from_secs(4)) // quarters of a second
        .timer(clock.timer())
}

/// Moves the clock into the next quarter window, so every estimate is computed again from
/// the quarter that completed (between quarters, only a first estimate is published).
fn next_quarter(clock: &VirtualClock) {
    let quarter = Duration::from_secs(1).as_nanos();
    let into = clock.now().as_nanos() % quarter;
    clock.advance(Duration::from_nanos((quarter - into) as u64));
}

/// Spawns a `GetObject` of `bucket/key` that reads its body to the end.
fn get_object(sdk: &aws_sdk_s3::Client, bucket: &str, key: &str) -> tokio::task::JoinHandle<Bytes> {
    let get = sdk.get_object().bucket(bucket).key(key).send();
    tokio::spawn(async move {
        let answer = get.await.expect("an answer");
        answer.body.collect().await.expect("the body").into_bytes()
    })
}

/// Reads `bucket/key`, held by the proxy until the clock has moved by `latency`: a call
/// whose latency, on the policy's clock, is exactly `latency`.
async fn read_taking(
    sdk: &aws_sdk_s3::Client,
    s3: &S3,
    clock: &VirtualClock,
    (bucket, key): (&str, &str),
    latency: Duration,
) {
    let read = get_object(sdk, bucket, key);
    let path = format!("/{bucket}/{key}");
    s3.proxy.until_arrived(&path, 1).await;
    clock.advance(latency);
    s3.proxy.release(&path);
    assert_eq!(answered(read).await, object(bucket));
}

/// `SAMPLES` reads of the slow bucket, then as many of the fast one, none of them hedged.
async fn train(sdk: &aws_sdk_s3::Client, s3: &S3, clock: &VirtualClock) {
    for (bucket, latency, first) in [(SLOW, SLOW_LATENCY, 0), (FAST, FAST_LATENCY, SAMPLES)] {
        for index in first..first + SAMPLES {
            let key = training_object(index);
            read_taking(sdk, s3, clock, (bucket, &key), latency).await;
        }
    }
}

/// Reads `HELD` of `bucket`, whose original the proxy holds, and returns how long after
/// the original its hedge arrived: the delay the call hedged at.
async fn hedged_at(
    sdk: &aws_sdk_s3::Client,
    s3: &S3,
    clock: &VirtualClock,
    bucket: &str,
) -> Duration {
    let read = get_object(sdk, bucket, HELD);
    let path = format!("/{bucket}/{HELD}");
    s3.proxy.until_arrived(&path, 1).await;
    let timer = clock.timer();
    until(
        || timer.next_deadline().is_some(),
        "the hedge's timer armed",
    )
    .await;
    let armed = timer.next_deadline().unwrap() - clock.now();
    assert_eq!(s3.proxy.arrivals(&path).len(), 1, "the original alone");
    clock.advance(armed);
    let seen = s3.proxy.until_arrived(&path, 2).await;
    assert_eq!(answered(read).await, object(bucket), "the hedge's body");
    assert_eq!(seen.len(), 2, "the original and one hedge");
    s3.proxy.release(&path);
    seen[1].at - seen[0].at
}

/// The two buckets, their originals held, and a hedged client over them on an adaptive
/// policy, with keys or without.
async fn two_buckets_hedged(
    clock: &VirtualClock,
    keys: bool,
) -> (S3, Policy<ManualTimer>, HedgedHttpClient<ManualTimer>) {
    let s3 = two_buckets(originals_held(), clock).await;
    let policy = adaptive(clock, keys).build();
    let client = HedgedHttpClient::new(http_client(), policy.clone());
    (s3, policy, client)
}

#[tokio::test]
async fn two_buckets_of_different_speed_learn_two_delays() {
    let clock = VirtualClock::new();
    let (s3, policy, client) = two_buckets_hedged(&clock, true).await;
    let sdk = hedged_s3(&s3.proxy.origin(), client);

    train(&sdk, &s3, &clock).await;

    assert_near(policy.delay_for(&("GetObject", FAST)), FAST_LATENCY);
    assert_near(policy.delay_for(&("GetObject", SLOW)), SLOW_LATENCY);
    assert_eq!(
        policy.delay_for(&("HeadObject", FAST)),
        Some(FIXED),
        "another operation is another key, with nothing learnt yet"
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (2 * SAMPLES as u64, 0));
}

#[tokio::test]
async fn the_fast_bucket_hedges_at_its_own_delay() {
    let clock = VirtualClock::new();
    let (s3, policy, client) = two_buckets_hedged(&clock, true).await;
    let sdk = hedged_s3(&s3.proxy.origin(), client);
    train(&sdk, &s3, &clock).await;
    next_quarter(&clock);
    // The policy-wide p95 of both buckets' reads is the slow bucket's.
    assert_near(policy.delay(), SLOW_LATENCY);
    let fast = policy.delay_for(&("GetObject", FAST)).unwrap();
    assert_near(Some(fast), FAST_LATENCY);

    assert_eq!(hedged_at(&sdk, &s3, &clock, FAST).await, fast);
    let slow = policy.delay_for(&("GetObject", SLOW)).unwrap();
    assert_near(Some(slow), SLOW_LATENCY);
    assert_eq!(hedged_at(&sdk, &s3, &clock, SLOW).await, slow);
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.hedge_wins), (2, 2));
}

#[tokio::test]
async fn key_by_replaces_the_default_key() {
    let clock = VirtualClock::new();
    let (s3, policy, client) = two_buckets_hedged(&clock, true).await;
    // One key for every read of an operation, whatever its bucket.
    let client = client.key_by(|operation: &Operation| operation.name().to_owned());
    let sdk = hedged_s3(&s3.proxy.origin(), client);

    for index in 0..SAMPLES {
        let key = training_object(index);
        read_taking(&sdk, &s3, &clock, (FAST, &key), FAST_LATENCY).await;
    }

    assert_near(policy.delay_for("GetObject"), FAST_LATENCY);
    assert_eq!(
        policy.delay_for(&("GetObject", FAST)),
        Some(FIXED),
        "nothing learnt under the default key"
    );
    assert_eq!(
        hedged_at(&sdk, &s3, &clock, SLOW).await,
        policy.delay_for("GetObject").unwrap()
    );
}

#[tokio::test]
async fn a_policy_without_keys_hedges_every_bucket_at_its_one_delay() {
    let clock = VirtualClock::new();
    let (s3, policy, client) = two_buckets_hedged(&clock, false).await;
    let sdk = hedged_s3(&s3.proxy.origin(), client);

    train(&sdk, &s3, &clock).await;

    // The slow reads came first: the policy's first estimate is theirs, for both buckets.
    let delay = policy.delay().unwrap();
    assert_near(Some(delay), SLOW_LATENCY);
    assert_eq!(policy.delay_for(&("GetObject", FAST)), Some(delay));
    assert_eq!(policy.delay_for(&("GetObject", SLOW)), Some(delay));
    assert_eq!(hedged_at(&sdk, &s3, &clock, FAST).await, delay);
}

#[tokio::test]
async fn key_by_is_called_once_per_call_and_only_with_keys() {
    for keys in [true, false] {
        let clock = VirtualClock::new();
        let s3 = two_buckets(originals_held(), &clock).await;
        let calls = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&calls);
        let client = HedgedHttpClient::new(http_client(), adaptive(&clock, keys).build())
            .key_by(move |_: &Operation| counted.fetch_add(1, Relaxed));
        let sdk = hedged_s3(&s3.proxy.origin(), client.clone());

        assert_eq!(hedged_at(&sdk, &s3, &clock, FAST).await, FIXED);

        let stats = client.policy().stats();
        assert_eq!((stats.calls, stats.hedges), (1, 1), "keys: {keys}");
        let expected = if keys { 1 } else { 0 };
        assert_eq!(
            calls.load(Relaxed),
            expected,
            "keys: {keys}: once, not per copy"
        );
    }
}

#[tokio::test]
async fn each_operation_is_keyed_by_its_bucket_or_table() {
    let clock = VirtualClock::new();
    let s3 = two_buckets(Arc::new(|_| Answer::ok()), &clock).await;
    let dynamodb = common::dynamodb(|_| Hold::No, clock.clock()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let client = HedgedHttpClient::new(http_client(), adaptive(&clock, true).build()).key_by(
        move |operation: &Operation| {
            let key = (operation.name().to_owned(), operation.resource().to_owned());
            record.lock().unwrap().push(key.clone());
            key
        },
    );
    let sdk = hedged_s3(&s3.proxy.origin(), client.clone());
    let table = hedged_dynamodb(&dynamodb.origin(), client);

    let object = sdk
        .get_object()
        .bucket(FAST)
        .key(HELD)
        .send()
        .await
        .unwrap();
    object.body.collect().await.unwrap();
    sdk.head_object()
        .bucket(SLOW)
        .key(HELD)
        .send()
        .await
        .unwrap();
    sdk.list_objects_v2().bucket(FAST).send().await.unwrap();
    let id = AttributeValue::S("a".into());
    let item = table.get_item().table_name("orders").key("id", id);
    item.send().await.unwrap();
    table.query().table_name("users").send().await.unwrap();
    let batch = table.batch_get_item().send().await;
    batch.expect_err("the loopback server answers BatchGetItem with a 400");

    let seen = seen.lock().unwrap().clone();
    let expected = [
        ("GetObject", FAST),
        ("HeadObject", SLOW),
        ("ListObjectsV2", FAST),
        ("GetItem", "orders"),
        ("Query", "users"),
        ("BatchGetItem", ""),
    ];
    let expected: Vec<_> = expected
        .iter()
        .map(|(name, resource)| (name.to_string(), resource.to_string()))
        .collect();
    assert_eq!(seen, expected);
}
