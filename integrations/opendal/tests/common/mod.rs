//! What the tests share: OpenDAL operators for the loopback servers (their requests sent
//! by hyper-util), hedged by a policy on a virtual clock; a reader that counts the bytes
//! it received; and the steps that drive a stalled body to its resume.

#![allow(dead_code)] // each test file uses its own share

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_opendal::{CallKey, HedgeLayer};
use hedging_test_server::opendal::context;
use hedging_test_server::s3::{credentials, BUCKET, S3};
use hedging_test_server::{until, VirtualClock};
use opendal::services::{Http, S3 as S3Service};
use opendal::{BytesRange, Error, ErrorKind, Operator, Result};

/// The hedge delay of every test's policy.
pub const DELAY: Duration = Duration::from_millis(20);
/// The size of the object the resume tests read.
pub const SIZE: usize = 256 * 1024;
/// The buffer limit of the resume tests' layers.
pub const LIMIT: u64 = 64 * 1024;
/// Where the first body of a resume test's read stalls.
pub const STALL_AT: u64 = 100_000;

/// The OpenDAL S3 service for `S3`'s bucket at `addr`, signing with its credentials and
/// loading nothing from the environment.
fn s3_at(addr: std::net::SocketAddr) -> Result<Operator> {
    let (access_key, secret_key) = credentials();
    let builder = S3Service::default()
        .endpoint(&format!("http://{addr}"))
        .bucket(BUCKET)
        .region("us-east-1")
        .access_key_id(access_key)
        .secret_access_key(secret_key)
        .disable_config_load()
        .disable_ec2_metadata();
    Ok(Operator::new(builder)?.with_context(context()))
}

/// An S3 operator through the stalling proxy, hedged by `policy`.
pub fn s3_hedged(s3: &S3, layer: HedgeLayer<ManualTimer>) -> Result<Operator> {
    Ok(s3_at(s3.proxy.addr)?.layer(layer))
}

/// An S3 operator straight to the S3 server, for putting objects unseen by the proxy.
pub fn s3_direct(s3: &S3) -> Result<Operator> {
    s3_at(s3.direct)
}

/// An HTTP-service operator on `url`, hedged by `layer`.
pub fn http_hedged<K: CallKey>(url: &str, layer: HedgeLayer<ManualTimer, K>) -> Result<Operator> {
    Ok(http_direct(url)?.layer(layer))
}

/// An HTTP-service operator on `url`, not hedged.
pub fn http_direct(url: &str) -> Result<Operator> {
    let builder = Http::default().endpoint(url);
    Ok(Operator::new(builder)?.with_context(context()))
}

/// Two copies, the second `DELAY` after the first, on `clock`.
pub fn policy(clock: &VirtualClock) -> Policy<ManualTimer> {
    clock.policy(2, DELAY)
}

/// Reads `path` whole as a stream on a task, counting the bytes it received in
/// `received`: what it read, and the error that ended it, if one did. The caller keeps
/// `op` (its connection pool) alive, so that only the connections of losers close.
pub fn read_streamed(
    op: &Operator,
    path: &'static str,
    received: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<(Vec<u8>, Option<opendal::Error>)> {
    read_range_streamed(op, path, BytesRange::from(..), received)
}

/// [`read_streamed`] of `range` of `path`.
pub fn read_range_streamed(
    op: &Operator,
    path: &'static str,
    range: BytesRange,
    received: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<(Vec<u8>, Option<opendal::Error>)> {
    let op = op.clone();
    tokio::spawn(async move {
        let mut bytes = Vec::new();
        let stream = async { op.reader(path).await?.into_stream(range).await }.await;
        let mut stream = match stream {
            Ok(stream) => stream,
            Err(error) => return (bytes, Some(error)),
        };
        loop {
            match stream.try_next().await {
                Ok(Some(chunk)) => {
                    bytes.extend_from_slice(&chunk.to_bytes());
                    received.fetch_add(chunk.len() as u64, Relaxed);
                }
                Ok(None) => return (bytes, None),
                Err(error) => return (bytes, Some(error)),
            }
        }
    })
}

/// Waits until the reader received `bytes` and waits for more, its quiet body watched;
/// lets the watch find the body stalled, then the resume race's delay pass: the resume
/// goes out.
pub async fn resume_at(clock: &VirtualClock, received: &AtomicU64, bytes: u64) {
    let timer = clock.timer();
    let watched = || received.load(Relaxed) == bytes && timer.next_deadline().is_some();
    until(watched, "the bytes before the stall, the body watched").await;
    let watch = timer.next_deadline().expect("a quiet body is watched");
    assert!(
        watch >= clock.now() + DELAY,
        "never stalled before the delay"
    );
    clock.advance(watch - clock.now());
    let raced = clock.now();
    let hedge_due = || timer.next_deadline() == Some(raced + DELAY);
    until(hedge_due, "the resume race, its hedge due at the delay").await;
    clock.advance(DELAY);
}

/// Reads `path` (a [`SIZE`]-byte object whose first body stalls at [`STALL_AT`]) through
/// its resume, and asserts that it read every byte once, in order.
pub async fn read_through_its_resume(op: &Operator, path: &'static str, clock: &VirtualClock) {
    let received = Arc::new(AtomicU64::new(0));
    let read = read_streamed(op, path, Arc::clone(&received));
    resume_at(clock, &received, STALL_AT).await;

    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0), "every byte once, in order");
}

/// Waits until the reader received the `bytes` before its body stalls.
pub async fn until_stalled(received: &AtomicU64, bytes: u64) {
    let stalled = || received.load(Relaxed) == bytes;
    until(stalled, "the bytes before the stall").await;
}

/// Asserts that a streamed read of a `size`-byte object rewritten once it stalled after
/// `stall_at` bytes ended in `ConditionNotMatch` with only the first version's bytes:
/// never two versions spliced.
pub fn assert_refused_the_rewrite(read: (Vec<u8>, Option<Error>), size: usize, stall_at: u64) {
    let (bytes, error) = read;
    let error = error.expect("the read ends with an error");
    assert_eq!(error.kind(), ErrorKind::ConditionNotMatch, "{error}");
    assert_eq!(
        bytes,
        object(size, 0)[..stall_at as usize],
        "the first version only"
    );
}

/// Version `version` of a `size`-byte object: byte i is `i % 251 + version`.
pub fn object(size: usize, version: u8) -> Vec<u8> {
    (0..size)
        .map(|i| ((i % 251) as u8).wrapping_add(version))
        .collect()
}
