//! Hedged range reads through OpenDAL's `http` service on real loopback sockets: an
//! object server that stalls 1 request in 100 for 200 ms (half of the stalls before the
//! answer, half in the middle of the body), read without and with `HedgeLayer`. Prints
//! the latency table of each run.
//!
//! ```sh
//! cargo run --release -p hedging-opendal --example hedged_opendal_reads [-- READS DELAY_MS]
//! ```

use std::sync::atomic::AtomicU64;

use hedging_opendal::hedging::{timer::TokioTimer, Policy};
use hedging_opendal::HedgeLayer;
use hedging_test_server::object::{read_next_range, table_server, TABLE, TABLE_STALLS};
use hedging_test_server::opendal::context;
use hedging_test_server::report::{self, args};
use hedging_test_server::Error;
use opendal::services::Http;
use opendal::Operator;

/// Reads the next 64 KiB range of the object, walking it with `reads`.
async fn read(op: &Operator, reads: &AtomicU64) -> Result<(), Error> {
    let read = |range| async { Ok::<_, Error>(op.read_with(TABLE).range(range).await?.len()) };
    read_next_range(reads, read).await
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (reads, delay) = args(2000, 5)?;

    let server = table_server().await?;
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
        "{reads} sequential 64 KiB range reads per run through OpenDAL's http service; \
         {TABLE_STALLS}"
    );
    let label = format!("HedgeLayer, hedged after {} ms", delay.as_millis());
    let (plain_reads, hedged_reads) = (AtomicU64::new(0), AtomicU64::new(0));
    let unhedged = ("Operator", || read(&plain, &plain_reads));
    let hedged = (label.as_str(), || read(&hedged, &hedged_reads));
    report::compare(&what, reads, &policy, &[&server], unhedged, hedged).await
}
