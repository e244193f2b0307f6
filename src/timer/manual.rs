//! [`ManualTimer`]: virtual time for deterministic tests.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use core::time::Duration;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::vec::Vec;

use super::Timer;

/// Virtual time that moves only when [`advance`](ManualTimer::advance) is called.
///
/// Clones share one clock. `advance` moves it forward and wakes every sleep that is due,
/// so a test can say exactly when a hedge goes out without sleeping on the real clock.
/// It also counts the sleeps it made, which lets a test check that a call armed no timer.
///
/// ```
/// use std::time::Duration;
/// use hedging::{Hedgeable, Policy, timer::ManualTimer};
/// # futures::executor::block_on(async {
/// let clock = ManualTimer::new();
/// let policy = Policy::builder()
///     .max_copies(2)
///     .delay(Duration::from_millis(10))
///     .timer(clock.clone())
///     .build();
///
/// let answer: Result<u32, ()> = (|| async { Ok(7) }).hedged(&policy).await;
/// assert_eq!(answer, Ok(7));
/// assert_eq!(clock.sleeps_created(), 0); // ready at once: no timer was armed
/// # });
/// ```
#[derive(Clone, Default)]
pub struct ManualTimer {
    clock: Arc<Mutex<Clock>>,
}

#[derive(Default)]
struct Clock {
    now: Duration,
    next_id: u64,
    sleeps_created: u64,
    sleeps: BTreeMap<u64, Registration>,
}

struct Registration {
    deadline: Duration,
    waker: Option<Waker>,
}

impl ManualTimer {
    /// A clock at zero with no sleeps.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current virtual time (also [`Timer::now`]).
    pub fn now(&self) -> Duration {
        self.lock().now
    }

    /// Moves the clock forward by `by` and wakes every sleep whose deadline has come.
    ///
    /// Wakers run after the clock's lock is released, so an executor that polls inside
    /// `wake` may call back into this timer.
    pub fn advance(&self, by: Duration) {
        let due: Vec<Waker> = {
            let mut clock = self.lock();
            clock.now = clock.now.saturating_add(by);
            let now = clock.now;
            clock
                .sleeps
                .values_mut()
                .filter(|sleep| sleep.deadline <= now)
                .filter_map(|sleep| sleep.waker.take())
                .collect()
        };
        due.into_iter().for_each(Waker::wake);
    }

    /// The earliest deadline among live sleeps that have not completed yet, if any.
    ///
    /// A simulation advances to it to run the next event.
    pub fn next_deadline(&self) -> Option<Duration> {
        let clock = self.lock();
        let now = clock.now;
        clock
            .sleeps
            .values()
            .map(|sleep| sleep.deadline)
            .filter(|deadline| *deadline > now)
            .min()
    }

    /// How many sleeps this clock (or any clone of it) has made.
    pub fn sleeps_created(&self) -> u64 {
        self.lock().sleeps_created
    }

    /// How many sleeps made by this clock are still alive (not yet dropped).
    pub fn live_sleeps(&self) -> usize {
        self.lock().sleeps.len()
    }

    fn lock(&self) -> MutexGuard<'_, Clock> {
        // A panic while holding the lock leaves the clock consistent: every update is
        // a single assignment.
        self.clock.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for ManualTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clock = self.lock();
        f.debug_struct("ManualTimer")
            .field("now", &clock.now)
            .field("live_sleeps", &clock.sleeps.len())
            .finish()
    }
}

impl Timer for ManualTimer {
    type Sleep = ManualSleep;

    fn now(&self) -> Duration {
        ManualTimer::now(self)
    }

    fn sleep(&self, after: Duration) -> ManualSleep {
        let mut clock = self.lock();
        let id = clock.next_id;
        clock.next_id += 1;
        clock.sleeps_created += 1;
        let deadline = clock.now.saturating_add(after);
        clock.sleeps.insert(id, Registration { deadline, waker: None });
        ManualSleep { timer: self.clone(), id }
    }

    fn reset(&self, sleep: Pin<&mut ManualSleep>, after: Duration) {
        let mut clock = self.lock();
        let deadline = clock.now.saturating_add(after);
        if let Some(registration) = clock.sleeps.get_mut(&sleep.id) {
            registration.deadline = deadline;
        }
    }
}

/// The sleep of [`ManualTimer`]: completes once the shared clock reaches its deadline.
pub struct ManualSleep {
    timer: ManualTimer,
    id: u64,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut clock = self.timer.lock();
        let now = clock.now;
        let Some(registration) = clock.sleeps.get_mut(&self.id) else {
            return Poll::Ready(());
        };
        if registration.deadline <= now {
            registration.waker = None;
            return Poll::Ready(());
        }
        match &mut registration.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        self.timer.lock().sleeps.remove(&self.id);
    }
}

impl fmt::Debug for ManualSleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let deadline = self.timer.lock().sleeps.get(&self.id).map(|r| r.deadline);
        f.debug_struct("ManualSleep").field("deadline", &deadline).finish()
    }
}
