//! A million latencies read and a recommendation made: the whole of what the binary does
//! for one latency a line, and for a CSV with timestamps (with the replay). Run with
//! `cargo bench -p hedging-advisor --bench million`; figures in `docs/advisor.md`.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use hedging_advisor::advice::{advise, Settings};
use hedging_advisor::read::{read, ReadOptions};
use hedging_advisor::report;

const CALLS: usize = 1_000_000;

/// A latency in milliseconds: a log-normal body around 2 ms, 2% stalls of 10-100x.
fn latency(rng: &mut fastrand::Rng) -> f64 {
    if rng.f64() < 0.02 {
        2.0 * (10.0 + 90.0 * rng.f64())
    } else {
        let (u1, u2) = (1.0 - rng.f64(), rng.f64());
        2.0 * (0.3 * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()).exp()
    }
}

fn million(c: &mut Criterion) {
    let mut rng = fastrand::Rng::with_seed(1);
    let mut lines = String::new();
    let mut csv = String::from("timestamp,latency_ms\n");
    for call in 0..CALLS {
        let _ = writeln!(lines, "{:.3}", latency(&mut rng));
        let _ = writeln!(
            csv,
            "{:.6},{:.3}",
            1.7e9 + call as f64 / 1e4,
            latency(&mut rng)
        );
    }
    let mut group = c.benchmark_group("a million latencies to a recommendation");
    group.sample_size(10);
    for (name, input) in [("lines", &lines), ("csv with the replay", &csv)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let (latencies, _) = read(input.as_bytes(), &ReadOptions::default()).unwrap();
                let advice = advise(&latencies, &Settings::default()).unwrap();
                black_box(report::human(&advice))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, million);
criterion_main!(benches);
