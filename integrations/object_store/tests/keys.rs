//! Reads keyed by their size class (or by `key_by`): `HedgedStore` over a real
//! `HttpStore` against the loopback object server, which holds the first read of each
//! path until the test has moved the virtual clock by that read's latency and released
//! it. One policy, `adaptive_keys`, learns a delay per size class; no test waits for time.

mod common;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_object_store::{HedgedStore, ReadKey, SizeClass};
use hedging_test_server::object::{objects, store, versioned, Objects, StallWhen, StallWhere};
use hedging_test_server::{until, Arrival, Hold, Pace, Server, VirtualClock};
use object_store::http::HttpStore;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt};

use common::{received, Counted};

/// The fixed delay: what a key hedges at until it has `SAMPLES` latencies of its own.
const FIXED: Duration = Duration::from_millis(100);
const FAST: Duration = Duration::from_millis(5);
const SLOW: Duration = Duration::from_millis(40);
const SAMPLES: u32 = 5;
/// A 4,000-byte range: size class 4096.
const SMALL: Range<u64> = 1_000..5_000;
/// A 40,000-byte range: size class 65536.
const LARGE: Range<u64> = 0..40_000;
const SMALL_CLASS: u64 = 4_096;
const LARGE_CLASS: u64 = 65_536;
const SIZE: usize = 80 * 1024;
/// Bucket edges are at most 1/16 above the value.
const EDGE: u32 = 16;

fn assert_near(delay: Option<Duration>, value: Duration) {
    let delay = delay.expect("an adaptive policy has a delay");
    assert!(
        delay >= value && delay <= value + value / EDGE,
        "delay {delay:?} is not the bucket of {value:?}"
    );
}

/// One policy for every read: an adaptive p95 per key (with `keys` > 0), a key's own
/// estimate once it has `SAMPLES` latencies, on `clock`.
fn policy(clock: &VirtualClock, keys: usize) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(FIXED)
        .adaptive_delay(0.95)
        .adaptive_keys(keys)
        .adaptive_min_samples(SAMPLES)
        .adaptive_window(Duration::from_secs(4)) // quarters of a second
        .timer(clock.timer())
        .build()
}

/// Moves the clock into the next quarter window, so the policy-wide estimate is computed
/// again from every read so far (between quarters only a first estimate is published).
fn next_quarter(clock: &VirtualClock) {
    let quarter = Duration::from_secs(1).as_nanos();
    let into = clock.now().as_nanos() % quarter;
    clock.advance(Duration::from_nanos((quarter - into) as u64));
}

fn object() -> Bytes {
    (0..SIZE).map(|i| (i % 251) as u8).collect()
}

/// A server holding `{table}/{n}.bin` for each table and `n` below 16, each holding its
/// first read until released.
async fn server(clock: &VirtualClock, tables: &[&str]) -> Server {
    let files = tables
        .iter()
        .flat_map(|table| (0..16).map(move |n| (format!("{table}/{n}.bin"), object())))
        .collect::<HashMap<_, _>>();
    let behavior = objects(
        files,
        StallWhen::FirstPerPath,
        StallWhere::Answer,
        Hold::Released,
    );
    Server::http(behavior, clock.clock()).await.unwrap()
}

type Store<K, S = HttpStore> = Arc<HedgedStore<S, ManualTimer, K>>;

/// Reads `range` of `path` once (`None`: the whole object), its copy held by the server
/// until the clock has moved by `latency`, then released: the read takes `latency`,
/// unhedged.
async fn timed_read<K: ReadKey, S: ObjectStore>(
    clock: &VirtualClock,
    server: &Server,
    store: &Store<K, S>,
    path: &str,
    range: Option<Range<u64>>,
    latency: Duration,
) {
    let (reading, location) = (Arc::clone(store), Path::from(path));
    let expected = match &range {
        Some(range) => object().slice(range.start as usize..range.end as usize),
        None => object(),
    };
    let read = tokio::spawn(async move {
        let options = GetOptions::new().with_range(range);
        reading.get_opts(&location, options).await?.bytes().await
    });
    let key = format!("/{path}");
    clock.hedge(server, &key, 1, latency).await;
    server.release(&key);
    assert_eq!(read.await.unwrap().unwrap(), expected);
    assert_eq!(
        server.arrivals(&key).len(),
        1,
        "{path}: read once, unhedged"
    );
}

/// `SAMPLES` reads of `range` in `table` (`None`: whole objects), each taking `latency`.
async fn train<K: ReadKey, S: ObjectStore>(
    clock: &VirtualClock,
    server: &Server,
    store: &Store<K, S>,
    table: &str,
    range: impl Into<Option<Range<u64>>>,
    latency: Duration,
) {
    let range = range.into();
    for n in 0..SAMPLES {
        let path = format!("{table}/{n}.bin");
        timed_read(clock, server, store, &path, range.clone(), latency).await;
    }
}

/// Starts a read of `SMALL` of `path` and waits until its original is held and its hedge
/// timer armed; returns the read and when it started.
async fn held_small_read<K: ReadKey>(
    clock: &VirtualClock,
    server: &Server,
    store: &Store<K>,
    path: &str,
) -> (
    tokio::task::JoinHandle<object_store::Result<Bytes>>,
    Duration,
) {
    let started = clock.now();
    let (reading, location) = (Arc::clone(store), Path::from(path));
    let read = tokio::spawn(async move { reading.get_range(&location, SMALL).await });
    server.until_arrived(&format!("/{path}"), 1).await;
    let timer = clock.timer();
    hedging_test_server::until(|| timer.next_deadline().is_some(), "the hedge timer armed").await;
    (read, started)
}

/// A server of the tables `fast` and `slow`, and a store over it with `keys` keys whose
/// policy learnt small reads of `fast` and large reads of `slow`, a quarter window ago.
async fn two_classes_learnt(clock: &VirtualClock, keys: usize) -> (Server, Store<SizeClass>) {
    let server = server(clock, &["fast", "slow"]).await;
    let store = Arc::new(HedgedStore::new(
        store(&server.url("/")).unwrap(),
        policy(clock, keys),
    ));
    train(clock, &server, &store, "fast", SMALL, FAST).await;
    train(clock, &server, &store, "slow", LARGE, SLOW).await;
    next_quarter(clock);
    (server, store)
}

/// Reads bytes `SMALL` of `path` through `store`, its original held, and asserts that its
/// hedge is due `delay` after it started and goes out then: what the read answered.
async fn assert_hedged_at<K: ReadKey>(
    clock: &VirtualClock,
    server: &Server,
    store: &Store<K>,
    path: &str,
    delay: Duration,
) {
    let (read, started) = held_small_read(clock, server, store, path).await;
    let key = format!("/{path}");
    assert_eq!(
        clock.timer().next_deadline(),
        Some(started + delay),
        "the hedge is due at the read's delay"
    );
    assert_eq!(
        server.arrivals(&key).len(),
        1,
        "before it: the original alone"
    );
    clock.advance(delay);
    let arrivals = server.until_arrived(&key, 2).await;
    assert_eq!(
        arrivals[1].at - started,
        delay,
        "the hedge went out at the delay"
    );
    assert_eq!(read.await.unwrap().unwrap(), object().slice(1_000..5_000));
    assert_eq!(server.arrivals(&key).len(), 2, "the original and one hedge");
}

#[test]
fn the_size_class_is_the_bytes_asked_for_rounded_up_to_a_power_of_two() {
    let range = |range: Range<u64>| GetOptions::new().with_range(Some(range));
    assert_eq!(SizeClass::of(&range(SMALL)), SMALL_CLASS);
    assert_eq!(SizeClass::of(&range(LARGE)), LARGE_CLASS);
    assert_eq!(SizeClass::of(&range(0..4_096)), 4_096);
    assert_eq!(SizeClass::of(&range(0..4_097)), 8_192);
    assert_eq!(SizeClass::of(&range(0..(1 << 63) + 1)), u64::MAX);
    assert_eq!(SizeClass::of(&GetOptions::new().with_head(true)), 0);
    assert_eq!(
        SizeClass::of(&GetOptions::new()),
        u64::MAX,
        "a whole object"
    );
    let offset = GetOptions {
        range: Some(object_store::GetRange::Offset(10)),
        ..GetOptions::default()
    };
    assert_eq!(
        SizeClass::of(&offset),
        u64::MAX,
        "from an offset to the end"
    );
    let suffix = GetOptions {
        range: Some(object_store::GetRange::Suffix(1_000)),
        ..GetOptions::default()
    };
    assert_eq!(SizeClass::of(&suffix), 1_024, "the last 1,000 bytes");
}

#[tokio::test]
async fn two_size_classes_of_different_speed_learn_two_delays() {
    let clock = VirtualClock::new();
    let server = server(&clock, &["fast", "slow"]).await;
    let store = Arc::new(HedgedStore::new(
        store(&server.url("/")).unwrap(),
        policy(&clock, 8),
    ));

    train(&clock, &server, &store, "fast", SMALL, FAST).await;
    train(&clock, &server, &store, "slow", LARGE, SLOW).await;

    let policy = store.policy();
    assert_near(policy.delay_for(&SMALL_CLASS), FAST);
    assert_near(policy.delay_for(&LARGE_CLASS), SLOW);
    assert_eq!(
        policy.delay_for(&SizeClass::HEAD),
        Some(FIXED),
        "no head yet"
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (2 * u64::from(SAMPLES), 0));
}

#[tokio::test]
async fn the_fast_size_class_hedges_at_its_own_delay() {
    let clock = VirtualClock::new();
    let (server, store) = two_classes_learnt(&clock, 8).await;
    let policy = store.policy();
    // The mixed estimate is the slow class's p95; the small reads have their own.
    assert_near(policy.delay(), SLOW);
    let fast = policy.delay_for(&SMALL_CLASS).unwrap();
    assert_near(Some(fast), FAST);

    // The hedge is due at the small class's delay.
    assert_hedged_at(&clock, &server, &store, "fast/15.bin", fast).await;
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn key_by_replaces_the_size_class() {
    let clock = VirtualClock::new();
    let server = server(&clock, &["hot", "cold"]).await;
    // Keyed by table, the first part of the path: one size of read, two delays.
    let table = |location: &Path, _: &GetOptions| {
        let first = location.parts().next();
        first
            .map(|part| part.as_ref().to_owned())
            .unwrap_or_default()
    };
    let store = HedgedStore::new(store(&server.url("/")).unwrap(), policy(&clock, 8));
    let store = Arc::new(store.key_by(table));

    train(&clock, &server, &store, "hot", SMALL, FAST).await;
    train(&clock, &server, &store, "cold", SMALL, SLOW).await;

    let policy = store.policy();
    assert_near(policy.delay_for("hot"), FAST);
    assert_near(policy.delay_for("cold"), SLOW);
    assert_eq!(
        policy.delay_for(&SMALL_CLASS),
        Some(FIXED),
        "nothing learnt under the size class"
    );

    // And the hot table's reads hedge at its own delay.
    next_quarter(&clock);
    let hot = policy.delay_for("hot").unwrap();
    assert_hedged_at(&clock, &server, &store, "hot/15.bin", hot).await;
}

#[tokio::test]
async fn a_policy_without_keys_gives_every_size_class_the_one_delay() {
    let clock = VirtualClock::new();
    let (server, store) = two_classes_learnt(&clock, 0).await;

    let policy = store.policy();
    assert_near(policy.delay(), SLOW);
    assert_eq!(policy.delay_for(&SMALL_CLASS), policy.delay());
    assert_eq!(policy.delay_for(&LARGE_CLASS), policy.delay());

    // A small read hedges at the mixed delay, the slow class's.
    let mixed = policy.delay().unwrap();
    assert_hedged_at(&clock, &server, &store, "fast/15.bin", mixed).await;
}

/// Bytes of the object before its first answer's body stalls.
const STALL_AT: u64 = 100_000;
const BIG: &str = "/data/big.bin";

#[tokio::test]
async fn a_resume_of_a_stalled_body_hedges_at_the_reads_own_delay() {
    let clock = VirtualClock::new();
    let files = Objects::new();
    files.put(
        "data/big.bin",
        (0..256 * 1024).map(|i| (i % 7) as u8).collect(),
    );
    for n in 0..SAMPLES {
        files.put(&format!("whole/{n}.bin"), object());
        files.put(&format!("slow/{n}.bin"), object());
    }
    // The big object's first answer stalls mid-body; a resume (with `If-Match`) does not.
    // Every other path's first read is held before its body until released.
    let pace = |arrival: &Arrival| match (arrival.path.as_str(), arrival.header("if-match")) {
        (BIG, None) => Pace::StallAfter {
            bytes: STALL_AT,
            hold: Hold::Released,
        },
        (BIG, Some(_)) => Pace::Whole,
        _ if arrival.copy == 0 => Pace::StallAfter {
            bytes: 0,
            hold: Hold::Released,
        },
        _ => Pace::Whole,
    };
    let server = Server::http(versioned(files, pace), clock.clock())
        .await
        .unwrap();
    let inner = Counted::new(store(&server.url("/")).unwrap());
    let store = HedgedStore::new(inner, policy(&clock, 8)).buffer_limit(128 * 1024);
    let store = Arc::new(store);

    // Whole-object reads (class u64::MAX) are fast, small ranges slow: the policy-wide
    // estimate is the slow one's, a whole read's its own.
    train(&clock, &server, &store, "whole", None, FAST).await;
    train(&clock, &server, &store, "slow", SMALL, SLOW).await;
    next_quarter(&clock);
    let policy = store.policy();
    assert_near(policy.delay(), SLOW);
    let fast = policy.delay_for(&SizeClass::UNKNOWN).unwrap();
    assert_near(Some(fast), FAST);

    let before = received(store.inner()); // what the training reads yielded
    let reading = Arc::clone(&store);
    let read = tokio::spawn(async move {
        let location = Path::from("data/big.bin");
        reading.get(&location).await?.bytes().await
    });
    until(
        || received(store.inner()) == before + STALL_AT,
        "the bytes before the stall",
    )
    .await;
    let (timer, quiet) = (clock.timer(), clock.now());
    until(|| timer.next_deadline().is_some(), "the body watched").await;
    assert_eq!(
        timer.next_deadline(),
        Some(quiet + fast),
        "stalled after the whole read's delay, not the policy-wide one"
    );
    clock.advance(fast);
    let hedge_due = || timer.next_deadline() == Some(quiet + 2 * fast);
    until(
        hedge_due,
        "the resume race, its hedge due at the read's delay",
    )
    .await;
    assert_eq!(
        server.arrivals(BIG).len(),
        1,
        "before it: the stalled body alone"
    );
    clock.advance(fast);
    let arrivals = server.until_arrived(BIG, 2).await;
    assert!(arrivals[1].header("if-match").is_some(), "a resume");
    assert_eq!(arrivals[1].at - quiet, 2 * fast);

    let bytes = read.await.unwrap().unwrap();
    assert_eq!(bytes.len(), 256 * 1024);
    assert!(bytes.iter().enumerate().all(|(i, &b)| b == (i % 7) as u8));
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.hedge_wins), (1, 1), "the resume won");
}
