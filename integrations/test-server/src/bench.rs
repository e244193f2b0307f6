//! What the integration benches share: a counting global allocator, and the comparison
//! of one loopback request with and without a layer, timed in turn in the same run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

/// The system allocator, counting every allocation and reallocation of any thread. A
/// bench installs it with `#[global_allocator]`.
#[derive(Debug)]
pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees are the caller's; the counter has no effect on memory.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is; the caller upholds `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations counted so far (all zero unless [`CountingAllocator`] is installed).
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Relaxed)
}

/// The table's header.
pub const HEADER: &str = "| request | without the layer (median) | with it (median) | overhead | \
     allocations without | allocations with |\n|---|---|---|---|---|---|";

/// How many times each request is timed, in turn with the other.
pub const ROUNDS: usize = 5_000;

/// Times `plain` and `layered` in turn [`ROUNDS`] times each on `rt` (which goes first
/// alternating), then counts the
/// allocations of 1,000 more of each: one row of [`HEADER`]'s table.
pub fn compare<P, PF, L, LF>(rt: &Runtime, name: &str, mut plain: P, mut layered: L) -> String
where
    P: FnMut() -> PF,
    PF: Future<Output = ()>,
    L: FnMut() -> LF,
    LF: Future<Output = ()>,
{
    let (mut plain_times, mut layered_times) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // Each goes first in every other round, so neither gains from going second.
        let mut time = |layered_turn: bool| {
            let started = Instant::now();
            match layered_turn {
                true => rt.block_on(layered()),
                false => rt.block_on(plain()),
            }
            let times = match layered_turn {
                true => &mut layered_times,
                false => &mut plain_times,
            };
            times.push(started.elapsed());
        };
        time(round % 2 == 1);
        time(round % 2 == 0);
    }
    let (plain_median, layered_median) = (median(&mut plain_times), median(&mut layered_times));
    let per_call = |call: &mut dyn FnMut()| {
        let before = allocations();
        for _ in 0..1_000 {
            call();
        }
        (allocations() - before) as f64 / 1_000.0
    };
    let plain_allocations = per_call(&mut || rt.block_on(plain()));
    let layered_allocations = per_call(&mut || rt.block_on(layered()));
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    format!(
        "| {name} | {:.2} µs | {:.2} µs | {:+.1}% | {plain_allocations:.1} | {layered_allocations:.1} |",
        us(plain_median),
        us(layered_median),
        (us(layered_median) / us(plain_median) - 1.0) * 100.0,
    )
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}
