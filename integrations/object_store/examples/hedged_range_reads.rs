//! Hedged range reads through `object_store::http::HttpStore` on real loopback sockets:
//! an object server that stalls 1 request in 100 for 200 ms (half of the stalls before
//! the answer, half in the middle of the body), read without and with `HedgedStore`.
//! Prints the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-object-store --example hedged_range_reads [-- READS DELAY_MS]
//! ```

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use hedging_test_server::http::Server;
use hedging_test_server::object::{objects, store, StallWhen, StallWhere};
use hedging_test_server::report::{self, args, extra, latencies, Run};
use hedging_test_server::{Error, Hold};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

const OBJECT_SIZE: u64 = 1 << 20;
const RANGE_SIZE: u64 = 64 * 1024;

/// Reads `reads` 64 KiB ranges one after another, walking the object; their latencies.
async fn run(store: &dyn ObjectStore, path: &Path, reads: usize) -> Result<Vec<Duration>, Error> {
    let mut read = 0;
    latencies(reads, || {
        let start = (read * RANGE_SIZE) % (OBJECT_SIZE - RANGE_SIZE);
        read += 1;
        async move {
            let bytes = store.get_range(path, start..start + RANGE_SIZE).await?;
            assert_eq!(bytes.len() as u64, RANGE_SIZE);
            Ok::<_, Error>(())
        }
    })
    .await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (reads, delay) = args(2000, 5)?;

    let object: Bytes = (0..OBJECT_SIZE).map(|i| (i % 251) as u8).collect();
    let files = HashMap::from([("data/table.parquet".to_owned(), object)]);
    let stall = Hold::For(Duration::from_millis(200));
    let behavior = objects(files, StallWhen::OneIn(100), StallWhere::Alternate, stall);
    let server = Server::start(behavior).await?;
    let path = Path::from("data/table.parquet");
    let plain = store(&server.url("/"))?;
    let policy = Policy::builder()
        .name("range-reads")
        .max_copies(2)
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let hedged = HedgedStore::new(store(&server.url("/"))?, policy.clone());

    // Warm up: open the pooled connections of both stores.
    run(&plain, &path, 20).await?;
    run(&hedged, &path, 20).await?;
    policy.reset_stats();

    let unhedged = run(&plain, &path, reads).await?;
    let before = server.requests();
    let latencies = run(&hedged, &path, reads).await?;
    let runs = [
        Run {
            label: "HttpStore".into(),
            latencies: unhedged,
            extra: None,
        },
        Run {
            label: format!("HedgedStore, hedged after {} ms", delay.as_millis()),
            latencies,
            extra: Some(extra(server.requests() - before, reads)),
        },
    ];
    let what = format!(
        "{reads} sequential 64 KiB range reads per run through HttpStore; the server stalls \
         1 request in 100 for 200 ms (half before the answer, half mid-body)"
    );
    let stats = policy.stats();
    report::print(&what, &runs, stats.hedges, stats.hedge_wins, server.held());
    Ok(())
}
