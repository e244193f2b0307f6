//! The timers: `ManualTimer`'s virtual clock, the real timers' re-arming, and the
//! `Timer` contract every shipped timer keeps: a deadline past the end of time never fires
//! and never panics.

mod common;

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use hedging::timer::{AsyncIoTimer, FuturesTimer, ManualTimer, Timer};

#[derive(Default)]
struct Flag(std::sync::atomic::AtomicUsize);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Flag {
    fn wakes(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn poll<F: Future>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}

#[test]
fn manual_timer_wakes_only_the_sleeps_that_are_due() {
    let timer = ManualTimer::new();
    let (early_flag, late_flag) = (Arc::new(Flag::default()), Arc::new(Flag::default()));
    let (early_waker, late_waker) = (
        Waker::from(early_flag.clone()),
        Waker::from(late_flag.clone()),
    );
    let mut early = pin!(timer.sleep(Duration::from_millis(5)));
    let mut late = pin!(timer.sleep(Duration::from_millis(10)));
    assert!(poll(early.as_mut(), &early_waker).is_pending());
    assert!(poll(late.as_mut(), &late_waker).is_pending());
    assert_eq!(timer.next_deadline(), Some(Duration::from_millis(5)));

    timer.advance(Duration::from_millis(5));
    assert_eq!((early_flag.wakes(), late_flag.wakes()), (1, 0));
    assert!(poll(early.as_mut(), &early_waker).is_ready());
    assert_eq!(timer.next_deadline(), Some(Duration::from_millis(10)));

    timer.advance(Duration::from_millis(4));
    assert_eq!(late_flag.wakes(), 0);
    timer.advance(Duration::from_millis(1));
    assert_eq!(late_flag.wakes(), 1);
    assert!(poll(late.as_mut(), &late_waker).is_ready());
}

#[test]
fn manual_timer_clones_share_one_clock() {
    let timer = ManualTimer::new();
    let clone = timer.clone();
    clone.advance(Duration::from_secs(3));
    assert_eq!(timer.now(), Duration::from_secs(3));
    assert_eq!(Timer::now(&timer), Duration::from_secs(3));
    let _sleep = clone.sleep(Duration::from_secs(1));
    assert_eq!((timer.sleeps_created(), timer.live_sleeps()), (1, 1));
}

#[test]
fn manual_timer_reset_moves_the_deadline_from_now() {
    let timer = ManualTimer::new();
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(flag.clone());
    let mut sleep = pin!(timer.sleep(Duration::from_millis(5)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.advance(Duration::from_millis(2));
    timer.reset(sleep.as_mut(), Duration::from_millis(10));
    assert_eq!(timer.next_deadline(), Some(Duration::from_millis(12)));
    timer.advance(Duration::from_millis(9));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.advance(Duration::from_millis(1));
    assert_eq!(flag.wakes(), 1);
    assert!(poll(sleep.as_mut(), &waker).is_ready());
    assert_eq!(
        timer.sleeps_created(),
        1,
        "reset re-arms, it does not make a sleep"
    );
}

#[test]
fn manual_timer_forgets_dropped_sleeps() {
    let timer = ManualTimer::new();
    let sleep = timer.sleep(Duration::from_millis(5));
    assert_eq!(timer.live_sleeps(), 1);
    assert!(format!("{sleep:?}").contains("5ms"));
    drop(sleep);
    assert_eq!(timer.live_sleeps(), 0);
    assert_eq!(timer.next_deadline(), None);
    assert!(format!("{timer:?}").contains("live_sleeps: 0"));
}

#[test]
fn manual_timer_saturates_instead_of_overflowing() {
    let timer = ManualTimer::new();
    timer.advance(Duration::from_secs(1));
    let _sleep = timer.sleep(Duration::MAX);
    assert_eq!(timer.next_deadline(), Some(Duration::MAX));
    timer.advance(Duration::MAX);
    assert_eq!(timer.now(), Duration::MAX);
}

#[test]
fn manual_timer_wakers_may_call_back_into_the_timer() {
    struct Reentrant(ManualTimer);
    impl Wake for Reentrant {
        fn wake(self: Arc<Self>) {
            // Would deadlock if `advance` woke while holding the clock's lock.
            let _ = self.0.now();
            drop(self.0.sleep(Duration::from_millis(1)));
        }
    }
    let timer = ManualTimer::new();
    let waker = Waker::from(Arc::new(Reentrant(timer.clone())));
    let mut sleep = pin!(timer.sleep(Duration::from_millis(1)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.advance(Duration::from_millis(1));
    assert!(poll(sleep.as_mut(), &waker).is_ready());
}

/// Real clock, generous bound: a long sleep re-armed to 1 ms completes long before the
/// original deadline.
fn rearm_completes_early<T: Timer>(timer: T) {
    let started = Instant::now();
    futures::executor::block_on(async {
        let mut sleep = pin!(timer.sleep(Duration::from_secs(60)));
        futures::future::poll_fn(|cx| {
            assert!(sleep.as_mut().poll(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        timer.reset(sleep.as_mut(), Duration::from_millis(1));
        sleep.await;
    });
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The same through `sleep_until` and `reset_until`, which take deadlines on the timer's
/// clock: a sleep due in a minute, moved to a millisecond from now, completes.
fn rearm_until_completes_early<T: Timer>(timer: T) {
    let started = Instant::now();
    futures::executor::block_on(async {
        let now = timer.now();
        let mut sleep = pin!(timer.sleep_until(now + Duration::from_secs(60), now));
        futures::future::poll_fn(|cx| {
            assert!(sleep.as_mut().poll(cx).is_pending());
            Poll::Ready(())
        })
        .await;
        let now = timer.now();
        timer.reset_until(sleep.as_mut(), now + Duration::from_millis(1), now);
        sleep.await;
    });
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn futures_timer_rearms_a_sleep() {
    rearm_completes_early(FuturesTimer::new());
    rearm_until_completes_early(FuturesTimer::new());
}

#[test]
fn async_io_timer_rearms_a_sleep() {
    rearm_completes_early(AsyncIoTimer::new());
    rearm_until_completes_early(AsyncIoTimer::new());
}

#[test]
fn real_timers_tell_monotonic_time() {
    for now in [|| FuturesTimer.now(), || AsyncIoTimer.now()] {
        let first = now();
        let second = now();
        assert!(second >= first);
    }
}

/// The `Timer` contract: `sleep` and `reset` accept any duration; one past the end of
/// time never fires and never panics.
fn huge_sleeps_saturate<T: Timer>(timer: T) {
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(flag.clone());
    let mut sleep = pin!(timer.sleep(Duration::MAX));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.reset(sleep.as_mut(), Duration::MAX);
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.reset(sleep.as_mut(), Duration::from_secs(u64::MAX / 2));
    assert!(poll(sleep.as_mut(), &waker).is_pending());

    let now = timer.now();
    let mut until = pin!(timer.sleep_until(Duration::MAX, now));
    assert!(poll(until.as_mut(), &waker).is_pending());
    timer.reset_until(until.as_mut(), Duration::MAX, now);
    assert!(poll(until.as_mut(), &waker).is_pending());
}

#[test]
fn futures_timer_saturates_huge_sleeps() {
    huge_sleeps_saturate(FuturesTimer::new());
}

#[test]
fn async_io_timer_saturates_huge_sleeps() {
    huge_sleeps_saturate(AsyncIoTimer::new());
}

#[test]
fn async_io_timer_parks_a_deadline_past_the_end_of_time_whatever_now_says() {
    let timer = AsyncIoTimer::new();
    let waker = Waker::from(Arc::new(Flag::default()));
    let mut sleep = pin!(timer.sleep_until(Duration::MAX, Duration::MAX));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.reset_until(sleep.as_mut(), Duration::MAX, Duration::MAX);
    assert!(poll(sleep.as_mut(), &waker).is_pending());
}

#[test]
fn manual_timer_saturates_huge_sleeps() {
    huge_sleeps_saturate(ManualTimer::new());
}

// A hedge due at the end of time: the call's one sleep is re-armed to `Duration::MAX`
// (once by `delay(MAX)` after a failure, once by `delay_fn`). Real clocks, so the copies
// take a few milliseconds; the bounds are generous.

#[test]
fn futures_timer_survives_a_hedge_due_at_the_end_of_time() {
    for (policy, call) in common::huge_delay_calls(&FuturesTimer::new()) {
        common::assert_huge_delay_call(&policy, futures::executor::block_on(call));
    }
}

#[test]
fn async_io_timer_survives_a_hedge_due_at_the_end_of_time() {
    for (policy, call) in common::huge_delay_calls(&AsyncIoTimer::new()) {
        common::assert_huge_delay_call(&policy, async_io::block_on(call));
    }
}

#[test]
fn manual_timer_survives_a_hedge_due_at_the_end_of_time() {
    let timer = ManualTimer::new();
    for (policy, call) in common::huge_delay_calls(&timer) {
        let answer = common::Driver::new(call).run(&timer);
        common::assert_huge_delay_call(&policy, answer);
    }
}

#[test]
fn manual_timer_sleeps_until_exact_deadlines() {
    let timer = ManualTimer::new();
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(flag.clone());
    timer.advance(Duration::from_millis(5));

    let mut passed = pin!(timer.sleep_until(Duration::from_millis(3), Duration::ZERO));
    assert!(
        poll(passed.as_mut(), &waker).is_ready(),
        "a deadline already passed is due at once"
    );

    let mut sleep = pin!(timer.sleep_until(Duration::from_millis(12), timer.now()));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.reset_until(sleep.as_mut(), Duration::from_millis(9), timer.now());
    timer.advance(Duration::from_millis(3));
    assert!(poll(sleep.as_mut(), &waker).is_pending(), "1 ms early");
    timer.advance(Duration::from_millis(1));
    assert!(poll(sleep.as_mut(), &waker).is_ready(), "at 9 ms exactly");
}

/// A `ManualTimer` that counts how the hedge asks it the time. With `defers`, it arms a
/// call's first sleep before the clock is read, as the shipped timers do; without, it
/// keeps every provided method's default.
#[derive(Clone)]
struct Counting {
    timer: ManualTimer,
    defers: bool,
    reads: Arc<std::sync::atomic::AtomicUsize>,
    starts_told: Arc<std::sync::atomic::AtomicUsize>,
}

impl Counting {
    fn new(timer: &ManualTimer, defers: bool) -> Self {
        Counting {
            timer: timer.clone(),
            defers,
            reads: Arc::default(),
            starts_told: Arc::default(),
        }
    }

    /// (clock readings, starts told by a first sleep)
    fn asked(&self) -> (usize, usize) {
        let load = |count: &std::sync::atomic::AtomicUsize| {
            count.load(std::sync::atomic::Ordering::SeqCst)
        };
        (load(&self.reads), load(&self.starts_told))
    }
}

impl Timer for Counting {
    type Sleep = hedging::timer::ManualSleep;

    fn now(&self) -> Duration {
        self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.timer.now()
    }

    fn sleep(&self, after: Duration) -> Self::Sleep {
        self.timer.sleep(after)
    }

    fn sleep_from_now(&self, after: Duration) -> Option<Self::Sleep> {
        if self.defers {
            self.timer.sleep_from_now(after)
        } else {
            None
        }
    }

    fn started(&self, sleep: &Self::Sleep, after: Duration) -> Duration {
        self.starts_told
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.timer.started(sleep, after)
    }
}

type Classify = fn(&Result<u32, u32>) -> hedging::Verdict;

/// What [`counted_call`] saw.
struct Counted {
    answer: Result<u32, u32>,
    /// (copy, when it started since the call began)
    starts: Vec<(usize, Duration)>,
    /// (clock readings, starts told by a first sleep)
    asked: (usize, usize),
}

/// One call on `Counting`, delay 10 ms, two copies, after the clock moved to 100 ms.
fn counted_call(defers: bool, steps: [common::Step; 2], classify: Classify) -> Counted {
    use hedging::Hedgeable;
    let timer = ManualTimer::new();
    timer.advance(Duration::from_millis(100));
    let counting = Counting::new(&timer, defers);
    let policy = hedging::Policy::builder()
        .max_copies(2)
        .delay(Duration::from_millis(10))
        .timer(counting.clone())
        .build();
    let backend = common::Backend::new(&timer, steps);
    let answer =
        common::Driver::new(backend.factory().hedged(&policy).classify(classify)).run(&timer);
    let starts = backend
        .starts()
        .into_iter()
        .map(|(copy, at)| (copy, at - Duration::from_millis(100)))
        .collect();
    Counted {
        answer,
        starts,
        asked: counting.asked(),
    }
}

fn by_result(result: &Result<u32, u32>) -> hedging::Verdict {
    match result {
        Ok(_) => hedging::Verdict::Win,
        Err(_) => hedging::Verdict::Retry,
    }
}

fn retry_after_4_ms(result: &Result<u32, u32>) -> hedging::Verdict {
    match result {
        Ok(_) => hedging::Verdict::Win,
        Err(_) => hedging::Verdict::RetryAfter(Duration::from_millis(4)),
    }
}

#[test]
fn a_call_its_original_wins_before_the_delay_never_asks_a_deferring_timer_the_time() {
    use common::Step;
    let call = counted_call(true, [Step::ok(3, 0), Step::ok(1, 1)], by_result);
    assert_eq!(
        (call.answer, call.starts),
        (Ok(0), vec![(0, Duration::ZERO)])
    );
    assert_eq!(call.asked, (0, 0), "no clock read, no start asked");
}

#[test]
fn a_timer_that_cannot_defer_is_read_once_before_its_sleep_is_armed() {
    use common::Step;
    let call = counted_call(false, [Step::ok(3, 0), Step::ok(1, 1)], by_result);
    assert_eq!(
        (call.answer, call.starts),
        (Ok(0), vec![(0, Duration::ZERO)])
    );
    assert_eq!(call.asked, (1, 0));
}

#[test]
fn a_call_that_goes_on_learns_its_start_from_its_first_sleep_once() {
    use common::Step;
    let ms = Duration::from_millis;
    // The hedge at its delay; after a failure, at once; after a pushback, when it says.
    let scenarios: [([Step; 2], Classify, Duration); 3] = [
        ([Step::never(), Step::ok(1, 1)], by_result, ms(10)),
        ([Step::err(3, 7), Step::ok(1, 1)], by_result, ms(3)),
        ([Step::err(3, 7), Step::ok(1, 1)], retry_after_4_ms, ms(7)),
    ];
    for (steps, classify, hedge_at) in scenarios {
        let deferred = counted_call(true, steps, classify);
        let read = counted_call(false, steps, classify);
        let expected = vec![(0, Duration::ZERO), (1, hedge_at)];
        let deferred_call = (deferred.answer, &deferred.starts);
        assert_eq!(deferred_call, (Ok(1), &expected), "{steps:?}");
        assert_eq!((read.answer, &read.starts), (Ok(1), &expected), "{steps:?}");
        assert_eq!(deferred.asked.1, 1, "the start is asked once: {steps:?}");
        assert_eq!(read.asked.1, 0, "{steps:?}");
    }
}

/// A shipped timer's first sleep, armed before the clock is read, tells the reading it
/// counts from: between two readings taken around it.
fn first_sleep_tells_its_start<T: Timer>(timer: T) {
    let after = Duration::from_millis(10);
    let before = timer.now();
    let sleep = timer.sleep_from_now(after).expect("a shipped timer defers");
    let later = timer.now();
    let start = timer.started(&sleep, after);
    assert!(
        before <= start && start <= later,
        "{before:?} {start:?} {later:?}"
    );
}

#[test]
fn real_timers_first_sleeps_tell_their_start() {
    first_sleep_tells_its_start(FuturesTimer::new());
    first_sleep_tells_its_start(AsyncIoTimer::new());
    let timer = ManualTimer::new();
    timer.advance(Duration::from_secs(7));
    first_sleep_tells_its_start(timer.clone());
    timer.advance(Duration::MAX);
    assert!(
        timer.sleep_from_now(Duration::from_secs(1)).is_none(),
        "a deadline that would saturate does not tell its start"
    );
}
