//! [`HedgeStream`]: races copies of a streaming request until one yields a winning first
//! item, then follows that copy alone.

use core::fmt;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use futures_core::{FusedStream, Stream};
use pin_project::pin_project;

use crate::attempt::{Attempt, ByResult, Classify, Verdict, When};
use crate::copies::{Call, CallParts, Copier, Poller, RaceEntry};
use crate::factory::StreamFactory;
use crate::key::{CallKey, NoKey};
use crate::policy::AsPolicy;
use crate::race::{End, Phase};
use crate::timeout::{Deadlines, Elapsed, IntoTimeouts, NoTimeouts, Timeouts};

/// A hedged stream: races copies of a streaming request by the policy's schedule,
/// budget and verdicts until one copy yields a winning first item, then commits to it.
///
/// Made by [`HedgeableStream::hedged_stream`](crate::HedgeableStream::hedged_stream).
/// At the commit every other copy is dropped, and the stream yields the winner's first
/// item and then its later items as they come, ending when the winner ends. Only first
/// items are judged (by [`when`](HedgeStream::when) or [`classify`](HedgeStream::classify));
/// an item after the commit is never classified.
///
/// A copy whose first item fails, or that ends with no item, is a failed copy. A `Fatal`
/// first item is yielded and the stream ends. If every copy fails, the lowest-index error
/// is yielded and the stream ends; copies that ended empty have no error, so with no error
/// at all the stream ends without an item.
///
/// ```
/// use std::time::Duration;
/// use futures::{stream, StreamExt};
/// use hedging::{Attempt, HedgeableStream, Policy};
/// # futures::executor::block_on(async {
/// let policy = Policy::builder().max_copies(2).delay(Duration::from_millis(5)).build();
/// // Copy k streams the rows of replica k.
/// let rows: Vec<_> = (|a: Attempt| stream::iter([Ok::<_, ()>(a.index() * 10), Ok(a.index() * 10 + 1)]))
///     .hedged_stream(&policy)
///     .collect()
///     .await;
/// assert_eq!(rows, [Ok(0), Ok(1)]); // the original's first row won: it alone is followed
/// assert_eq!(policy.stats().wins, 1);
/// # });
/// ```
///
/// Everything [`Hedge`](crate::Hedge) guarantees holds until the commit: no spawn, one
/// timer, no lost wake-ups, drop = cancel, the same stats. The win is counted at the
/// commit; dropping the stream after the commit is not a cancellation. Timeouts apply
/// until the commit. Under a capped [`Budget`](crate::Budget), the winner gives back its
/// `max_outstanding` slot at the commit: from then on it is the call's one copy.
///
/// # Panics
///
/// As [`Hedge`](crate::Hedge), until the commit (`catch_unwind` covers copies racing for
/// their first item). A panic in the committed copy unwinds through `poll_next`.
#[pin_project]
#[must_use = "streams do nothing unless polled"]
pub struct HedgeStream<F: StreamFactory, P: AsPolicy, C = ByResult, D = NoTimeouts, K = NoKey> {
    factory: F,
    classify: C,
    deadlines: D,
    key: K,
    #[pin]
    call: Call<P, F::Stream, F::Ok, F::Error>,
    /// The copy the stream committed to, once one won.
    committed: Option<usize>,
}

impl<F: StreamFactory, P: AsPolicy> HedgeStream<F, P> {
    pub(crate) fn new(factory: F, policy: P) -> Self {
        HedgeStream {
            factory,
            classify: ByResult,
            deadlines: NoTimeouts,
            key: NoKey,
            call: Call::new(policy),
            committed: None,
        }
    }
}

crate::call_methods::call_methods!(
    HedgeStream,
    StreamFactory,
    "each copy's first item",
    committed
);

impl<F, P, C, D, K> Stream for HedgeStream<F, P, C, D, K>
where
    F: StreamFactory,
    P: AsPolicy,
    C: Classify<F::Ok, F::Error>,
    D: Deadlines<F::Error>,
    K: CallKey,
{
    type Item = Result<F::Ok, F::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let CallParts { policy, mut state } = this.call.project();
        if let Some(winner) = *this.committed {
            // Committed: the winner's items, as they come.
            let Some(stream) = state.as_mut().copy(winner) else {
                return Poll::Ready(None);
            };
            let item = core::task::ready!(stream.poll_next(cx));
            if item.is_none() {
                state.clear();
            }
            return Poll::Ready(item);
        }
        let settings = policy.as_policy().settings();
        let mut copier = StreamCopier(this.factory);
        let entry = match state.phase {
            Phase::Running => RaceEntry::Running,
            // Ended without a winner.
            Phase::Done => return Poll::Ready(None),
            Phase::Idle => match state.as_mut().launch_original(&mut copier, settings, cx) {
                Poll::Pending => RaceEntry::Pending,
                Poll::Ready(finished) => {
                    let verdict = state
                        .as_mut()
                        .judge_original::<StreamCopier<'_, F>, _>(&finished, this.classify);
                    RaceEntry::Finished(finished, verdict)
                }
            },
        };
        let work = (copier, this.classify);
        let mut poller = Poller::new(work, this.deadlines, settings, cx, &entry);
        let ran = state.run(&mut poller, entry, this.key);
        let (end, stays) = core::task::ready!(ran);
        *this.committed = stays;
        Poll::Ready(item(end))
    }
}

/// What the stream yields when its race ends: the winner's first item, or the failure.
fn item<T, E>(end: End<T, E>) -> Option<Result<T, E>> {
    match end {
        End::Won { result, .. } | End::Failed(result) => Some(result),
        End::Empty => None,
        #[cfg(feature = "std")]
        End::Panicked(panic) => std::panic::resume_unwind(panic),
    }
}

/// The copies of a [`HedgeStream`] are streams, racing for their first item.
struct StreamCopier<'f, F>(&'f mut F);

impl<F: StreamFactory> Copier for StreamCopier<'_, F> {
    type Copy = F::Stream;
    type Ok = F::Ok;
    type Error = F::Error;
    const KEEP_WINNER: bool = true;
    const MAY_DECLINE: bool = F::MAY_DECLINE;

    #[inline]
    fn make(&mut self, attempt: Attempt) -> Option<F::Stream> {
        self.0.make(attempt)
    }

    #[inline]
    fn poll_copy(
        copy: Pin<&mut F::Stream>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<F::Ok, F::Error>>> {
        copy.poll_next(cx)
    }
}

impl<F: StreamFactory, P: AsPolicy, C, D, K> FusedStream for HedgeStream<F, P, C, D, K>
where
    Self: Stream,
{
    fn is_terminated(&self) -> bool {
        match self.committed {
            Some(winner) => !self.call.state.holds(winner),
            None => self.call.state.phase == Phase::Done,
        }
    }
}

impl<F: StreamFactory, P: AsPolicy, C, D, K> fmt::Debug for HedgeStream<F, P, C, D, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = &self.call.state;
        f.debug_struct("HedgeStream")
            .field("phase", &state.phase)
            .field("max_copies", &state.max_copies())
            .field("launched", &state.launched())
            .field("committed", &self.committed)
            .finish_non_exhaustive()
    }
}
