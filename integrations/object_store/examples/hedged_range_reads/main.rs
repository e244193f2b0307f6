//! Hedged range reads through `object_store::http::HttpStore` on real loopback sockets:
//! an object server that stalls 1 request in 100 for 200 ms (half of the stalls before
//! the answer, half in the middle of the body), read without and with `HedgedStore`.
//! Prints the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-object-store --example hedged_range_reads [-- READS DELAY_MS]
//! ```

mod loopback;

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use loopback::{header, row, Error, ObjectServer, StallWhen, StallWhere};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

const OBJECT_SIZE: u64 = 1 << 20;
const RANGE_SIZE: u64 = 64 * 1024;

/// Reads `reads` 64 KiB ranges one after another, walking the object, and returns each
/// read's latency, sorted.
async fn run(store: &dyn ObjectStore, path: &Path, reads: usize) -> Result<Vec<Duration>, Error> {
    let mut latencies = Vec::with_capacity(reads);
    for read in 0..reads as u64 {
        let start = (read * RANGE_SIZE) % (OBJECT_SIZE - RANGE_SIZE);
        let started = Instant::now();
        let bytes = store.get_range(path, start..start + RANGE_SIZE).await?;
        latencies.push(started.elapsed());
        assert_eq!(bytes.len() as u64, RANGE_SIZE);
    }
    latencies.sort();
    Ok(latencies)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let reads: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let delay_ms: u64 = args.next().map_or(Ok(5), |a| a.parse())?;
    if reads == 0 {
        return Err("READS must be at least 1".into());
    }

    let object: Bytes = (0..OBJECT_SIZE).map(|i| (i % 251) as u8).collect();
    let objects = HashMap::from([("data/table.parquet".to_owned(), object)]);
    let stall = Duration::from_millis(200);
    let server =
        ObjectServer::start(objects, StallWhen::OneIn(100), StallWhere::Alternate, stall).await?;
    let path = Path::from("data/table.parquet");
    let plain = server.store()?;
    let policy = Policy::builder()
        .name("range-reads")
        .max_copies(2)
        .delay(Duration::from_millis(delay_ms))
        .timer(TokioTimer::new())
        .build();
    let hedged = HedgedStore::new(server.store()?, policy.clone());

    // Warm up: open the pooled connections of both stores.
    run(&plain, &path, 20).await?;
    run(&hedged, &path, 20).await?;
    policy.reset_stats();

    println!(
        "{reads} sequential 64 KiB range reads per run through HttpStore; the server stalls \
         1 request in 100 for 200 ms (half before the answer, half mid-body)\n"
    );
    println!("{}", header());
    let plain_latencies = run(&plain, &path, reads).await?;
    println!("{}", row("HttpStore", &plain_latencies, None));
    let before = server.requests.load(Relaxed);
    let hedged_latencies = run(&hedged, &path, reads).await?;
    let extra = (server.requests.load(Relaxed) - before) as f64 / reads as f64 - 1.0;
    let label = format!("HedgedStore, hedged after {delay_ms} ms");
    println!("{}", row(&label, &hedged_latencies, Some(extra)));

    let stats = policy.stats();
    println!(
        "\nhedges sent: {}, won by a hedge: {}, stalls served in all: {}",
        stats.hedges,
        stats.hedge_wins,
        server.stalled.load(Relaxed),
    );
    Ok(())
}
