//! Hedged range reads through OpenDAL's `http` service on real loopback sockets: an
//! object server that stalls 1 request in 100 for 200 ms (half of the stalls before the
//! answer, half in the middle of the body), read without and with `HedgeLayer`. Prints
//! the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-opendal --example hedged_opendal_reads [-- READS DELAY_MS]
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use hedging_opendal::hedging::{timer::TokioTimer, Policy};
use hedging_opendal::HedgeLayer;
use hedging_test_server::object::{objects, StallWhen, StallWhere};
use hedging_test_server::opendal::context;
use hedging_test_server::report::{self, args};
use hedging_test_server::{real_clock, Error, Hold, Server};
use opendal::services::Http;
use opendal::Operator;

const OBJECT_SIZE: u64 = 1 << 20;
const RANGE_SIZE: u64 = 64 * 1024;
const PATH: &str = "data/table.parquet";

/// Reads the next 64 KiB range of the object, walking it with `reads`.
async fn read(op: &Operator, reads: &AtomicU64) -> Result<(), Error> {
    let start = (reads.fetch_add(1, Relaxed) * RANGE_SIZE) % (OBJECT_SIZE - RANGE_SIZE);
    let bytes = op.read_with(PATH).range(start..start + RANGE_SIZE).await?;
    assert_eq!(bytes.len() as u64, RANGE_SIZE);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (reads, delay) = args(2000, 5)?;

    let object: Bytes = (0..OBJECT_SIZE).map(|i| (i % 251) as u8).collect();
    let files = HashMap::from([(PATH.to_owned(), object)]);
    let stall = Hold::For(Duration::from_millis(200));
    let behavior = objects(files, StallWhen::OneIn(100), StallWhere::Alternate, stall);
    let server = Server::http(behavior, real_clock()).await?;
    let operator = || -> opendal::Result<Operator> {
        let http = Http::default().endpoint(&server.origin());
        Ok(Operator::new(http)?.with_context(context()))
    };
    let policy = Policy::builder()
        .name("opendal-reads")
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    let plain = operator()?;
    let hedged = operator()?.layer(HedgeLayer::new(policy.clone()));

    let what = format!(
        "{reads} sequential 64 KiB range reads per run through OpenDAL's http service; the \
         server stalls 1 request in 100 for 200 ms (half before the answer, half mid-body)"
    );
    let label = format!("HedgeLayer, hedged after {} ms", delay.as_millis());
    let (plain_reads, hedged_reads) = (AtomicU64::new(0), AtomicU64::new(0));
    let unhedged = ("Operator", || read(&plain, &plain_reads));
    let hedged = (label.as_str(), || read(&hedged, &hedged_reads));
    report::compare(&what, reads, &policy, &[&server], unhedged, hedged).await
}
