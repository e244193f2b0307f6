//! What an embedded user writes: a one-task executor with no spawning and no runtime,
//! and a hand-written timer on a tick counter (a SysTick interrupt, say). `Hedge` needs
//! nothing more: it polls its copies and the timer inside its own `poll`.
//!
//! Here the "interrupt" is simulated: when the task is idle, the executor jumps the tick
//! counter to the next deadline, as a chip would wake from `wfi` at its timer interrupt.
//! With `default-features = false` the same code builds for `no_std` + `alloc` targets.
//!
//! ```sh
//! cargo run --example no_spawn
//! ```

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use hedging::timer::Timer;
use hedging::{Attempt, Hedgeable, Policy};

/// Microseconds since boot, advanced by the timer interrupt.
static TICKS_US: AtomicU64 = AtomicU64::new(0);
/// The earliest deadline any sleep waits for; the interrupt is programmed for it.
static NEXT_DEADLINE_US: AtomicU64 = AtomicU64::new(u64::MAX);

fn now_us() -> u64 {
    TICKS_US.load(SeqCst)
}

/// The timer: a clock read from the tick counter, and sleeps that compare against it.
#[derive(Clone, Copy, Debug)]
struct TickTimer;

struct TickSleep {
    deadline_us: u64,
}

impl Future for TickSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if now_us() >= self.deadline_us {
            return Poll::Ready(());
        }
        // One task only: the interrupt wakes the executor, which polls that task.
        NEXT_DEADLINE_US.fetch_min(self.deadline_us, SeqCst);
        Poll::Pending
    }
}

impl Timer for TickTimer {
    type Sleep = TickSleep;

    fn now(&self) -> Duration {
        Duration::from_micros(now_us())
    }

    fn sleep(&self, after: Duration) -> TickSleep {
        let after_us = u64::try_from(after.as_micros()).unwrap_or(u64::MAX);
        TickSleep {
            deadline_us: now_us().saturating_add(after_us),
        }
    }

    // Moving a deadline is a field write: no new sleep.
    fn reset(&self, sleep: Pin<&mut TickSleep>, after: Duration) {
        sleep.get_mut().deadline_us = self.sleep(after).deadline_us;
    }
}

/// The executor: poll the one task; when it is idle, "wait for the interrupt".
fn block_on<F: Future>(task: F) -> F::Output {
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, SeqCst);
        }
    }
    let woken = Arc::new(Flag(AtomicBool::new(true)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);
    let mut task = pin!(task);
    loop {
        if woken.0.swap(false, SeqCst) {
            if let Poll::Ready(output) = task.as_mut().poll(&mut cx) {
                return output;
            }
            continue;
        }
        // Idle: the timer interrupt fires at the next deadline and wakes the task.
        let deadline = NEXT_DEADLINE_US.swap(u64::MAX, SeqCst);
        assert_ne!(
            deadline,
            u64::MAX,
            "idle with no deadline: the task would sleep forever"
        );
        TICKS_US.fetch_max(deadline, SeqCst);
        woken.0.store(true, SeqCst);
    }
}

/// Reads a sensor over one of two buses; bus 0 hangs on this read (a stuck device).
async fn read_sensor(bus: usize) -> Result<u16, &'static str> {
    println!("  t = {:>5} us: read on bus {bus} starts", now_us());
    let latency = if bus == 0 { 50_000 } else { 1_500 };
    TickTimer.sleep(Duration::from_micros(latency)).await;
    Ok(if bus == 0 { 0x1111 } else { 0x2222 })
}

fn main() {
    let policy = Policy::builder()
        .max_copies(2)
        .delay(Duration::from_millis(5))
        .timer(TickTimer)
        .build();

    let reading = block_on((|a: Attempt| read_sensor(a.index())).hedged(&policy));
    println!("  t = {:>5} us: reading {reading:x?}", now_us());
    assert_eq!(reading, Ok(0x2222), "the hedge on bus 1 answered first");
    assert_eq!(now_us(), 6_500, "hedge at 5 ms, answering 1.5 ms later");
    println!("{:?}", policy.stats());
}
