//! [`Probe`]: a tower service that counts the calls and answers passing through it, so a
//! test below a hedging layer knows when the race has seen a copy's answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::watch;

use crate::log::HANG_GUARD;

/// Wraps a service; clones count into one tally. Its answers count where the copy's
/// future finishes, inside the poll of whatever polls it: on a current-thread runtime,
/// a test that saw the count go up runs after that poll returned.
#[derive(Clone, Debug)]
pub struct Probe<S> {
    inner: S,
    tally: Arc<watch::Sender<Tally>>,
}

/// What a [`Probe`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Calls made through it.
    pub calls: usize,
    /// Calls whose future finished (a response or an error).
    pub answers: usize,
}

impl<S> Probe<S> {
    /// Counts the calls to `inner`.
    pub fn new(inner: S) -> Self {
        Probe {
            inner,
            tally: Arc::new(watch::Sender::new(Tally::default())),
        }
    }

    /// What it counted so far.
    pub fn tally(&self) -> Tally {
        *self.tally.borrow()
    }

    /// A handle that reads this probe's tally, for after the probe moved into a stack.
    pub fn handle(&self) -> ProbeHandle {
        ProbeHandle {
            tally: Arc::clone(&self.tally),
        }
    }
}

/// Reads a [`Probe`]'s tally.
#[derive(Clone, Debug)]
pub struct ProbeHandle {
    tally: Arc<watch::Sender<Tally>>,
}

impl ProbeHandle {
    /// What it counted so far.
    pub fn tally(&self) -> Tally {
        *self.tally.borrow()
    }

    /// Waits until `n` calls through the probe finished.
    pub async fn until_answered(&self, n: usize) {
        let mut changes = self.tally.subscribe();
        let waited = tokio::time::timeout(HANG_GUARD, changes.wait_for(|t| t.answers >= n));
        assert!(waited.await.is_ok(), "not {n} answers after {HANG_GUARD:?}");
    }
}

impl<S: tower_service::Service<R>, R> tower_service::Service<R> for Probe<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = Counted<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.tally.send_modify(|t| t.calls += 1);
        Counted {
            future: Box::pin(self.inner.call(request)),
            tally: Arc::clone(&self.tally),
        }
    }
}

/// The future of one call through a [`Probe`].
pub struct Counted<F> {
    future: Pin<Box<F>>,
    tally: Arc<watch::Sender<Tally>>,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let output = std::task::ready!(self.future.as_mut().poll(cx));
        self.tally.send_modify(|t| t.answers += 1);
        Poll::Ready(output)
    }
}

impl<F> std::fmt::Debug for Counted<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counted").finish_non_exhaustive()
    }
}
