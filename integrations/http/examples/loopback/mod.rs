//! Loopback servers and the latency table shared by the examples (the tests include the
//! server modules alone, by path).

pub mod grpc;
pub mod hyper;

use std::time::Duration;

/// One run of sequential calls: each call's latency, sorted, and the requests the server
/// saw beyond one per call.
pub struct Run {
    pub name: String,
    pub latencies: Vec<Duration>,
    pub extra_requests: u64,
}

impl Run {
    pub fn new(name: impl Into<String>, mut latencies: Vec<Duration>, extra_requests: u64) -> Run {
        latencies.sort();
        Run {
            name: name.into(),
            latencies,
            extra_requests,
        }
    }
}

/// The nearest-rank quantile of sorted latencies.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Prints `p50 p99 p99.9 max` and the extra requests of each run, one row per run.
pub fn print_table(runs: &[Run]) {
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    println!(
        "{:<20} {:>11} {:>11} {:>11} {:>11}   extra requests",
        "", "p50", "p99", "p99.9", "max"
    );
    for run in runs {
        let calls = run.latencies.len();
        println!(
            "{:<20} {:>11} {:>11} {:>11} {:>11}   {} ({:.1}%)",
            run.name,
            ms(quantile(&run.latencies, 0.50)),
            ms(quantile(&run.latencies, 0.99)),
            ms(quantile(&run.latencies, 0.999)),
            ms(*run.latencies.last().expect("at least one call")),
            run.extra_requests,
            100.0 * run.extra_requests as f64 / calls as f64,
        );
    }
}

/// `[CALLS] [DELAY_MS]` from the command line, with defaults.
pub fn args(default_calls: usize, default_delay_ms: u64) -> Result<(usize, Duration), grpc::Error> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map_or(Ok(default_calls), |a| a.parse())?;
    let delay_ms: u64 = args.next().map_or(Ok(default_delay_ms), |a| a.parse())?;
    if calls == 0 {
        return Err("CALLS must be at least 1".into());
    }
    Ok((calls, Duration::from_millis(delay_ms)))
}
