//! Allocation counting for the overhead bench.

#[allow(unused_imports)]
use super::*;

/// The system allocator, counting every allocation made by any thread.
pub(crate) struct CountingAllocator;

pub(crate) static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so
// `System`'s guarantees are the caller's; the counter has no effect on memory.
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

#[global_allocator]
pub(crate) static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations (and reallocations) per call, averaged over enough calls to hide the
/// one-off ones (a thread's first stats shard, a timer thread's start).
pub(crate) fn allocations_per_call<R>(call: &mut impl FnMut() -> R) -> f64 {
    const WARM_UP: u64 = 100;
    const CALLS: u64 = 10_000;
    for _ in 0..WARM_UP {
        black_box(call());
    }
    let before = ALLOCATIONS.load(Relaxed);
    for _ in 0..CALLS {
        black_box(call());
    }
    (ALLOCATIONS.load(Relaxed) - before) as f64 / CALLS as f64
}
