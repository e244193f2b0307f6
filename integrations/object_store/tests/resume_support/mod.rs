//! What the resume tests share: the object server holding one large object whose
//! answers stall, a hedged `HttpStore` over it on a virtual clock, and the steps of a
//! stall's resume.
#![allow(dead_code)] // each test file uses its own part

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{store, versioned, Objects};
use hedging_test_server::{until, Arrival, Behavior, Hold, Pace, Server, VirtualClock};
use object_store::http::HttpStore;
use object_store::path::Path;
use object_store::{Error, ObjectStoreExt};

use crate::common::{received, Counted};

pub const DELAY: Duration = Duration::from_millis(20);
pub const SIZE: usize = 256 * 1024;
pub const LIMIT: usize = 64 * 1024;
pub const STALL_AT: u64 = 100_000;
pub const KEY: &str = "/data/big.bin";

/// Version `version` of the object: byte i is `i % 251 + version`.
pub fn object(size: usize, version: u8) -> Bytes {
    (0..size)
        .map(|i| ((i % 251) as u8).wrapping_add(version))
        .collect()
}

pub fn path() -> Path {
    Path::from("data/big.bin")
}

pub type Store = Arc<HedgedStore<Counted<HttpStore>, ManualTimer>>;

pub struct Setup {
    pub clock: VirtualClock,
    pub server: Server,
    pub objects: Objects,
    pub store: Store,
}

/// The object server holding `data/big.bin` (`size` bytes, version 1), each answer's
/// body sent as `pace` says for it; a hedged `HttpStore` on it, buffering answers of up
/// to 64 KiB, hedged by the policy `policy` makes on the virtual clock.
pub async fn setup(
    size: usize,
    policy: impl FnOnce(&VirtualClock) -> Policy<ManualTimer>,
    pace: impl Fn(&Arrival) -> Pace + Send + Sync + 'static,
) -> Setup {
    setup_served(size, policy, |objects| versioned(objects, pace)).await
}

/// As [`setup`], the server answering as the behavior `served` makes of its objects.
pub async fn setup_served(
    size: usize,
    policy: impl FnOnce(&VirtualClock) -> Policy<ManualTimer>,
    served: impl FnOnce(Objects) -> Behavior,
) -> Setup {
    let clock = VirtualClock::new();
    let objects = Objects::new();
    objects.put("data/big.bin", object(size, 0));
    let server = Server::http(served(objects.clone()), clock.clock())
        .await
        .unwrap();
    let inner = Counted::new(store(&server.url("/")).unwrap());
    let store = HedgedStore::new(inner, policy(&clock)).buffer_limit(LIMIT);
    Setup {
        clock,
        server,
        objects,
        store: Arc::new(store),
    }
}

pub fn copies(max_copies: usize) -> impl FnOnce(&VirtualClock) -> Policy<ManualTimer> {
    move |clock| clock.policy(max_copies, DELAY)
}

/// Held after `bytes`, until the test releases the key or the client drops the body.
pub fn stall(bytes: u64) -> Pace {
    Pace::StallAfter {
        bytes,
        hold: Hold::Released,
    }
}

/// Every read's first answer stalls after `bytes`; a resume (it has `If-Match`) does not.
pub fn first_answers_stall(bytes: u64) -> impl Fn(&Arrival) -> Pace + Send + Sync + 'static {
    move |arrival| match arrival.header("if-match") {
        None => stall(bytes),
        Some(_) => Pace::Whole,
    }
}

/// Reads the whole object as a stream: the bytes it yielded, and the error that ended
/// it, if one did.
pub async fn read_whole(store: Store) -> (Vec<u8>, Option<Error>) {
    let mut bytes = Vec::new();
    let mut stream = match store.get(&path()).await {
        Ok(result) => result.into_stream(),
        Err(error) => return (bytes, Some(error)),
    };
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(error) => return (bytes, Some(error)),
        }
    }
    (bytes, None)
}

/// Waits until the reader got `bytes` body bytes and waits for more; lets the body stay
/// quiet until the watch finds it stalled, then for the policy's delay, when the resume
/// race's hedge is due; returns once the server saw `requests` requests.
pub async fn resume_at(s: &Setup, bytes: u64, requests: usize) {
    hedge_due_at(s, bytes).await;
    s.clock.advance(DELAY);
    s.server.until_arrived(KEY, requests).await;
}

/// As [`resume_at`], up to the resume race's hedge being due: the delay left to wait.
pub async fn hedge_due_at(s: &Setup, bytes: u64) {
    let inner = s.store.inner();
    until(
        || received(inner) == bytes,
        "the bytes sent before the stall",
    )
    .await;
    let now = s.clock.now();
    let timer = s.clock.timer();
    let watch = timer.next_deadline().expect("a quiet body is watched");
    assert!(watch >= now + DELAY, "never stalled before the delay");
    s.clock.advance(watch - now);
    let raced = s.clock.now();
    let hedge_due = || timer.next_deadline() == Some(raced + DELAY);
    until(hedge_due, "the resume race, its hedge due at the delay").await;
}
