//! [`ManualTimer`]: virtual time for deterministic tests.

use core::fmt;
use core::ops::Bound;
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
/// Sleeps are kept in deadline order, so `advance` and `next_deadline` touch only the
/// sleeps that are due, however many are alive: a simulation with thousands of calls in
/// flight stays fast.
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
    sleeps_created: u64,
    /// Live sleeps by slot; a dropped sleep frees its slot for the next one.
    slots: Vec<Option<Registration>>,
    free_slots: Vec<usize>,
    /// The slot of every live sleep no `advance` has reached yet, by deadline and then by
    /// creation, so finding the next deadline and the due sleeps touches only those, and
    /// sleeps due together wake in the order they were made.
    pending: BTreeMap<(Duration, u64), usize>,
}

impl Clock {
    /// Moves the deadline of the sleep in `slot`.
    fn move_deadline(&mut self, slot: usize, deadline: Duration) {
        let registration = self.registration(slot);
        let moved_from = core::mem::replace(&mut registration.deadline, deadline);
        let created = registration.created;
        self.pending.remove(&(moved_from, created));
        self.pending.insert((deadline, created), slot);
    }

    fn registration(&mut self, slot: usize) -> &mut Registration {
        self.slots[slot]
            .as_mut()
            .expect("a live sleep keeps its slot")
    }

    fn live_sleeps(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }
}

struct Registration {
    deadline: Duration,
    /// The sleep's rank among every sleep the clock made.
    created: u64,
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

    /// Moves the clock forward by `by` and wakes every sleep whose deadline has come, in
    /// deadline order, and those due at the same instant in the order they were made.
    ///
    /// Wakers run after the clock's lock is released, so an executor that polls inside
    /// `wake` may call back into this timer.
    pub fn advance(&self, by: Duration) {
        let due: Vec<Waker> = {
            let mut clock = self.lock();
            clock.now = clock.now.saturating_add(by);
            let mut due = Vec::new();
            while let Some((&(deadline, _), &slot)) = clock.pending.first_key_value() {
                if deadline > clock.now {
                    break;
                }
                clock.pending.pop_first();
                due.extend(clock.registration(slot).waker.take());
            }
            due
        };
        due.into_iter().for_each(Waker::wake);
    }

    /// The earliest deadline among live sleeps that have not completed yet, if any.
    ///
    /// A simulation advances to it to run the next event.
    pub fn next_deadline(&self) -> Option<Duration> {
        let clock = self.lock();
        clock
            .pending
            .range((Bound::Excluded((clock.now, u64::MAX)), Bound::Unbounded))
            .next()
            .map(|(&(deadline, _), _)| deadline)
    }

    /// How many sleeps this clock (or any clone of it) has made.
    pub fn sleeps_created(&self) -> u64 {
        self.lock().sleeps_created
    }

    /// How many sleeps made by this clock are still alive (not yet dropped).
    pub fn live_sleeps(&self) -> usize {
        self.lock().live_sleeps()
    }

    fn lock(&self) -> MutexGuard<'_, Clock> {
        // A panic while holding the lock leaves the clock consistent: no update can
        // panic halfway.
        self.clock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for ManualTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clock = self.lock();
        f.debug_struct("ManualTimer")
            .field("now", &clock.now)
            .field("live_sleeps", &clock.live_sleeps())
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
        let deadline = clock.now.saturating_add(after);
        self.register(&mut clock, deadline)
    }

    fn reset(&self, sleep: Pin<&mut ManualSleep>, after: Duration) {
        let mut clock = self.lock();
        let deadline = clock.now.saturating_add(after);
        clock.move_deadline(sleep.slot, deadline);
    }

    // Exact: a deadline the clock has passed already is due at once.
    fn sleep_until(&self, deadline: Duration, _now: Duration) -> ManualSleep {
        self.register(&mut self.lock(), deadline)
    }

    fn reset_until(&self, sleep: Pin<&mut ManualSleep>, deadline: Duration, _now: Duration) {
        self.lock().move_deadline(sleep.slot, deadline);
    }

    // Its deadline, less `after`, is the reading it counts from; one that would saturate
    // would not tell it, so the hedge reads the clock instead.
    fn sleep_from_now(&self, after: Duration) -> Option<ManualSleep> {
        let mut clock = self.lock();
        let deadline = clock.now.checked_add(after)?;
        Some(self.register(&mut clock, deadline))
    }

    fn started(&self, sleep: &ManualSleep, after: Duration) -> Duration {
        let deadline = self.lock().registration(sleep.slot).deadline;
        deadline.saturating_sub(after)
    }
}

impl ManualTimer {
    /// A sleep due at `deadline`, registered with the clock.
    fn register(&self, clock: &mut Clock, deadline: Duration) -> ManualSleep {
        let created = clock.sleeps_created;
        clock.sleeps_created += 1;
        let registration = Some(Registration {
            deadline,
            created,
            waker: None,
        });
        let slot = match clock.free_slots.pop() {
            Some(slot) => {
                clock.slots[slot] = registration;
                slot
            }
            None => {
                clock.slots.push(registration);
                clock.slots.len() - 1
            }
        };
        clock.pending.insert((deadline, created), slot);
        ManualSleep {
            timer: self.clone(),
            slot,
        }
    }
}

/// The sleep of [`ManualTimer`]: completes once the shared clock reaches its deadline.
pub struct ManualSleep {
    timer: ManualTimer,
    /// Where the clock keeps this sleep's deadline and waker.
    slot: usize,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut clock = self.timer.lock();
        let now = clock.now;
        let registration = clock.registration(self.slot);
        if registration.deadline <= now {
            registration.waker = None;
            let key = (registration.deadline, registration.created);
            clock.pending.remove(&key);
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
        let mut clock = self.timer.lock();
        if let Some(registration) = clock.slots[self.slot].take() {
            clock
                .pending
                .remove(&(registration.deadline, registration.created));
            clock.free_slots.push(self.slot);
        }
    }
}

impl fmt::Debug for ManualSleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let deadline = self.timer.lock().slots[self.slot]
            .as_ref()
            .map(|registration| registration.deadline);
        f.debug_struct("ManualSleep")
            .field("deadline", &deadline)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::boxed::Box;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;
    use std::vec;

    const MS: Duration = Duration::from_millis(1);

    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn pending(timer: &ManualTimer, after: Duration) -> (Pin<Box<ManualSleep>>, Arc<Wakes>) {
        let wakes = Arc::new(Wakes::default());
        let mut sleep = Box::pin(timer.sleep(after));
        let waker = Waker::from(Arc::clone(&wakes));
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        (sleep, wakes)
    }

    #[test]
    fn the_index_holds_only_sleeps_no_advance_has_reached() {
        let timer = ManualTimer::new();
        let sleeps: Vec<_> = (1..=5).map(|ms| pending(&timer, ms * MS)).collect();
        assert_eq!(timer.lock().pending.len(), 5);
        timer.advance(3 * MS);
        let woken: Vec<usize> = sleeps
            .iter()
            .map(|(_, wakes)| wakes.0.load(Ordering::SeqCst))
            .collect();
        assert_eq!(woken, [1, 1, 1, 0, 0]);
        assert_eq!(timer.lock().pending.len(), 2);
        assert_eq!(timer.next_deadline(), Some(4 * MS));
        // Fired sleeps stay alive until dropped, but no longer count as pending.
        assert_eq!(timer.live_sleeps(), 5);
        drop(sleeps);
        assert_eq!((timer.live_sleeps(), timer.lock().pending.len()), (0, 0));
    }

    #[test]
    fn a_fired_sleep_reset_to_later_fires_again() {
        let timer = ManualTimer::new();
        let (mut sleep, wakes) = pending(&timer, MS);
        timer.advance(MS);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert_eq!(timer.next_deadline(), None);
        timer.reset(sleep.as_mut(), 2 * MS);
        assert_eq!(timer.next_deadline(), Some(3 * MS));
        let waker = Waker::from(Arc::clone(&wakes));
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        timer.advance(2 * MS);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_sleep_reset_to_now_wakes_at_the_next_advance_even_of_zero() {
        let timer = ManualTimer::new();
        let (mut sleep, wakes) = pending(&timer, 5 * MS);
        timer.reset(sleep.as_mut(), Duration::ZERO);
        assert_eq!(
            timer.next_deadline(),
            None,
            "due now is not a future deadline"
        );
        timer.advance(Duration::ZERO);
        assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
        assert_eq!(timer.lock().pending.len(), 0);
    }

    #[test]
    fn a_sleep_polled_ready_before_any_advance_leaves_the_index() {
        let timer = ManualTimer::new();
        let mut sleep = Box::pin(timer.sleep(Duration::ZERO));
        let waker = Waker::from(Arc::new(Wakes::default()));
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready());
        assert_eq!(timer.lock().pending.len(), 0);
        assert_eq!(timer.live_sleeps(), 1);
    }

    #[test]
    fn sleeps_due_together_wake_in_the_order_they_were_made() {
        struct Log(usize, Arc<Mutex<Vec<usize>>>);
        impl Wake for Log {
            fn wake(self: Arc<Self>) {
                self.1.lock().unwrap().push(self.0);
            }
        }
        let timer = ManualTimer::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        // The second sleep made takes the slot the first freed: slot order is not the
        // order they were made in.
        let first = timer.sleep(MS);
        let mut sleeps = vec![Box::pin(timer.sleep(MS))];
        drop(first);
        sleeps.push(Box::pin(timer.sleep(MS)));
        for (rank, sleep) in sleeps.iter_mut().enumerate() {
            let waker = Waker::from(Arc::new(Log(rank, Arc::clone(&log))));
            assert!(sleep
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
        }
        timer.advance(MS);
        assert_eq!(*log.lock().unwrap(), [0, 1]);
    }

    #[test]
    fn one_advance_wakes_the_earlier_deadline_first() {
        struct Log(&'static str, Arc<Mutex<Vec<&'static str>>>);
        impl Wake for Log {
            fn wake(self: Arc<Self>) {
                self.1.lock().unwrap().push(self.0);
            }
        }
        let timer = ManualTimer::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut late = Box::pin(timer.sleep(5 * MS));
        let mut early = Box::pin(timer.sleep(3 * MS));
        for (name, sleep) in [("late", &mut late), ("early", &mut early)] {
            let waker = Waker::from(Arc::new(Log(name, Arc::clone(&log))));
            assert!(sleep
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
        }
        timer.advance(10 * MS);
        assert_eq!(*log.lock().unwrap(), ["early", "late"]);
    }
}
