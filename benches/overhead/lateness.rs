//! Launch lateness under a real clock for the overhead bench.

#[allow(unused_imports)]
use super::*;

/// One call whose original never answers, so the hedge wins; returns how long after its
/// due time the hedge started. The due time is counted from just before the original
/// was made, so the figure errs on the late side.
pub(crate) async fn hedge_lateness<T: Timer>(policy: &Policy<T>) -> Duration {
    let original_started = Cell::new(None);
    let hedge_started = Cell::new(None);
    let reply = (|attempt: Attempt| {
        if attempt.is_hedge() {
            hedge_started.set(Some(Instant::now()));
            Either::Left(ready_reply(7))
        } else {
            original_started.set(Some(Instant::now()));
            Either::Right(std::future::pending::<Reply>())
        }
    })
    .hedged(policy)
    .await;
    assert_eq!(reply.ok(), Some(7));
    let started = |cell: Cell<Option<Instant>>| cell.get().expect("the copy started");
    (started(hedge_started) - started(original_started)).saturating_sub(LATENESS_DELAY)
}

/// The same for the timer alone: how long after its deadline a sleep's task resumes.
pub(crate) async fn timer_lateness<T: Timer>(timer: &T) -> Duration {
    let start = Instant::now();
    timer.sleep(LATENESS_DELAY).await;
    start.elapsed().saturating_sub(LATENESS_DELAY)
}

pub(crate) struct Lateness {
    pub(crate) timer: &'static str,
    pub(crate) executor: &'static str,
    pub(crate) calls: usize,
    /// (p50, p99) of the timer alone.
    pub(crate) timer_alone: (Duration, Duration),
    /// (p50, p99) of the hedge's launch.
    pub(crate) hedge: (Duration, Duration),
}

pub(crate) fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort_unstable();
    let at = |quantile: f64| samples[((samples.len() - 1) as f64 * quantile).round() as usize];
    (at(0.5), at(0.99))
}

pub(crate) fn measure_lateness<T: Timer>(
    timer: T,
    timer_name: &'static str,
    executor: &'static str,
    calls: usize,
    block_on: impl Fn(Pin<&mut dyn Future<Output = Duration>>) -> Duration,
) -> Lateness {
    let policy = Policy::builder()
        .max_copies(2)
        .delay(LATENESS_DELAY)
        .timer(timer.clone())
        .build();
    let timer_alone = (0..calls)
        .map(|_| block_on(pin!(timer_lateness(&timer))))
        .collect();
    let hedge = (0..calls)
        .map(|_| block_on(pin!(hedge_lateness(&policy))))
        .collect();
    Lateness {
        timer: timer_name,
        executor,
        calls,
        timer_alone: percentiles(timer_alone),
        hedge: percentiles(hedge),
    }
}

pub(crate) fn lateness(calls: usize) -> Vec<Lateness> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    vec![
        measure_lateness(
            FuturesTimer,
            "futures-timer",
            "futures::executor",
            calls,
            |call| futures::executor::block_on(call),
        ),
        measure_lateness(
            AsyncIoTimer,
            "async-io",
            "async_io::block_on",
            calls,
            |call| async_io::block_on(call),
        ),
        measure_lateness(
            TokioTimer::new(),
            "tokio (`TokioTimer`)",
            "tokio current-thread",
            calls,
            |call| tokio.block_on(call),
        ),
    ]
}
