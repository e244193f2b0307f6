//! Hedged calls to an in-process backend (about 1 ms, 1 call in 100 stalls 100 ms) on
//! tokio's real clock, with the policy's counters exported through OpenTelemetry. Prints
//! the latency table without and with hedging, then every data point the exporter
//! received.
//!
//! ```sh
//! cargo run --release -p hedging-opentelemetry --example hedge_metrics [-- CALLS DELAY_MS]
//! ```

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use hedging::timer::TokioTimer;
use hedging::{Hedgeable, Policy};
use opentelemetry::metrics::MeterProvider;
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

type Error = Box<dyn std::error::Error + Send + Sync>;

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

/// Makes `calls` calls one after another, hedged by `policy` if given, and returns each
/// call's latency, sorted.
async fn run(
    backend: &Backend,
    policy: Option<&Policy<TokioTimer>>,
    calls: usize,
) -> Result<Vec<Duration>, Error> {
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        match policy {
            Some(policy) => (|| backend.get()).hedged(policy).await?,
            None => backend.get().await?,
        };
        latencies.push(started.elapsed());
    }
    latencies.sort();
    Ok(latencies)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn row(label: &str, sorted: &[Duration], extra: Option<f64>) -> String {
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    let extra = extra.map_or("—".to_owned(), |extra| format!("{:.1}%", extra * 100.0));
    format!(
        "| {label} | {} | {} | {} | {} | {extra} |",
        ms(quantile(sorted, 0.50)),
        ms(quantile(sorted, 0.99)),
        ms(quantile(sorted, 0.999)),
        ms(*sorted.last().expect("at least one call")),
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let delay_ms: u64 = args.next().map_or(Ok(5), |a| a.parse())?;
    if calls == 0 {
        return Err("CALLS must be at least 1".into());
    }

    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    let policy = Policy::builder()
        .name("backend-reads")
        .max_copies(2)
        .delay(Duration::from_millis(delay_ms))
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &provider.meter("example"));

    let backend = Backend {
        requests: AtomicU64::new(0),
    };
    println!("{calls} sequential calls per run; the backend answers in ~1 ms, stalling 1 in 100 for 100 ms\n");
    println!("| | p50 | p99 | p99.9 | max | extra requests |\n|---|---|---|---|---|---|");
    let plain = run(&backend, None, calls).await?;
    println!("{}", row("not hedged", &plain, None));
    let before = backend.requests.load(Relaxed);
    let hedged = run(&backend, Some(&policy), calls).await?;
    let extra = (backend.requests.load(Relaxed) - before) as f64 / calls as f64 - 1.0;
    println!(
        "{}",
        row(&format!("hedged after {delay_ms} ms"), &hedged, Some(extra))
    );

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
