//! `HedgeStream`: copies of a stream race for a winning first item; the stream then
//! commits to that copy. Driven by `ManualTimer`, polled only when woken.

mod common;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use common::{ms, policy, Driver, Failure};
use futures::{Stream, StreamExt};
use hedging::timer::{ManualSleep, ManualTimer, Timer};
use hedging::{Attempt, Budget, HedgeableStream, Policy, Verdict};

type Item = Result<u32, Failure>;

/// Copy k of a scripted stream: each item after its own delay, then the end.
struct Scripted {
    timer: ManualTimer,
    items: VecDeque<(Duration, Item)>,
    sleep: Option<ManualSleep>,
    log: Arc<Mutex<Log>>,
}

#[derive(Default)]
struct Log {
    starts: Vec<(usize, Duration)>,
    dropped: usize,
}

impl Stream for Scripted {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let Some(&(after, item)) = self.items.front() else {
            return Poll::Ready(None);
        };
        if after == Duration::MAX {
            return Poll::Pending; // never
        }
        let timer = self.timer.clone();
        let sleep = self.sleep.get_or_insert_with(|| timer.sleep(after));
        if Pin::new(sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.sleep = None;
        self.items.pop_front();
        Poll::Ready(Some(item))
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        if let Ok(mut log) = self.log.lock() {
            log.dropped += 1;
        }
    }
}

/// A backend of streams: copy k yields `scripts[k]`.
#[derive(Clone)]
struct Streams {
    timer: ManualTimer,
    scripts: Arc<Vec<Vec<(Duration, Item)>>>,
    log: Arc<Mutex<Log>>,
}

const NEVER: Duration = Duration::MAX;

impl Streams {
    fn new(timer: &ManualTimer, scripts: Vec<Vec<(Duration, Item)>>) -> Self {
        Streams {
            timer: timer.clone(),
            scripts: Arc::new(scripts),
            log: Arc::default(),
        }
    }

    fn factory(&self) -> impl FnMut(Attempt) -> Scripted {
        let streams = self.clone();
        move |a: Attempt| {
            let log = Arc::clone(&streams.log);
            log.lock()
                .unwrap()
                .starts
                .push((a.index(), streams.timer.now()));
            Scripted {
                timer: streams.timer.clone(),
                items: streams.scripts[a.index()].iter().copied().collect(),
                sleep: None,
                log,
            }
        }
    }

    fn starts(&self) -> Vec<(usize, Duration)> {
        self.log.lock().unwrap().starts.clone()
    }

    fn dropped(&self) -> usize {
        self.log.lock().unwrap().dropped
    }
}

/// Polls `stream` to its end, only when woken, moving the clock to each next deadline;
/// returns the items with the time each arrived.
fn collect<S: Stream + Unpin>(timer: &ManualTimer, stream: S) -> Vec<(S::Item, Duration)> {
    let mut next = Driver::new(StreamFuture(Some(stream)));
    let mut items = Vec::new();
    loop {
        let (item, stream) = next.run(timer);
        match item {
            Some(item) => items.push((item, timer.now())),
            None => return items,
        }
        next = Driver::new(StreamFuture(Some(stream)));
    }
}

/// The next item and the stream, as a future.
struct StreamFuture<S>(Option<S>);

impl<S: Stream + Unpin> Future for StreamFuture<S> {
    type Output = (Option<S::Item>, S);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let stream = self.0.as_mut().expect("polled after completion");
        let item = std::task::ready!(stream.poll_next_unpin(cx));
        Poll::Ready((item, self.0.take().unwrap()))
    }
}

#[test]
fn the_stream_commits_to_the_first_winning_first_item() {
    let timer = ManualTimer::new();
    let streams = Streams::new(
        &timer,
        vec![
            vec![(NEVER, Ok(0))],
            vec![(ms(2), Ok(10)), (ms(5), Ok(11)), (ms(5), Ok(12))],
        ],
    );
    let policy = policy(&timer, 2, 10);
    let stream = Box::pin(streams.factory().hedged_stream(&policy));

    let items = collect(&timer, stream);
    assert_eq!(
        items,
        vec![(Ok(10), ms(12)), (Ok(11), ms(17)), (Ok(12), ms(22))]
    );
    assert_eq!(streams.starts(), vec![(0, ms(0)), (1, ms(10))]);
    assert_eq!(streams.dropped(), 2);
    let stats = policy.stats();
    assert_eq!((stats.wins, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[test]
fn max_copies_caps_one_stream_below_its_policy() {
    let timer = ManualTimer::new();
    let streams = Streams::new(
        &timer,
        vec![vec![(ms(30), Ok(0)), (ms(5), Ok(1))], vec![(ms(1), Ok(10))]],
    );
    let policy = policy(&timer, 2, 10);
    let stream = Box::pin(streams.factory().hedged_stream(&policy).max_copies(1));

    let items = collect(&timer, stream);
    assert_eq!(items, vec![(Ok(0), ms(30)), (Ok(1), ms(35))]);
    assert_eq!(streams.starts(), vec![(0, ms(0))], "no hedge at 10 ms");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.hedges), (1, 1, 0));
}

#[test]
fn the_losers_are_dropped_at_the_commit() {
    let timer = ManualTimer::new();
    let streams = Streams::new(
        &timer,
        vec![vec![(NEVER, Ok(0))], vec![(ms(2), Ok(10)), (NEVER, Ok(11))]],
    );
    let policy = policy(&timer, 2, 10);
    let mut next = Driver::new(StreamFuture(Some(Box::pin(
        streams.factory().hedged_stream(&policy),
    ))));
    let (item, stream) = next.run(&timer);
    assert_eq!(item, Some(Ok(10)));
    assert_eq!(streams.dropped(), 1, "the original went at the commit");
    assert_eq!(timer.live_sleeps(), 0, "the hedge timer went at the commit");
    drop(stream);
    assert_eq!(streams.dropped(), 2);
    assert_eq!(
        policy.stats().cancelled,
        0,
        "dropped after the commit: not a cancellation"
    );
}

#[test]
fn items_after_the_commit_are_never_classified() {
    let timer = ManualTimer::new();
    let streams = Streams::new(
        &timer,
        vec![vec![
            (ms(1), Ok(1)),
            (ms(1), Err(Failure::Code(5))),
            (ms(1), Ok(2)),
        ]],
    );
    let policy = policy(&timer, 2, 10);
    let judged = Arc::new(Mutex::new(0));
    let count = Arc::clone(&judged);
    let stream = streams
        .factory()
        .hedged_stream(&policy)
        .classify(move |r: &Item| {
            *count.lock().unwrap() += 1;
            match r {
                Ok(_) => Verdict::Win,
                Err(_) => Verdict::Fatal,
            }
        });
    let items: Vec<_> = collect(&timer, Box::pin(stream))
        .into_iter()
        .map(|(item, _)| item)
        .collect();
    assert_eq!(items, vec![Ok(1), Err(Failure::Code(5)), Ok(2)]);
    assert_eq!(*judged.lock().unwrap(), 1, "the first item only");
}

#[test]
fn a_fatal_first_item_is_yielded_and_the_stream_ends() {
    let timer = ManualTimer::new();
    let streams = Streams::new(
        &timer,
        vec![
            vec![(ms(3), Err(Failure::Code(4))), (ms(1), Ok(1))],
            vec![(NEVER, Ok(0))],
        ],
    );
    let policy = policy(&timer, 2, 10);
    let stream = streams
        .factory()
        .hedged_stream(&policy)
        .when(|e: &Failure| *e != Failure::Code(4));
    let items = collect(&timer, Box::pin(stream));
    assert_eq!(items, vec![(Err(Failure::Code(4)), ms(3))]);
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn every_copy_failing_yields_the_lowest_index_error_then_ends() {
    let timer = ManualTimer::new();
    let streams = Streams::new(
        &timer,
        vec![
            vec![(ms(30), Err(Failure::Code(1)))],
            vec![(ms(5), Err(Failure::Code(2)))],
        ],
    );
    let policy = policy(&timer, 2, 10);
    let items = collect(&timer, Box::pin(streams.factory().hedged_stream(&policy)));
    assert_eq!(items, vec![(Err(Failure::Code(1)), ms(30))]);
}

#[test]
fn copies_that_end_empty_fail_without_an_error() {
    let timer = ManualTimer::new();
    // Copy 0 ends empty at once: copy 1 starts at once and fails; its error is yielded.
    let streams = Streams::new(&timer, vec![vec![], vec![(ms(2), Err(Failure::Code(9)))]]);
    let policy = policy(&timer, 2, 10);
    let items = collect(&timer, Box::pin(streams.factory().hedged_stream(&policy)));
    assert_eq!(items, vec![(Err(Failure::Code(9)), ms(2))]);
    assert_eq!(streams.starts(), vec![(0, ms(0)), (1, ms(0))]);

    // Every copy ends empty: no error at all, the stream ends without an item.
    let streams = Streams::new(&timer, vec![vec![], vec![]]);
    let items = collect(&timer, Box::pin(streams.factory().hedged_stream(&policy)));
    assert_eq!(items, vec![]);
    assert_eq!(policy.stats().failures, 2);
}

#[test]
fn dropping_the_stream_before_the_commit_cancels_the_call() {
    let timer = ManualTimer::new();
    let streams = Streams::new(&timer, vec![vec![(NEVER, Ok(0))], vec![(NEVER, Ok(1))]]);
    let policy = policy(&timer, 2, 10);
    let mut next = Driver::new(StreamFuture(Some(Box::pin(
        streams.factory().hedged_stream(&policy),
    ))));
    assert_eq!(next.run_until(&timer, ms(20)).map(|(item, _)| item), None);
    assert_eq!(streams.starts().len(), 2);
    drop(next);
    assert_eq!(streams.dropped(), 2);
    assert_eq!(timer.live_sleeps(), 0);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.cancelled), (1, 1));
}

#[test]
fn timeouts_apply_until_the_commit() {
    let timer = ManualTimer::new();
    // Copy 0's first item would come at 30 ms: it times out at 20 and copy 1 starts;
    // copy 1's second item comes 50 ms after its first, long after any timeout.
    let streams = Streams::new(
        &timer,
        vec![
            vec![(ms(30), Ok(0))],
            vec![(ms(5), Ok(10)), (ms(50), Ok(11))],
        ],
    );
    let policy = policy(&timer, 2, 100);
    let stream = streams
        .factory()
        .hedged_stream(&policy)
        .attempt_timeout(ms(20))
        .timeout(ms(40));
    let items = collect(&timer, Box::pin(stream));
    assert_eq!(items, vec![(Ok(10), ms(25)), (Ok(11), ms(75))]);
    assert_eq!(streams.starts(), vec![(0, ms(0)), (1, ms(20))]);
}

#[test]
fn a_total_timeout_before_the_commit_yields_elapsed_and_ends() {
    let timer = ManualTimer::new();
    let streams = Streams::new(&timer, vec![vec![(NEVER, Ok(0))], vec![(NEVER, Ok(1))]]);
    let policy = policy(&timer, 2, 10);
    let stream = streams.factory().hedged_stream(&policy).timeout(ms(30));
    let items = collect(&timer, Box::pin(stream));
    assert_eq!(items, vec![(Err(Failure::Elapsed), ms(30))]);
    assert_eq!(policy.stats().failures, 1);
}

#[test]
fn the_winner_gives_back_its_budget_slot_at_the_commit() {
    let timer = ManualTimer::new();
    let budget = Budget::new(1.0).max_outstanding(1);
    let policy = Policy::builder()
        .max_copies(2)
        .delay(ms(10))
        .budget(&budget)
        .timer(timer.clone())
        .build();
    let streams = Streams::new(
        &timer,
        vec![
            vec![(NEVER, Ok(0))],
            vec![(ms(2), Ok(10)), (ms(50), Ok(11))],
        ],
    );
    let mut next = Driver::new(StreamFuture(Some(Box::pin(
        streams.factory().hedged_stream(&policy),
    ))));
    assert_eq!(next.run_until(&timer, ms(11)).map(|(item, _)| item), None);
    assert_eq!(
        budget.outstanding(),
        1,
        "the hedge holds a slot while it races"
    );
    let (item, stream) = next.run(&timer);
    assert_eq!(item, Some(Ok(10)));
    assert_eq!(
        budget.outstanding(),
        0,
        "committed: it is the call's one copy now"
    );
    drop(stream);
}

#[test]
fn a_stream_whose_original_wins_at_once_arms_no_timer() {
    let timer = ManualTimer::new();
    let streams = Streams::new(
        &timer,
        vec![vec![(Duration::ZERO, Ok(1)), (Duration::ZERO, Ok(2))]],
    );
    let policy = policy(&timer, 2, 10);
    let items = collect(&timer, Box::pin(streams.factory().hedged_stream(&policy)));
    assert_eq!(items, vec![(Ok(1), ms(0)), (Ok(2), ms(0))]);
    assert_eq!(timer.sleeps_created(), 2, "the copy's own sleeps only");
    assert_eq!(policy.stats().wins, 1);
}
