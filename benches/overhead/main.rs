//! What hedging costs: `Hedge` against a bare `.await` and against peer crates, on the
//! same workloads, in one run.
//!
//! ```sh
//! nice -n 10 cargo bench --all-features --bench overhead
//! ```
//!
//! runs every case under criterion, then measures allocations per call (a counting
//! global allocator), the hedge's launch lateness under a real clock, and future sizes,
//! and prints one markdown table of medians and ratios (docs/performance.md, "Time").
//!
//! `HEDGING_BENCH_PROFILE=<case> HEDGING_BENCH_ITERS=<n>` runs one case `n` times and
//! nothing else, for `valgrind --tool=callgrind` (see `benches/instructions.sh`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::{ready, Future};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Barrier;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use criterion::Criterion;
use futures::future::Either;
use hedging::timer::{AsyncIoTimer, FuturesTimer, Timer, TokioTimer};
use hedging::{Attempt, Budget, Hedgeable, Policy};
use tower::{Layer, Service};

mod alloc_count;
mod lateness;
mod sizes;
mod suite;
mod table;
mod workloads;

use alloc_count::*;
use lateness::*;
use sizes::*;
use suite::*;
use table::*;
use workloads::*;

/// Where criterion keeps its results: `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else `target/criterion` (cargo runs benches from the package root).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    target.join("criterion")
}

fn main() {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    // tokio's sleeps, tower's hedge and the `hedged` crate need a runtime in context;
    // nothing drives it here, and no sleep on these paths is ever due.
    let _tokio_context = tokio.enter();

    let mode = match std::env::var("HEDGING_BENCH_PROFILE") {
        Ok(case) => {
            let iters = std::env::var("HEDGING_BENCH_ITERS")
                .ok()
                .and_then(|iters| iters.parse().ok())
                .unwrap_or(100_000);
            Mode::Profile { case, iters }
        }
        Err(_) => Mode::Bench(Box::new(
            Criterion::default()
                .output_directory(&criterion_dir())
                .warm_up_time(Duration::from_secs(1))
                .measurement_time(Duration::from_secs(3))
                .configure_from_args(),
        )),
    };
    let started = SystemTime::now();
    let mut suite = Suite {
        mode,
        rows: Vec::new(),
    };
    ready_cases(&mut suite);
    pending_once_cases(&mut suite);
    shared_policy_cases(&mut suite);
    budget_cases(&mut suite);
    let Mode::Bench(criterion) = suite.mode else {
        let early = EARLY_FIRES.load(Relaxed);
        if early > 0 {
            eprintln!("{early} sleeps were ready on their first poll");
        }
        return;
    };
    criterion.final_summary();
    drop(_tokio_context);

    // `cargo bench -- --test` (a smoke run) measures nothing: keep the rest short too.
    let smoke = std::env::args().any(|arg| arg == "--test" || arg == "--list");
    let lateness = lateness(if smoke { 10 } else { 1_000 });
    let medians = medians(&criterion_dir(), started);
    println!("\n## hedging overhead (medians of this run)\n");
    println!(
        "{}",
        table(&suite.rows, &medians, &lateness, &sizes_in_context(&tokio))
    );
}

fn sizes_in_context(tokio: &tokio::runtime::Runtime) -> Vec<(&'static str, usize)> {
    let _context = tokio.enter();
    sizes()
}
