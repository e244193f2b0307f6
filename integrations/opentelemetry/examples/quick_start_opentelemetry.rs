//! The README's quick start, compiled and run by CI: `cargo run -p hedging-opentelemetry
//! --features tokio --example quick_start_opentelemetry`.

use std::time::Duration;

use hedging_opentelemetry::hedging::{timer::TokioTimer, Hedgeable, Policy};
use opentelemetry::global;

#[tokio::main]
async fn main() -> Result<(), std::io::Error> {
    // TokioTimer: the hedge delay on tokio's clock, which a test's paused clock drives
    // (the default FuturesTimer follows the real clock, paused or not).
    let reads = Policy::builder()
        .name("user-reads") // the `hedging.policy.name` attribute
        .delay(Duration::from_millis(20))
        .timer(TokioTimer::new())
        .build();
    // Read at collection time by the global meter provider: install one (opentelemetry_sdk
    // and an exporter) to export them.
    hedging_opentelemetry::register(&reads, &global::meter("my-service"));

    let row = (|| async { Ok::<_, std::io::Error>("row 7") })
        .hedged(&reads)
        .await?;
    println!("{row}; {:?}", reads.stats());
    Ok(())
}
