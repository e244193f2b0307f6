//! The README's quick start, compiled by CI (it needs an S3 bucket and credentials to
//! run): `cargo build -p hedging-opendal --features tokio --example quick_start_opendal`.

use std::time::Duration;

use hedging_opendal::hedging::{timer::TokioTimer, Policy};
use hedging_opendal::HedgeLayer;
use opendal::{services::S3, Operator};

#[tokio::main]
async fn main() -> opendal::Result<()> {
    let policy = Policy::builder()
        .name("object-reads")
        .delay(Duration::from_millis(50)) // until each size has 100 latencies,
        .optimal_delay(0.99) // then the delay predicted to cut its p99 most:
        .adaptive_keys(64) // a delay per operation and size class
        .timer(TokioTimer::new())
        .build();
    // Any OpenDAL service: S3, GCS, Azure Blob, HTTP, ...; credentials from the environment.
    let s3 = S3::default().bucket("tables").region("us-east-1");
    let op = Operator::new(s3)?.layer(HedgeLayer::new(policy.clone()));

    op.write("orders/part-0.parquet", vec![7; 4096]).await?; // a write: never hedged
    let meta = op.stat("orders/part-0.parquet").await?; // hedged
    let footer = op
        .read_with("orders/part-0.parquet")
        .range(4088..4096)
        .await?; // hedged
    println!(
        "{} of {} bytes; {:?}",
        footer.len(),
        meta.content_length(),
        policy.stats()
    );
    Ok(())
}
