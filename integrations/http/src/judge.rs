//! [`Judge`]: each copy's result paired with its verdict, decided where the copy ends, so
//! a classifier may hold state (the gRPC non-fatal codes, a user's closure) and the
//! core's race reads the verdict through a plain function.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use hedging::{Classify, Verdict};
use pin_project::pin_project;
use tower_service::Service;

/// A copy's response or error with the verdict its classifier gave it.
#[derive(Debug)]
pub(crate) struct Judged<T> {
    pub(crate) value: T,
    pub(crate) verdict: Verdict,
}

/// How the core's race reads a copy's verdict: the one [`Judge`] attached.
pub(crate) type ReadVerdict<R, E> = fn(&Result<Judged<R>, Judged<E>>) -> Verdict;

pub(crate) fn read_verdict<R, E>(result: &Result<Judged<R>, Judged<E>>) -> Verdict {
    match result {
        Ok(judged) => judged.verdict,
        Err(judged) => judged.verdict,
    }
}

/// Unwraps the race's output back into the inner service's own.
pub(crate) fn unjudge<R, E>(result: Result<Judged<R>, Judged<E>>) -> Result<R, E> {
    result
        .map(|judged| judged.value)
        .map_err(|judged| judged.value)
}

/// Wraps the inner service: every response and error leaves with its verdict.
#[derive(Clone, Debug)]
pub(crate) struct Judge<S, K> {
    pub(crate) inner: S,
    pub(crate) classify: K,
}

impl<S, K, Req> Service<Req> for Judge<S, K>
where
    S: Service<Req>,
    K: Classify<S::Response, S::Error> + Clone,
{
    type Response = Judged<S::Response>;
    type Error = Judged<S::Error>;
    type Future = JudgeFuture<S::Future, K>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // A hedge whose service cannot get ready failed as a copy, judged like any error.
        match self.inner.poll_ready(cx) {
            Poll::Ready(Err(error)) => match judge(&mut self.classify, Err(error)) {
                Err(judged) => Poll::Ready(Err(judged)),
                Ok(_) => unreachable!("an error is judged as an error"),
            },
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn call(&mut self, request: Req) -> Self::Future {
        JudgeFuture {
            future: self.inner.call(request),
            classify: self.classify.clone(),
        }
    }
}

fn judge<R, E, K: Classify<R, E>>(
    classify: &mut K,
    result: Result<R, E>,
) -> Result<Judged<R>, Judged<E>> {
    let verdict = classify.verdict(&result);
    match result {
        Ok(value) => Ok(Judged { value, verdict }),
        Err(value) => Err(Judged { value, verdict }),
    }
}

/// The future of one judged copy.
#[pin_project]
#[derive(Debug)]
#[must_use = "futures do nothing unless you `.await` or poll them"]
pub(crate) struct JudgeFuture<F, K> {
    #[pin]
    future: F,
    classify: K,
}

impl<F, K, R, E> Future for JudgeFuture<F, K>
where
    F: Future<Output = Result<R, E>>,
    K: Classify<R, E>,
{
    type Output = Result<Judged<R>, Judged<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = std::task::ready!(this.future.poll(cx));
        Poll::Ready(judge(this.classify, result))
    }
}
