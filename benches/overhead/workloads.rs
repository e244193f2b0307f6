//! Workloads for the overhead bench.

#[allow(unused_imports)]
use super::*;

/// The copies' error: `Clone` and `std::error::Error`, as the peers require.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BackendError;

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("backend error")
    }
}

impl std::error::Error for BackendError {}

pub(crate) type Reply = Result<u64, BackendError>;

/// A request that answers on the executor's next turn: `Pending` on its first poll (after
/// waking its task), ready on the second.
#[derive(Debug)]
pub(crate) struct PendingOnce {
    pub(crate) reply: Option<Reply>,
    pub(crate) yielded: bool,
}

impl PendingOnce {
    pub(crate) fn new(reply: Reply) -> Self {
        PendingOnce {
            reply: Some(reply),
            yielded: false,
        }
    }
}

impl Future for PendingOnce {
    type Output = Reply;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Reply> {
        if self.yielded {
            Poll::Ready(
                self.reply
                    .take()
                    .expect("`PendingOnce` polled after completion"),
            )
        } else {
            self.yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// A typical copy future: an `async fn` that holds its request while it waits.
pub(crate) async fn fetch(key: u64) -> Reply {
    PendingOnce::new(Ok(key)).await
}

/// Polls `future` with a no-op waker until it is ready, as an executor whose task is
/// woken at once would. The waker is hidden from the optimiser, as a real executor's is:
/// seen through, a bare future that yields once folds to nothing and its wake-up and
/// second poll would count against the hedged case alone.
#[inline(always)]
pub(crate) fn drive<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(black_box(Waker::noop()));
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// The delay every policy uses on the micro-benchmarks: far beyond a call's length, so
/// the first copy always wins and the timer never fires.
pub(crate) const DELAY: Duration = Duration::from_millis(10);

/// The delay of the launch-lateness runs.
pub(crate) const LATENESS_DELAY: Duration = Duration::from_millis(1);

pub(crate) fn policy<T: Timer>(max_copies: usize, timer: T) -> Policy<T> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(DELAY)
        .timer(timer)
        .build()
}

/// The key of the keyed cases: a host, as the HTTP layers key.
pub(crate) const KEY: &str = "api-1.internal:443";

/// An adaptive policy with keys, its delay bounded to `DELAY` and beyond: the first
/// copy always wins.
pub(crate) fn keyed_policy<T: Timer>(timer: T) -> Policy<T> {
    Policy::builder()
        .adaptive_delay(0.95)
        .adaptive_keys(64)
        .delay(DELAY)
        .min_delay(DELAY)
        .timer(timer)
        .build()
}

/// tower's hedge, told its latency percentile is `DELAY` so that it arms a hedge.
pub(crate) fn tower_hedge<S>(service: S) -> tower::hedge::Hedge<S, ClonePolicy>
where
    S: Service<u64, Error = BackendError> + Clone,
{
    let latencies = [DELAY.as_millis() as u64; 20];
    tower::hedge::Hedge::new_with_mock_latencies(
        service,
        ClonePolicy,
        1,
        0.9,
        Duration::from_secs(60),
        &latencies,
    )
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct ClonePolicy;

impl tower::hedge::Policy<u64> for ClonePolicy {
    fn clone_request(&self, request: &u64) -> Option<u64> {
        Some(*request)
    }

    fn can_retry(&self, _request: &u64) -> bool {
        true
    }
}

pub(crate) fn resilience_hedge<S>(service: S) -> tower_resilience_hedge::Hedge<S>
where
    S: Service<u64, Error = BackendError>,
{
    tower_resilience_hedge::HedgeLayer::builder()
        .delay(DELAY)
        .max_hedged_attempts(2)
        .build()
        .layer(service)
}

pub(crate) fn hedged_crate() -> hedged::Hedge {
    // One sample per `u64::MAX` calls: the delay stays `DELAY` for the whole run.
    hedged::Hedge::new(7, 64, DELAY, u64::MAX, 0.95).expect("valid histogram settings")
}

/// One call through a tower service: `poll_ready`, `call`, and the response driven.
#[inline(always)]
pub(crate) fn call_service<S: Service<u64>>(
    service: &mut S,
    request: u64,
) -> Result<S::Response, S::Error> {
    let mut cx = Context::from_waker(Waker::noop());
    match service.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {}
        Poll::Ready(Err(error)) => return Err(error),
        Poll::Pending => unreachable!("the benchmark services are always ready"),
    }
    drive(service.call(request))
}
