//! Large reads whose bodies stall midway, through `object_store::http::HttpStore` on
//! real loopback sockets: 8 MiB whole-object GETs streamed to their end, 1 body in 100
//! stalling for 2 s after a pseudo-random offset, read through a `HedgedStore` that
//! resumes stalled bodies and through one that does not (`.resume_stalls(false)`), with
//! the same policy otherwise. Prints the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-object-store --example resumed_large_reads [-- READS DELAY_MS]
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{store, versioned, Objects};
use hedging_test_server::report::{args, latencies, row, HEADER};
use hedging_test_server::{real_clock, Arrival, Error, Hold, Pace, Server};
use object_store::http::HttpStore;
use object_store::path::Path;
use object_store::ObjectStoreExt;

const OBJECT_SIZE: u64 = 8 << 20;
const STALL: Duration = Duration::from_secs(2);
const WARM_UP: usize = 20;

/// Every 100th first answer (a read's, not a resume's: it has no `If-Match`) stalls for
/// 2 s after a pseudo-random offset into its body.
fn one_body_in_100_stalls() -> impl Fn(&Arrival) -> Pace + Send + Sync + 'static {
    let first_answers = AtomicU64::new(0);
    move |arrival| {
        if arrival.header("if-match").is_some() {
            return Pace::Whole;
        }
        let n = first_answers.fetch_add(1, Relaxed);
        if n % 100 != 50 {
            return Pace::Whole;
        }
        let mixed = (n ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        Pace::StallAfter {
            bytes: (mixed >> 11) % OBJECT_SIZE,
            hold: Hold::For(STALL),
        }
    }
}

/// Reads the whole object as a stream, to its last byte.
async fn read(store: &HedgedStore<HttpStore, TokioTimer>, path: &Path) -> Result<(), Error> {
    let mut body = store.get(path).await?.into_stream();
    let mut read = 0;
    while let Some(chunk) = body.next().await {
        read += chunk?.len() as u64;
    }
    assert_eq!(read, OBJECT_SIZE);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (reads, delay) = args(300, 20)?;

    let objects = Objects::new();
    let object: Bytes = (0..OBJECT_SIZE).map(|i| (i % 251) as u8).collect();
    objects.put("data/fragment.lance", object);
    let behavior = versioned(objects, one_body_in_100_stalls());
    let server = Server::http(behavior, real_clock()).await?;
    let path = Path::from("data/fragment.lance");
    let policy = |name| {
        Policy::builder()
            .name(name)
            .delay(delay)
            .timer(TokioTimer::new())
            .build()
    };
    let plain = HedgedStore::new(store(&server.url("/"))?, policy("first-byte"));
    let plain = plain.resume_stalls(false);
    let resuming = HedgedStore::new(store(&server.url("/"))?, policy("resuming"));

    latencies(WARM_UP, || read(&plain, &path)).await?;
    latencies(WARM_UP, || read(&resuming, &path)).await?;
    println!(
        "{reads} sequential 8 MiB whole-object reads per run through HttpStore, streamed to \
         the end; 1 body in 100 stalls for 2 s after a pseudo-random offset; hedged after \
         {} ms\n",
        delay.as_millis()
    );
    println!("{HEADER}");
    for (label, store) in [
        ("`.resume_stalls(false)`", &plain),
        ("resuming (the default)", &resuming),
    ] {
        store.policy().reset_stats();
        let (requests, stalls) = (server.requests(), server.held());
        let sorted = latencies(reads, || read(store, &path)).await?;
        let extra = (server.requests() - requests) as f64 / reads as f64 - 1.0;
        println!("{}", row(label, &sorted, Some(extra)));
        let stats = store.policy().stats();
        eprintln!(
            "{label}: stalls served {}, hedges {}, won by a hedge {}, calls {}",
            server.held() - stalls,
            stats.hedges,
            stats.hedge_wins,
            stats.calls
        );
    }
    Ok(())
}
