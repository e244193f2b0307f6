//! [`Resuming`]: the body of a read answered past the buffer limit. When it stalls it
//! races a ranged read of the rest of the same object version, as a hedged call of the
//! core's: the stalled body is that call's original, the ranged read its hedge.

use std::future::Future;
use std::hash::Hash;
use std::ops::Range;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::{self, BoxFuture, FutureExt};
use futures_util::stream::{BoxStream, Stream, StreamExt};
use hedging::timer::Timer;
use hedging::{Hedgeable, Policy};
use object_store::path::Path;
use object_store::{Error, GetOptions, GetRange, ObjectStore, Result};

use crate::read_ahead::first_chunk;
use crate::verdict::{is_fatal, verdict};

/// How many times its mean wait per chunk so far a body may stay quiet before it stalls.
pub(crate) const PACE_ALLOWANCE: u32 = 4;

type Body = BoxStream<'static, Result<Bytes>>;

/// What one copy of a resume race yields: its next chunk (`None`: the body ended), and
/// the body to read on from.
type Next = Result<(Option<Bytes>, Body)>;

/// What a resume reads: the object, the caller's options, and the version the first
/// answer was; and the read's key, which every resume race carries.
pub(crate) struct Source<S, Q> {
    pub(crate) inner: Arc<S>,
    pub(crate) location: Path,
    pub(crate) options: GetOptions,
    pub(crate) e_tag: Option<String>,
    pub(crate) version: Option<String>,
    pub(crate) key: Q,
}

impl<S: ObjectStore, Q> Source<S, Q> {
    /// Bytes `range` of the first answer's version, up to their first chunk. A store
    /// that ignores `If-Match` and answers another version fails it all the same.
    async fn read(self: Arc<Self>, range: Range<u64>) -> Next {
        let mut options = self.options.clone();
        options.range = Some(GetRange::Bounded(range.clone()));
        options.head = false;
        if self.e_tag.is_some() {
            options.if_match.clone_from(&self.e_tag);
        }
        if self.version.is_some() {
            options.version.clone_from(&self.version);
        }
        let result = self.inner.get_opts(&self.location, options).await?;
        // Only what the first answer named is compared: a weak ETag it had is not kept.
        let changed =
            |kept: &Option<String>, answered: &Option<String>| kept.is_some() && kept != answered;
        if changed(&self.e_tag, &result.meta.e_tag) || changed(&self.version, &result.meta.version)
        {
            return Err(Error::Precondition {
                path: self.location.to_string(),
                source: format!(
                    "the object changed while it was read: version {:?} (ETag {:?}) became {:?} ({:?})",
                    self.version, self.e_tag, result.meta.version, result.meta.e_tag
                )
                .into(),
            });
        }
        if result.range != range {
            return Err(generic(format!(
                "a resume asked for bytes {range:?} and was answered {:?}",
                result.range
            )));
        }
        match first_chunk(result.into_stream()).await? {
            (Some(chunk), rest) => Ok((Some(chunk), rest)),
            (None, _) => Err(generic("a resumed body ended before its first byte".into())),
        }
    }
}

/// The error of a body that reached byte `offset` of a read ending at `end`.
pub(crate) fn ran_past(offset: u64, end: u64) -> Error {
    generic(format!(
        "the body ran past the end of the read: byte {offset} of a read ending at {end}"
    ))
}

fn generic(message: String) -> Error {
    Error::Generic {
        store: "HedgedStore",
        source: message.into(),
    }
}

/// A read's body that resumes itself when it stalls; see the crate docs (`# Resuming a
/// stalled body`) for the rule.
pub(crate) struct Resuming<S, T: Timer, Q> {
    source: Arc<Source<S, Q>>,
    policy: Policy<T>,
    state: State,
    /// The first byte of the object the caller has not received.
    offset: u64,
    /// The end of the read: its last byte, plus one.
    end: u64,
    /// Copies the read may still start: the policy's cap less every copy started so far.
    copies_left: usize,
    pace: Pace,
    /// The one sleep that times a quiet body, re-armed for each wait.
    watch: Option<Pin<Box<T::Sleep>>>,
}

enum State {
    Body(Body),
    /// A resume race: its winner, and how many resumes it started.
    Racing(BoxFuture<'static, (Next, usize)>),
    Done,
}

/// How long the caller has waited for the body's chunks so far.
#[derive(Default)]
struct Pace {
    chunks: u32,
    waited: Duration,
    /// When the wait for the next chunk began, if the caller is waiting.
    waiting_since: Option<Duration>,
}

impl Pace {
    /// How long a quiet body is let be before it is stalled, by its pace alone.
    fn allowance(&self) -> Duration {
        match self.chunks {
            0 => Duration::ZERO,
            chunks => (self.waited / chunks).saturating_mul(PACE_ALLOWANCE),
        }
    }
}

impl<S, T, Q> Resuming<S, T, Q>
where
    S: ObjectStore,
    T: Timer + Send + Sync + 'static,
    T::Sleep: Send,
    Q: Hash + Send + Sync + 'static,
{
    /// The body `rest` of the read of `range` from `source`, whose first `delivered`
    /// bytes the caller has; `copies_left` more copies may start.
    pub(crate) fn new(
        source: Source<S, Q>,
        policy: Policy<T>,
        rest: Body,
        range: Range<u64>,
        delivered: u64,
        copies_left: usize,
    ) -> Self {
        Resuming {
            source: Arc::new(source),
            policy,
            state: State::Body(rest),
            offset: range.start.saturating_add(delivered),
            end: range.end,
            copies_left,
            pace: Pace::default(),
            watch: None,
        }
    }

    /// A chunk for the caller: counted in the offset and the pace. A chunk running past
    /// the read's end ends the read with an error instead: the body is not the range
    /// its answer said.
    fn deliver(&mut self, chunk: Bytes) -> Poll<Option<Result<Bytes>>> {
        let offset = self.offset.saturating_add(chunk.len() as u64);
        if offset > self.end {
            self.state = State::Done;
            return Poll::Ready(Some(Err(ran_past(offset, self.end))));
        }
        self.offset = offset;
        if let Some(since) = self.pace.waiting_since.take() {
            let waited = self.policy.timer().now().saturating_sub(since);
            self.pace.waited = self.pace.waited.saturating_add(waited);
        }
        self.pace.chunks = self.pace.chunks.saturating_add(1);
        Poll::Ready(Some(Ok(chunk)))
    }

    /// The body ended: the read is done if it holds every byte to its end, and ends with
    /// an error if not (a body cut short is not the whole object).
    fn ended(&mut self) -> Poll<Option<Result<Bytes>>> {
        self.state = State::Done;
        if self.offset == self.end {
            return Poll::Ready(None);
        }
        Poll::Ready(Some(Err(generic(format!(
            "the body ended at byte {} of a read ending at {}",
            self.offset, self.end
        )))))
    }

    /// Whether a resume may still start: a copy is left, a byte is left to read, and the
    /// policy is on.
    fn resumable(&self) -> bool {
        self.copies_left > 0 && self.offset < self.end && self.policy.is_enabled()
    }

    /// Whether the body, pending now, has stalled: quiet for the current delay of the
    /// read's key and for [`PACE_ALLOWANCE`] times its mean wait. If not yet, the watch is
    /// armed for the moment it would be.
    fn stalled(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.resumable() {
            return false;
        }
        // `fallback` and `delay_fn` policies have no current delay: nothing to time by.
        let Some(delay) = self.policy.delay_for(&self.source.key) else {
            return false;
        };
        let timer = self.policy.timer();
        let now = timer.now();
        let since = *self.pace.waiting_since.get_or_insert(now);
        let quiet = now.saturating_sub(since);
        let threshold = delay.max(self.pace.allowance());
        let left = match threshold.checked_sub(quiet) {
            Some(left) if !left.is_zero() => left,
            _ => return true,
        };
        match &mut self.watch {
            Some(watch) => timer.reset(watch.as_mut(), left),
            None => self.watch = Some(Box::pin(timer.sleep(left))),
        }
        let watch = self.watch.as_mut().expect("the watch was just armed");
        watch.as_mut().poll(cx).is_ready()
    }

    /// Races `original`, the body's next chunk (or the error it just failed with), against
    /// ranged reads of the rest, as a hedged call with the read's key: the policy's
    /// schedule, budget and cap decide when a resume starts; a failed original starts
    /// one at once.
    fn race(&mut self, original: BoxFuture<'static, Next>) {
        let (source, range) = (Arc::clone(&self.source), self.offset..self.end);
        let mut original = Some(original);
        let copies = move || -> BoxFuture<'static, Next> {
            match original.take() {
                Some(original) => original,
                None => Arc::clone(&source).read(range.clone()).boxed(),
            }
        };
        let race = copies
            .hedged(self.policy.clone())
            .max_copies(self.copies_left.saturating_add(1))
            .classify(verdict);
        // The race borrows the key from the source it holds, as long as it runs; once it
        // ends it says how many copies it started, the stalled body (its original) one.
        let keyed = Arc::clone(&self.source);
        self.state = State::Racing(
            async move {
                let mut race = pin!(race.key(&keyed.key));
                let won = race.as_mut().await;
                (won, race.copies_started().saturating_sub(1))
            }
            .boxed(),
        );
    }
}

impl<S, T, Q> Stream for Resuming<S, T, Q>
where
    S: ObjectStore,
    T: Timer + Send + Sync + 'static,
    T::Sleep: Send,
    Q: Hash + Send + Sync + 'static,
{
    type Item = Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes>>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Done => return Poll::Ready(None),
                State::Racing(race) => {
                    let (won, resumes) = ready!(race.as_mut().poll(cx));
                    this.copies_left = this.copies_left.saturating_sub(resumes);
                    match won {
                        Ok((Some(chunk), body)) => {
                            this.state = State::Body(body);
                            return this.deliver(chunk);
                        }
                        Ok((None, _)) => return this.ended(),
                        Err(error) => {
                            this.state = State::Done;
                            return Poll::Ready(Some(Err(error)));
                        }
                    }
                }
                State::Body(body) => match body.poll_next_unpin(cx) {
                    Poll::Ready(Some(Ok(chunk))) if chunk.is_empty() => {}
                    Poll::Ready(Some(Ok(chunk))) => return this.deliver(chunk),
                    // A broken body is a failed copy: resumed at once, as the race's
                    // failure rule starts the next copy.
                    Poll::Ready(Some(Err(error))) if this.resumable() && !is_fatal(&error) => {
                        this.race(future::ready(Err(error)).boxed());
                    }
                    Poll::Ready(Some(Err(error))) => {
                        this.state = State::Done;
                        return Poll::Ready(Some(Err(error)));
                    }
                    Poll::Ready(None) => return this.ended(),
                    Poll::Pending if !this.stalled(cx) => return Poll::Pending,
                    Poll::Pending => {
                        if let State::Body(body) = std::mem::replace(&mut this.state, State::Done) {
                            this.race(first_chunk(body).boxed());
                        }
                    }
                },
            }
        }
    }
}
