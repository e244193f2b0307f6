//! The examples' command line and latency table: each runs sequential calls without and
//! with hedging and prints one row per run.

use std::future::Future;
use std::time::{Duration, Instant};

use hedging::Policy;

use crate::log::Log;
use crate::Error;

/// `[CALLS] [DELAY_MS]` from the command line, with defaults.
pub fn args(default_calls: usize, default_delay_ms: u64) -> Result<(usize, Duration), Error> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map_or(Ok(default_calls), |a| a.parse())?;
    let delay_ms: u64 = args.next().map_or(Ok(default_delay_ms), |a| a.parse())?;
    if calls == 0 {
        return Err("CALLS must be at least 1".into());
    }
    Ok((calls, Duration::from_millis(delay_ms)))
}

/// Makes `calls` calls one after another and returns each one's latency, sorted.
pub async fn latencies<F, Fut, E>(calls: usize, mut call: F) -> Result<Vec<Duration>, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let mut latencies = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        call().await?;
        latencies.push(started.elapsed());
    }
    latencies.sort();
    Ok(latencies)
}

/// The nearest-rank quantile of sorted latencies.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The header of the latency table.
pub const HEADER: &str =
    "| | p50 | p99 | p99.9 | max | extra requests |\n|---|---|---|---|---|---|";

/// One row of the latency table: p50, p99, p99.9, max of sorted latencies, and the
/// requests sent beyond one per call, as a share of the calls (`—` for none counted).
pub fn row(label: &str, sorted: &[Duration], extra: Option<f64>) -> String {
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

/// The share of requests beyond one per call: `requests` sent for `calls` calls.
pub fn extra(requests: u64, calls: usize) -> f64 {
    requests as f64 / calls as f64 - 1.0
}

/// One run of sequential calls: its label, sorted latencies, and the share of extra
/// requests it sent (`None` when not counted).
#[derive(Clone, Debug)]
pub struct Run {
    pub label: String,
    pub latencies: Vec<Duration>,
    pub extra: Option<f64>,
}

impl Run {
    /// A run without hedging: no extra requests counted.
    pub fn unhedged(label: impl Into<String>, latencies: Vec<Duration>) -> Run {
        Run {
            label: label.into(),
            latencies,
            extra: None,
        }
    }

    /// A hedged run of as many calls as latencies that sent `requests` requests.
    pub fn hedged(label: impl Into<String>, latencies: Vec<Duration>, requests: u64) -> Run {
        let calls = latencies.len();
        Run {
            label: label.into(),
            latencies,
            extra: Some(extra(requests, calls)),
        }
    }
}

/// What every example does: 20 calls of each kind to warm up, then `calls` sequential
/// calls without hedging (`plain`) and as many hedged by `policy` (`hedged`), counted at
/// `servers`; then it prints `what` they were, the table, and what hedging did.
pub async fn compare<T, P, PF, H, HF>(
    what: &str,
    calls: usize,
    policy: &Policy<T>,
    servers: &[&Log],
    (plain_label, mut plain): (&str, P),
    (hedged_label, mut hedged): (&str, H),
) -> Result<(), Error>
where
    P: FnMut() -> PF,
    PF: Future<Output = Result<(), Error>>,
    H: FnMut() -> HF,
    HF: Future<Output = Result<(), Error>>,
{
    let requests = || servers.iter().map(|server| server.requests()).sum::<u64>();
    let connections = || {
        servers
            .iter()
            .map(|server| server.connections())
            .sum::<u64>()
    };
    latencies(20, &mut plain).await?;
    latencies(20, &mut hedged).await?;
    policy.reset_stats();
    let opened = connections();
    let unhedged = latencies(calls, &mut plain).await?;
    let (opened, unhedged_connections) = (connections(), connections() - opened);
    let before = requests();
    let latencies = latencies(calls, &mut hedged).await?;
    let hedged_connections = connections() - opened;
    let runs = [
        Run::unhedged(plain_label, unhedged),
        Run::hedged(hedged_label, latencies, requests() - before),
    ];
    let stats = policy.stats();
    let stalls = servers.iter().map(|server| server.held()).sum();
    print(what, &runs, stats.hedges, stats.hedge_wins, stalls);
    let per_1000 = |opened: u64| opened as f64 * 1000.0 / calls as f64;
    println!(
        "connections the server accepted per 1,000 calls (after warm-up): \
         {:.1} without hedging, {:.1} hedged",
        per_1000(unhedged_connections),
        per_1000(hedged_connections),
    );
    Ok(())
}

/// Prints `what` the runs were, their table, and what hedging did: `hedges` sent,
/// `hedge_wins` among them, and the stalls the server served in all.
pub fn print(what: &str, runs: &[Run], hedges: u64, hedge_wins: u64, stalls: u64) {
    println!("{what}\n");
    println!("{HEADER}");
    for run in runs {
        println!("{}", row(&run.label, &run.latencies, run.extra));
    }
    println!(
        "\nhedges sent: {hedges}, won by a hedge: {hedge_wins}, stalls served in all: {stalls} \
         (a hedge dropped before it reached the server is not an extra request)"
    );
}
