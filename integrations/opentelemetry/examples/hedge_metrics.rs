//! Hedged calls to an in-process backend (about 1 ms, 1 call in 100 stalls 100 ms) on
//! tokio's real clock, with the policy's counters exported through OpenTelemetry. Prints
//! the latency table without and with hedging, then every data point the exporter
//! received.
//!
//! ```sh
//! cargo run --release -p hedging-opentelemetry --example hedge_metrics [-- CALLS DELAY_MS]
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::{Hedgeable, Policy};
use hedging_test_server::report::{args, extra, latencies, row, HEADER};
use hedging_test_server::Error;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

/// A backend that answers in about a millisecond, stalling one request in 100.
struct Backend {
    requests: AtomicU64,
}

impl Backend {
    async fn get(&self) -> Result<u64, Error> {
        let n = self.requests.fetch_add(1, Relaxed);
        let latency = if n % 100 == 99 {
            Duration::from_millis(100)
        } else {
            Duration::from_millis(1)
        };
        tokio::time::sleep(latency).await;
        Ok(n)
    }
}

/// Makes `calls` calls one after another, hedged by `policy` if given; their latencies.
async fn run(
    backend: &Backend,
    policy: Option<&Policy<TokioTimer>>,
    calls: usize,
) -> Result<Vec<Duration>, Error> {
    latencies(calls, || async {
        match policy {
            Some(policy) => (|| backend.get()).hedged(policy).await?,
            None => backend.get().await?,
        };
        Ok(())
    })
    .await
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let (calls, delay) = args(1000, 5)?;

    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let policy = Policy::builder()
        .name("backend-reads")
        .delay(delay)
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &provider.meter("example"));

    let backend = Backend {
        requests: AtomicU64::new(0),
    };
    println!("{calls} sequential calls per run; the backend answers in ~1 ms, stalling 1 in 100 for 100 ms\n");
    println!("{HEADER}");
    let plain = run(&backend, None, calls).await?;
    println!("{}", row("not hedged", &plain, None));
    let before = backend.requests.load(Relaxed);
    let hedged = run(&backend, Some(&policy), calls).await?;
    let extra = extra(backend.requests.load(Relaxed) - before, calls);
    let label = format!("hedged after {} ms", delay.as_millis());
    println!("{}", row(&label, &hedged, Some(extra)));

    provider.force_flush()?;
    println!("\nexported at the last collection:");
    for metric in exporter
        .get_finished_metrics()?
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
    {
        let points: Vec<(Vec<&KeyValue>, String)> = match metric.data() {
            AggregatedMetrics::U64(MetricData::Sum(sum)) => sum
                .data_points()
                .map(|point| (point.attributes().collect(), point.value().to_string()))
                .collect(),
            AggregatedMetrics::U64(MetricData::Gauge(gauge)) => gauge
                .data_points()
                .map(|point| (point.attributes().collect(), point.value().to_string()))
                .collect(),
            AggregatedMetrics::F64(MetricData::Gauge(gauge)) => gauge
                .data_points()
                .map(|point| (point.attributes().collect(), point.value().to_string()))
                .collect(),
            _ => Vec::new(),
        };
        for (attributes, value) in points {
            let mut attributes: Vec<String> = attributes
                .iter()
                .map(|kv| format!("{}={}", kv.key, kv.value))
                .collect();
            attributes.sort();
            println!(
                "  {} {{{}}} = {} {}",
                metric.name(),
                attributes.join(", "),
                value,
                metric.unit()
            );
        }
    }
    println!("policy.stats(): {:?}", policy.stats());
    provider.shutdown()?;
    Ok(())
}
