//! Hedged range reads through `object_store::http::HttpStore` on real loopback sockets:
//! an object server that stalls 1 request in 100 for 200 ms (half of the stalls before
//! the answer, half in the middle of the body), read without and with `HedgedStore`.
//! Prints the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-object-store --example hedged_range_reads [-- READS DELAY_MS]
//! ```

use std::sync::atomic::AtomicU64;

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{read_next_range, store, table_server, TABLE, TABLE_STALLS};
use hedging_test_server::report::{self, args};
use hedging_test_server::Error;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

/// Reads the next 64 KiB range of `path`, walking the object with `reads`.
async fn read(store: &dyn ObjectStore, path: &Path, reads: &AtomicU64) -> Result<(), Error> {
    let read = |range| async { Ok::<_, Error>(store.get_range(path, range).await?.len()) };
    read_next_range(reads, read).await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (reads, delay) = args(2000, 5)?;

    let server = table_server().await?;
    let path = Path::from(TABLE);
    let plain = store(&server.url("/"))?;
    let policy = Policy::builder()
        .name("range-reads")
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = HedgedStore::new(store(&server.url("/"))?, policy.clone());

    let what =
        format!("{reads} sequential 64 KiB range reads per run through HttpStore; {TABLE_STALLS}");
    let label = format!("HedgedStore, hedged after {} ms", delay.as_millis());
    let (plain_reads, hedged_reads) = (AtomicU64::new(0), AtomicU64::new(0));
    let unhedged = ("HttpStore", || read(&plain, &path, &plain_reads));
    let hedged = (label.as_str(), || read(&hedged, &path, &hedged_reads));
    report::compare(&what, reads, &policy, &[&server], unhedged, hedged).await
}
