//! Scripted copies: futures and streams on `ManualTimer` that do what their step says,
//! and log what the scripted backend saw; and the call they race in, as its caller sees it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::future::FusedFuture;
use futures_core::stream::FusedStream;
use futures_core::Stream;
use hedging::timer::{ManualSleep, ManualTimer, Timer};
use hedging::{Attempt, Budget, Verdict};

use super::script::{End, Fail, Judge, Later, Output, Step};

/// What the scripted backend saw during one call.
#[derive(Default, Debug)]
pub(crate) struct Log {
    /// Every attempt the factory was called with, in order (declined ones included).
    pub(crate) attempts: Vec<Attempt>,
    /// (copy index, virtual time) of every copy the factory made.
    pub(crate) made: Vec<(usize, Duration)>,
    /// Copies dropped.
    pub(crate) dropped: usize,
    /// Sleeps the copies made (the rest of the timer's sleeps are the hedge timer).
    pub(crate) copy_sleeps: u64,
    /// Sleeps of copies still alive.
    pub(crate) live_copy_sleeps: usize,
    /// Results shown to `.when` or `.classify`, in order.
    pub(crate) classified: Vec<Output>,
    /// The capped budget of the call's policy, if any: hedges hold its slots.
    pub(crate) slot_budget: Option<Budget>,
    /// Hedges alive that were polled under a capped budget, so hold a slot by contract
    /// (a stream's winner gives its slot back at the commit).
    pub(crate) slot_holders: Vec<usize>,
    /// Slots taken for copies whose start unwound: held until the call is dropped.
    pub(crate) orphan_slots: usize,
    /// Broken promises seen where no assertion may unwind: in a `Drop`, in a classifier.
    pub(crate) violations: Vec<String>,
}

pub(crate) type SharedLog = Rc<RefCell<Log>>;

impl Log {
    /// A hedge is polled for the first time: under a capped budget it holds a slot.
    fn polled(&mut self, index: usize) {
        if index > 0 && self.slot_budget.is_some() {
            self.slot_holders.push(index);
        }
    }

    /// A copy is being dropped: a hedge holding a slot still holds it now (losers dropped
    /// together give their slots back once all are gone, so the count may be higher).
    fn dropping(&mut self, index: usize, sleep: bool) {
        self.dropped += 1;
        self.live_copy_sleeps -= usize::from(sleep);
        let Some(position) = self.slot_holders.iter().position(|held| *held == index) else {
            return;
        };
        let outstanding = self.slot_budget.as_ref().map_or(0, Budget::outstanding);
        if outstanding < self.slot_holders.len() + self.orphan_slots {
            self.violations.push(format!(
                "copy {index} dropped while the budget counts {outstanding} slots, {} hedges \
                 holding one are alive (itself included), {} taken for starts that unwound",
                self.slot_holders.len(),
                self.orphan_slots
            ));
        }
        self.slot_holders.remove(position);
    }

    /// A sleep for a copy.
    fn sleep(&mut self, timer: &ManualTimer, after: Duration) -> ManualSleep {
        self.copy_sleeps += 1;
        self.live_copy_sleeps += 1;
        timer.sleep(after)
    }
}

/// One copy of a future call.
pub(crate) struct ScriptedCopy {
    index: usize,
    end: End,
    sleep: Option<ManualSleep>,
    log: SharedLog,
    polled: bool,
    finished: bool,
}

impl ScriptedCopy {
    pub(crate) fn new(timer: &ManualTimer, index: usize, step: &Step, log: &SharedLog) -> Self {
        let sleep = (step.end != End::Never).then(|| log.borrow_mut().sleep(timer, step.latency));
        ScriptedCopy {
            index,
            end: step.end,
            sleep,
            log: Rc::clone(log),
            polled: false,
            finished: false,
        }
    }
}

impl Future for ScriptedCopy {
    type Output = Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        if !self.polled {
            self.polled = true;
            self.log.borrow_mut().polled(self.index);
        }
        if self.finished {
            let index = self.index;
            let mut log = self.log.borrow_mut();
            log.violations
                .push(format!("copy {index} polled after it finished"));
            return Poll::Pending;
        }
        let Some(sleep) = self.sleep.as_mut() else {
            return Poll::Pending;
        };
        if Pin::new(sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.finished = true;
        match self.end {
            End::Ok(value) => Poll::Ready(Ok(value)),
            End::Err(code) => Poll::Ready(Err(Fail::Code(code))),
            End::Panic => panic!("scripted copy panic"),
            End::Never | End::FactoryPanic | End::Empty => unreachable!("never finishes"),
        }
    }
}

impl Drop for ScriptedCopy {
    fn drop(&mut self) {
        self.log
            .borrow_mut()
            .dropping(self.index, self.sleep.is_some());
    }
}

/// One copy of a streaming call: its first item (or end) after a latency, then its later
/// items, each after its own latency.
pub(crate) struct ScriptedStream {
    index: usize,
    timer: ManualTimer,
    /// The next item's sleep, if one is coming.
    sleep: Option<ManualSleep>,
    /// The first item, until it came.
    first: Option<End>,
    later: VecDeque<(Duration, Later)>,
    ends: bool,
    /// The call's classifier: a stream that yields a winning first item is committed to.
    judge: Judge,
    log: SharedLog,
    polled: bool,
    done: bool,
}

impl ScriptedStream {
    pub(crate) fn new(
        timer: &ManualTimer,
        index: usize,
        step: &Step,
        judge: Judge,
        log: &SharedLog,
    ) -> Self {
        let sleep = (step.end != End::Never).then(|| log.borrow_mut().sleep(timer, step.latency));
        ScriptedStream {
            index,
            timer: timer.clone(),
            sleep,
            first: Some(step.end),
            later: step.later.iter().copied().collect(),
            ends: step.ends,
            judge,
            log: Rc::clone(log),
            polled: false,
            done: false,
        }
    }

    /// Arms the sleep for the next later item, if any.
    fn arm_next(&mut self) {
        let mut log = self.log.borrow_mut();
        if self.sleep.take().is_some() {
            log.live_copy_sleeps -= 1;
        }
        if let Some((latency, _)) = self.later.front() {
            self.sleep = Some(log.sleep(&self.timer, *latency));
        }
    }
}

impl Stream for ScriptedStream {
    type Item = Output;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Output>> {
        if !self.polled {
            self.polled = true;
            self.log.borrow_mut().polled(self.index);
        }
        if self.done {
            let index = self.index;
            let mut log = self.log.borrow_mut();
            log.violations
                .push(format!("stream {index} polled after it ended"));
            return Poll::Ready(None);
        }
        let Some(sleep) = self.sleep.as_mut() else {
            // No item is coming: the end, or pending forever.
            if self.first.is_none() && self.ends {
                self.done = true;
                return Poll::Ready(None);
            }
            return Poll::Pending;
        };
        if Pin::new(sleep).poll(cx).is_pending() {
            return Poll::Pending;
        }
        if let Some(first) = self.first.take() {
            let item = match first {
                End::Ok(value) => Ok(value),
                End::Err(code) => Err(Fail::Code(code)),
                End::Empty => {
                    self.done = true;
                    return Poll::Ready(None);
                }
                End::Panic => panic!("scripted stream panic"),
                End::Never | End::FactoryPanic => unreachable!("never yields"),
            };
            self.arm_next();
            if self.judge.verdict(&item) == Verdict::Win {
                // The stream commits to it: it gives its slot back.
                let index = self.index;
                self.log
                    .borrow_mut()
                    .slot_holders
                    .retain(|held| *held != index);
            }
            return Poll::Ready(Some(item));
        }
        let (_, item) = self
            .later
            .pop_front()
            .expect("a sleep means an item is coming");
        self.arm_next();
        match item {
            Later::Ok(value) => Poll::Ready(Some(Ok(value))),
            Later::Err(code) => Poll::Ready(Some(Err(Fail::Code(code)))),
            Later::Panic => panic!("scripted stream panic after its first item"),
        }
    }
}

impl Drop for ScriptedStream {
    fn drop(&mut self) {
        self.log
            .borrow_mut()
            .dropping(self.index, self.sleep.is_some());
    }
}

/// A call as the caller sees it: a future, or a stream.
pub(crate) trait Subject {
    /// Polls once: a future's output, or a stream's next item (`None`: its end).
    fn poll_subject(&mut self, cx: &mut Context<'_>) -> Poll<Option<Output>>;
    fn terminated(&self) -> bool;
}

pub(crate) struct FutureSubject<H>(Pin<Box<H>>);

impl<H> FutureSubject<H> {
    pub(crate) fn new(hedge: H) -> Self {
        FutureSubject(Box::pin(hedge))
    }
}

impl<H: Future<Output = Output> + FusedFuture> Subject for FutureSubject<H> {
    fn poll_subject(&mut self, cx: &mut Context<'_>) -> Poll<Option<Output>> {
        self.0.as_mut().poll(cx).map(Some)
    }

    fn terminated(&self) -> bool {
        self.0.is_terminated()
    }
}

pub(crate) struct StreamSubject<S>(Pin<Box<S>>);

impl<S> StreamSubject<S> {
    pub(crate) fn new(stream: S) -> Self {
        StreamSubject(Box::pin(stream))
    }
}

impl<S: Stream<Item = Output> + FusedStream> Subject for StreamSubject<S> {
    fn poll_subject(&mut self, cx: &mut Context<'_>) -> Poll<Option<Output>> {
        self.0.as_mut().poll_next(cx)
    }

    fn terminated(&self) -> bool {
        self.0.is_terminated()
    }
}
