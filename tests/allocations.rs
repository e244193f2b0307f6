//! Allocations per call, counted by a global allocator: none on the fast path, none of
//! the crate's own while only the original runs, one vector and one box per hedge after.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hedging::timer::Timer;
use hedging::{Hedgeable, Policy};

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Counts the allocations of the current thread, so parallel tests do not interfere.
struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a
// thread-local `Cell` with a const initializer, which never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during<R>(run: impl FnOnce() -> R) -> (R, usize) {
    let before = ALLOCATIONS.with(Cell::get);
    let result = run();
    (result, ALLOCATIONS.with(Cell::get) - before)
}

/// A timer that allocates nothing: its clock stands still and its sleeps never fire.
#[derive(Clone, Copy, Debug, Default)]
struct StillTimer;

impl Timer for StillTimer {
    type Sleep = std::future::Pending<()>;
    fn now(&self) -> Duration {
        Duration::ZERO
    }
    fn sleep(&self, _after: Duration) -> Self::Sleep {
        std::future::pending()
    }
}

/// Pending on its first poll (waking itself), ready with `value` on the next.
struct PendingOnce {
    value: u32,
    polled: bool,
}

impl Future for PendingOnce {
    type Output = Result<u32, ()>;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if std::mem::replace(&mut self.polled, true) {
            Poll::Ready(Ok(self.value))
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

fn policy(max_copies: usize, delay: Duration) -> Policy<StillTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(delay)
        .timer(StillTimer)
        .build()
}

/// The first call on a thread registers its thread-locals, which may allocate once.
fn warm_up(policy: &Policy<StillTimer>) {
    block_on((|| async { Ok::<_, ()>(0) }).hedged(policy)).unwrap();
}

#[test]
fn hedging_off_allocates_nothing() {
    let policy = policy(1, Duration::from_millis(10));
    warm_up(&policy);
    let (answer, allocations) = allocations_during(|| {
        block_on(
            (|| PendingOnce {
                value: 1,
                polled: false,
            })
            .hedged(&policy),
        )
    });
    assert_eq!(answer, Ok(1));
    assert_eq!(allocations, 0);
}

#[test]
fn an_original_ready_at_once_allocates_nothing() {
    let policy = policy(3, Duration::from_millis(10));
    warm_up(&policy);
    let (answer, allocations) =
        allocations_during(|| block_on((|| async { Ok::<u32, ()>(7) }).hedged(&policy)));
    assert_eq!(answer, Ok(7));
    assert_eq!(allocations, 0);
}

#[test]
fn the_armed_path_allocates_nothing_of_its_own() {
    let policy = policy(3, Duration::from_millis(10));
    warm_up(&policy);
    let (answer, allocations) = allocations_during(|| {
        block_on(
            (|| PendingOnce {
                value: 2,
                polled: false,
            })
            .hedged(&policy),
        )
    });
    assert_eq!(answer, Ok(2));
    assert_eq!(
        allocations, 0,
        "the timer was armed, but only the original ran"
    );
}

#[test]
fn hedges_allocate_one_vector_and_one_box_each() {
    // A zero delay starts every copy at once, with no timer.
    let policy = policy(3, Duration::ZERO);
    warm_up(&policy);
    let (answer, allocations) = allocations_during(|| {
        block_on(
            (|a: hedging::Attempt| PendingOnce {
                value: a.index() as u32,
                polled: false,
            })
            .hedged(&policy),
        )
    });
    assert_eq!(answer, Ok(0));
    assert_eq!(
        allocations,
        1 + 2,
        "the hedge vector, then one box per hedge"
    );
}
