//! Hedged range reads through `object_store::http::HttpStore` on real loopback sockets:
//! an object server that stalls 1 request in 100 for 200 ms (half of the stalls before
//! the answer, half in the middle of the body), read without and with `HedgedStore`.
//! Prints the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-object-store --example hedged_range_reads [-- READS DELAY_MS]
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{objects, store, StallWhen, StallWhere};
use hedging_test_server::report::{self, args};
use hedging_test_server::{real_clock, Error, Hold, Server};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

const OBJECT_SIZE: u64 = 1 << 20;
const RANGE_SIZE: u64 = 64 * 1024;

/// Reads the next 64 KiB range of `path`, walking the object with `reads`.
async fn read(store: &dyn ObjectStore, path: &Path, reads: &AtomicU64) -> Result<(), Error> {
    let start = (reads.fetch_add(1, Relaxed) * RANGE_SIZE) % (OBJECT_SIZE - RANGE_SIZE);
    let bytes = store.get_range(path, start..start + RANGE_SIZE).await?;
    assert_eq!(bytes.len() as u64, RANGE_SIZE);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (reads, delay) = args(2000, 5)?;

    let object: Bytes = (0..OBJECT_SIZE).map(|i| (i % 251) as u8).collect();
    let files = HashMap::from([("data/table.parquet".to_owned(), object)]);
    let stall = Hold::For(Duration::from_millis(200));
    let behavior = objects(files, StallWhen::OneIn(100), StallWhere::Alternate, stall);
    let server = Server::http(behavior, real_clock()).await?;
    let path = Path::from("data/table.parquet");
    let plain = store(&server.url("/"))?;
    let policy = Policy::builder()
        .name("range-reads")
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = HedgedStore::new(store(&server.url("/"))?, policy.clone());

    let what = format!(
        "{reads} sequential 64 KiB range reads per run through HttpStore; the server stalls \
         1 request in 100 for 200 ms (half before the answer, half mid-body)"
    );
    let label = format!("HedgedStore, hedged after {} ms", delay.as_millis());
    let (plain_reads, hedged_reads) = (AtomicU64::new(0), AtomicU64::new(0));
    let unhedged = ("HttpStore", || read(&plain, &path, &plain_reads));
    let hedged = (label.as_str(), || read(&hedged, &path, &hedged_reads));
    report::compare(&what, reads, &policy, &[&server], unhedged, hedged).await
}
