//! Hedged GETs against three real Redis replicas on loopback, one of them paused at
//! random by `DEBUG SLEEP 0.1` about every 300 ms, as a GC pause or a snapshot's fork
//! would: no hedging, the README's production policy (`optimal_delay(0.99)`), the adaptive
//! p95 it recommended before, and fixed delays with the same budget, open loop, each run
//! twice. `benches/redis.sh` starts the
//! servers (installing Redis when missing), runs this, and stops them.
//!
//! ```sh
//! benches/redis.sh                                  # the table in docs/performance.md
//! cargo run --release --example redis_replicas --features tokio -- PORT PORT PORT \
//!     [--seconds 10] [--record unhedged.txt]
//! ```
//!
//! Copy k of a call goes to replica `(first + k) % 3`, `first` chosen at random per call;
//! a GET starts every 2 ms whatever the answers do (open loop). `--record FILE` writes
//! the unhedged runs' latencies, one in milliseconds a line, for `hedging-advisor`.

use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hedging::timer::TokioTimer;
use hedging::{Attempt, Budget, Hedgeable, Policy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A GET starts this often.
const EVERY: Duration = Duration::from_millis(2);
/// A replica pauses this long...
const PAUSE: &str = "0.1";
/// ...about this often, one replica at a time, chosen at random.
const PAUSE_EVERY: Duration = Duration::from_millis(300);

/// The idle connections to one replica.
#[derive(Clone)]
struct Replica {
    port: u16,
    idle: Arc<Mutex<Vec<TcpStream>>>,
}

impl Replica {
    /// `GET key`: a connection from the pool (or a new one), given back once it answered.
    /// A copy dropped mid-request drops its connection with it.
    async fn get(&self) -> std::io::Result<()> {
        let idle = self.idle.lock().expect("no panic holds the pool").pop();
        let mut stream = match idle {
            Some(stream) => stream,
            None => {
                let stream = TcpStream::connect(("127.0.0.1", self.port)).await?;
                stream.set_nodelay(true)?;
                stream
            }
        };
        stream
            .write_all(b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n")
            .await?;
        read_reply(&mut stream).await?;
        self.idle
            .lock()
            .expect("no panic holds the pool")
            .push(stream);
        Ok(())
    }
}

/// Reads one reply: a bulk string (`$3\r\nabc\r\n`), a nil (`$-1\r\n`) or a status line.
async fn read_reply(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut reply = Vec::with_capacity(32);
    let mut byte = [0u8; 1];
    loop {
        stream.read_exact(&mut byte).await?;
        reply.push(byte[0]);
        if reply.ends_with(b"\r\n") {
            break;
        }
    }
    if reply[0] == b'$' && reply != b"$-1\r\n" {
        let length: usize = std::str::from_utf8(&reply[1..reply.len() - 2])
            .ok()
            .and_then(|length| length.parse().ok())
            .ok_or_else(|| std::io::Error::other("a bulk reply without a length"))?;
        let mut body = vec![0u8; length + 2];
        stream.read_exact(&mut body).await?;
    }
    Ok(())
}

/// One configuration of the table.
#[derive(Clone, Copy)]
enum Row {
    Off,
    Production,
    AdaptiveP95,
    Fixed(Duration),
}

impl Row {
    fn label(self) -> String {
        match self {
            Row::Off => "no hedging".to_string(),
            Row::Production => "README production (optimal p99, 0.1-200 ms)".to_string(),
            Row::AdaptiveP95 => "adaptive p95, 2-200 ms".to_string(),
            Row::Fixed(delay) => format!("fixed {} ms", delay.as_millis()),
        }
    }

    /// The policy of the row; every hedging row has the same budget.
    fn policy(self) -> Policy<TokioTimer> {
        let builder = Policy::builder().max_copies(2).timer(TokioTimer::new());
        let budget = Budget::new(0.10).max_outstanding(50);
        match self {
            Row::Off => builder.max_copies(1).build(),
            // The README's block, less its name (these calls carry no key).
            Row::Production => builder
                .optimal_delay(0.99)
                .min_delay(Duration::from_micros(100))
                .max_delay(Duration::from_millis(200))
                .delay(Duration::from_millis(20))
                .adaptive_keys(64)
                .min_win_rate(0.05)
                .budget(&budget)
                .build(),
            Row::AdaptiveP95 => builder
                .adaptive_delay(0.95)
                .min_delay(Duration::from_millis(2))
                .max_delay(Duration::from_millis(200))
                .delay(Duration::from_millis(20))
                .budget(&budget)
                .build(),
            Row::Fixed(delay) => builder.delay(delay).budget(&budget).build(),
        }
    }
}

struct Measured {
    latencies: Vec<Duration>,
    extra: f64,
    delay_at_end: Option<Duration>,
}

/// Runs `row` for `seconds` against `replicas`, with one of them paused now and then.
async fn run(row: Row, replicas: &[Replica], seconds: u64) -> Measured {
    let policy = row.policy();
    let running = Duration::from_secs(seconds);
    let pauser = tokio::spawn(pause_now_and_then(
        replicas.iter().map(|replica| replica.port).collect(),
        running,
    ));
    let started = Instant::now();
    let mut calls = Vec::new();
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    while started.elapsed() < running {
        tick.tick().await;
        let (policy, replicas) = (policy.clone(), replicas.to_vec());
        let first = fastrand::usize(..replicas.len());
        calls.push(tokio::spawn(async move {
            let begun = Instant::now();
            let copy = |attempt: Attempt| {
                let replica = replicas[(first + attempt.index()) % replicas.len()].clone();
                async move { replica.get().await }
            };
            copy.hedged(&policy).await.expect("a replica answers");
            begun.elapsed()
        }));
    }
    let mut latencies = Vec::with_capacity(calls.len());
    for call in calls {
        latencies.push(call.await.expect("a call does not panic"));
    }
    pauser.await.expect("the pauser does not panic");
    let stats = policy.stats();
    Measured {
        latencies,
        extra: stats.hedges as f64 / stats.calls.max(1) as f64,
        delay_at_end: policy.delay(),
    }
}

/// Pauses one replica at random with `DEBUG SLEEP` about every [`PAUSE_EVERY`], until
/// `running` has passed.
async fn pause_now_and_then(ports: Vec<u16>, running: Duration) {
    let started = Instant::now();
    let mut admins = Vec::new();
    for &port in &ports {
        admins.push(
            TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("a replica to pause"),
        );
    }
    let command = format!(
        "*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n${}\r\n{PAUSE}\r\n",
        PAUSE.len()
    );
    while started.elapsed() < running {
        let gap = PAUSE_EVERY.mul_f64(0.5 + fastrand::f64());
        tokio::time::sleep(gap).await;
        let admin = &mut admins[fastrand::usize(..ports.len())];
        admin
            .write_all(command.as_bytes())
            .await
            .expect("DEBUG SLEEP sent");
        read_reply(admin).await.expect("DEBUG SLEEP answered");
    }
}

fn percentile(sorted: &[Duration], quantile: f64) -> Duration {
    let rank = ((quantile * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1e3)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ports: Vec<u16> = args
        .iter()
        .take_while(|arg| !arg.starts_with("--"))
        .filter_map(|port| port.parse().ok())
        .collect();
    let option = |name: &str| {
        args.iter()
            .position(|arg| arg == name)
            .and_then(|at| args.get(at + 1))
    };
    let seconds: u64 = option("--seconds")
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    if ports.len() != 3 {
        eprintln!("usage: redis_replicas PORT PORT PORT [--seconds 10] [--record FILE]");
        std::process::exit(2);
    }
    let replicas: Vec<Replica> = ports
        .iter()
        .map(|&port| Replica {
            port,
            idle: Arc::default(),
        })
        .collect();
    let rows = [
        Row::Off,
        Row::Production,
        Row::AdaptiveP95,
        Row::Fixed(Duration::from_millis(1)),
        Row::Fixed(Duration::from_millis(2)),
        Row::Fixed(Duration::from_millis(5)),
        Row::Fixed(Duration::from_millis(10)),
    ];
    println!(
        "3 Redis replicas on loopback, one paused {PAUSE} s about every {} ms; a GET every {} ms, open loop, {seconds} s per run; budget 10%, 50 in flight",
        PAUSE_EVERY.as_millis(),
        EVERY.as_millis()
    );
    println!("| configuration | run | p50 | p99 | p99.9 | extra copies | delay at the end |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut unhedged = Vec::new();
    for row in rows {
        for run_index in 1..=2 {
            let mut measured = run(row, &replicas, seconds).await;
            measured.latencies.sort_unstable();
            let sorted = &measured.latencies;
            println!(
                "| {} | {run_index} | {} | {} | {} | {:.1}% | {} |",
                row.label(),
                ms(percentile(sorted, 0.5)),
                ms(percentile(sorted, 0.99)),
                ms(percentile(sorted, 0.999)),
                measured.extra * 100.0,
                measured.delay_at_end.map_or("-".to_string(), ms)
            );
            if matches!(row, Row::Off) {
                unhedged.extend_from_slice(sorted);
            }
        }
    }
    if let Some(path) = option("--record") {
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("--record FILE"));
        for latency in &unhedged {
            writeln!(file, "{:.4}", latency.as_secs_f64() * 1e3).expect("a latency written");
        }
    }
}
