//! Writes the small example inputs under `examples/data/`, one per format, from one
//! seeded simulated service (`cargo run -p hedging-advisor --example make_samples`); the
//! test `tests/samples.rs` checks the shipped files are what this writes.
//!
//! The service: a log-normal body around 2 ms (σ = 0.3), 2% of calls stalled 10-100x on
//! their own (a GC pause, a lost packet), and, in the CSV and the HdrHistogram log, a
//! 200 ms brownout in which every call is 15-30x slower: slowness in a cluster, which the
//! replay shows and the independent model does not.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

/// Where the files go, from the package's directory.
pub const DIR: &str = "examples/data";

/// Each file's name and content.
pub fn samples() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("latencies.txt", lines().into_bytes()),
        ("calls.csv", csv().into_bytes()),
        ("service.hlog", hdr()),
        ("metrics.prom", prometheus().into_bytes()),
    ]
}

/// Calls per second of the simulated service.
const RATE: u64 = 1_000;
/// The brownout, from the start of the run.
const BROWNOUT: std::ops::Range<u64> = 2_400_000_000..2_600_000_000;

/// The latency of call `call` made `at` nanoseconds into the run, in microseconds.
fn latency_us(rng: &mut fastrand::Rng, at: u64) -> u64 {
    let median = 2_000.0;
    let body = if rng.f64() < 0.02 {
        median * (10.0 + 90.0 * rng.f64())
    } else {
        let (u1, u2) = (1.0 - rng.f64(), rng.f64());
        let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        median * (0.3 * normal).exp()
    };
    let slower = if BROWNOUT.contains(&at) {
        15.0 + 15.0 * rng.f64()
    } else {
        1.0
    };
    (body * slower).round() as u64
}

/// 5,000 latencies, one a line: most in bare milliseconds, some with a unit.
fn lines() -> String {
    let mut rng = fastrand::Rng::with_seed(1);
    let mut out = String::from("# latencies of one service, one a line; bare numbers are ms\n");
    for call in 0..5_000u64 {
        let us = latency_us(&mut rng, 0);
        let _ = match call % 10 {
            0 => writeln!(out, "{us}us"),
            _ => writeln!(out, "{}.{:03}", us / 1_000, us % 1_000),
        };
    }
    out
}

/// 5 seconds of calls with when each was made, its latency and its status.
fn csv() -> String {
    let mut rng = fastrand::Rng::with_seed(2);
    let mut out = String::from("timestamp,latency_ms,status\n");
    let start = 1_733_356_800_000_000_000u64;
    for call in 0..5 * RATE {
        let at = call * 1_000_000_000 / RATE;
        let us = latency_us(&mut rng, at);
        let now = start + at;
        let _ = writeln!(
            out,
            "{}.{:03},{}.{:03},200",
            now / 1_000_000_000,
            now % 1_000_000_000 / 1_000_000,
            us / 1_000,
            us % 1_000
        );
    }
    out
}

/// The same kind of run as an HdrHistogram interval log: 10 s in 100 ms intervals,
/// values in microseconds.
fn hdr() -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(3);
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .add_comment("latencies in microseconds, 100 ms intervals")
        .with_base_time(UNIX_EPOCH + Duration::from_secs(1_733_356_800))
        .begin_log_with(&mut out, &mut serializer)
        .expect("writing to memory");
    let interval = 100_000_000u64;
    for index in 0..50u64 {
        let mut histogram = Histogram::<u64>::new(3).expect("3 digits");
        let from = index * interval;
        for call in 0..RATE / 10 {
            let at = from + call * 1_000_000_000 / RATE;
            histogram
                .record(latency_us(&mut rng, at))
                .expect("in range");
        }
        writer
            .write_histogram(
                &histogram,
                Duration::from_nanos(from),
                Duration::from_nanos(interval),
                None,
            )
            .expect("writing to memory");
    }
    drop(writer);
    out
}

/// A scrape of two histograms, the request latency over two instances and a queue wait.
fn prometheus() -> String {
    let edges = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25];
    let mut out = String::new();
    let _ = writeln!(out, "# HELP http_request_duration_seconds Request latency.");
    let _ = writeln!(out, "# TYPE http_request_duration_seconds histogram");
    for (instance, seed) in [("a:9100", 4), ("b:9100", 5)] {
        let mut rng = fastrand::Rng::with_seed(seed);
        let latencies: Vec<f64> = (0..20_000)
            .map(|_| latency_us(&mut rng, 0) as f64 / 1e6)
            .collect();
        let mut sum = 0.0;
        for &latency in &latencies {
            sum += latency;
        }
        for le in edges {
            let below = latencies.iter().filter(|&&latency| latency <= le).count();
            let _ = writeln!(
                out,
                "http_request_duration_seconds_bucket{{instance=\"{instance}\",le=\"{le}\"}} {below}"
            );
        }
        let _ = writeln!(
            out,
            "http_request_duration_seconds_bucket{{instance=\"{instance}\",le=\"+Inf\"}} {}",
            latencies.len()
        );
        let _ = writeln!(
            out,
            "http_request_duration_seconds_sum{{instance=\"{instance}\"}} {sum:.3}"
        );
        let _ = writeln!(
            out,
            "http_request_duration_seconds_count{{instance=\"{instance}\"}} {}",
            latencies.len()
        );
    }
    let _ = writeln!(out, "# HELP queue_wait_seconds Time in the queue.");
    let _ = writeln!(out, "# TYPE queue_wait_seconds histogram");
    for (le, count) in [("0.001", 900), ("0.01", 990), ("+Inf", 1000)] {
        let _ = writeln!(out, "queue_wait_seconds_bucket{{le=\"{le}\"}} {count}");
    }
    let _ = writeln!(
        out,
        "queue_wait_seconds_sum 1.2\nqueue_wait_seconds_count 1000"
    );
    out
}

fn main() -> std::io::Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DIR);
    std::fs::create_dir_all(&dir)?;
    for (name, content) in samples() {
        std::fs::write(dir.join(name), content)?;
        println!("wrote {DIR}/{name}");
    }
    Ok(())
}
