//! The README's quick start, compiled and run by CI: `cargo run -p hedging-object-store
//! --features tokio --example quick_start_object_store`.

use std::time::Duration;

use hedging_object_store::hedging::{timer::TokioTimer, Policy};
use hedging_object_store::HedgedStore;
use object_store::{memory::InMemory, path::Path, ObjectStoreExt};

#[tokio::main]
async fn main() -> object_store::Result<()> {
    // TokioTimer: the hedge delay on tokio's clock, which a test's paused clock drives
    // (the default FuturesTimer follows the real clock, paused or not).
    let policy = Policy::builder()
        .name("object-reads")
        .delay(Duration::from_millis(50)) // until each size has 100 latencies,
        .optimal_delay(0.99) // then the delay predicted to cut its p99 most:
        .adaptive_keys(64) // a delay per size class of read
        .timer(TokioTimer::new())
        .build();
    // Any ObjectStore: an AmazonS3, a GoogleCloudStorage, a MicrosoftAzure, an HttpStore.
    let store = HedgedStore::new(InMemory::new(), policy);

    let path = Path::from("tables/part-0.parquet");
    store.put(&path, vec![7; 4096].into()).await?; // a write: forwarded, never hedged
    let footer = store.get_range(&path, 4088..4096).await?; // hedged through its last byte
    println!("{} bytes; {:?}", footer.len(), store.policy().stats());
    Ok(())
}
