//! Resuming a body that stalls midway, the rule every object-read integration shares
//! (`hedging-object-store`, `hedging-opendal`): what a copy of a read reads before it can
//! win ([`read_ahead`]), and the body of a read answered past that, which races a ranged
//! read of the rest of the same object version when it stalls ([`resuming`]).
//!
//! A body is **stalled** when, while its reader waits, it has yielded nothing for its
//! read's current delay ([`Policy::delay_for`] of the read's key) *and* for more than
//! [`PACE_ALLOWANCE`] times its mean wait per chunk so far, so a slow but steady body is
//! not. The stall is then raced as a hedged call of the core's: the body's next chunk is
//! its original, a ranged read of the rest ([`Source::read`], from the first byte the
//! caller has not received, of the version the first answer was) its hedge, due the
//! read's delay later and asking the budget. Whichever yields next continues; the other is
//! dropped. The caller gets every byte once, in order; a body that ends short of its range
//! or runs past it ends the read with an error ([`Source::not_its_range`]); a body that
//! breaks is resumed at once (the race's failure rule), unless its error is fatal
//! ([`Source::is_fatal`]). A read's copies, the first answer's and every resume, stay
//! within the policy's `max_copies`.
//!
//! An integration decides whether the first answer names a version to resume from (a
//! strong ETag, [`strong_e_tag`], or the store's version id) and, if so, hands its body to
//! [`resuming`]; if not, [`ReadAhead::replayed`] hands it on as it came.
//!
//! ```
//! use bytes::Bytes;
//! use futures_util::{stream, StreamExt};
//! use hedging_http_rules::resume::{read_ahead, Body, ReadAhead};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let body: Body<std::io::Error> =
//!     stream::iter([Ok(Bytes::from("ab")), Ok(Bytes::from("cd"))]).boxed();
//! // Four bytes, at most 1024 read ahead: the whole body, before the copy can win.
//! let ahead = read_ahead(body, 4, 1024).await?;
//! assert!(matches!(&ahead, ReadAhead::Whole(whole) if whole == "abcd"));
//! # Ok::<_, std::io::Error>(())
//! # }).unwrap();
//! ```

use std::future::Future;
use std::hash::Hash;
use std::ops::Range;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::future::{self, BoxFuture, FutureExt};
use futures_util::stream::{self, BoxStream, Stream, StreamExt};
use hedging::timer::Timer;
use hedging::{Hedgeable, Policy, Verdict};

/// How many times its mean wait per chunk so far a body may stay quiet before it stalls.
pub const PACE_ALLOWANCE: u32 = 4;

/// A read's body: its chunks as they come, or the error that broke it.
pub type Body<E> = BoxStream<'static, Result<Bytes, E>>;

/// What one copy of a resume race yields: its first chunk (`None`: the body ended), and
/// the body to read on from.
pub type Next<E> = Result<(Option<Bytes>, Body<E>), E>;

/// The ETag to hold a resume to: `tag` unless it is weak (`W/"…"`), which names an
/// equivalent object, not its bytes, and fails every `If-Match` (RFC 9110 §8.8.1).
///
/// ```
/// use hedging_http_rules::resume::strong_e_tag;
/// assert_eq!(strong_e_tag(Some("\"v1\"")), Some("\"v1\""));
/// assert_eq!(strong_e_tag(Some("W/\"v1\"")), None);
/// ```
pub fn strong_e_tag(tag: Option<&str>) -> Option<&str> {
    tag.filter(|tag| !tag.starts_with("W/"))
}

/// What a resume reads: the object a read's first answer came from, of the version it
/// was, and the read's key, which every resume race carries.
pub trait Source: Send + Sync + 'static {
    /// The store's error.
    type Error: Send + 'static;
    /// The read's key, for a policy with keys.
    type Key: Hash + Send + Sync + 'static;

    /// The read's key.
    fn key(&self) -> &Self::Key;

    /// Bytes `range` of the version the first answer was, up to their first non-empty
    /// chunk ([`first_chunk`]); an error if the object changed (the store refuses the
    /// `If-Match`, or answers another ETag or version) or the answer is not that range.
    fn read(self: Arc<Self>, range: Range<u64>) -> BoxFuture<'static, Next<Self::Error>>;

    /// Whether another copy would fail the same way: such an error ends the read.
    fn is_fatal(error: &Self::Error) -> bool;

    /// The error of a body that is not its range: `message` says how.
    fn not_its_range(&self, message: String) -> Self::Error;
}

/// What a copy of a read reads before it can win: the whole body when it is small, else
/// its first bytes and the stream of the rest.
pub enum ReadAhead<E> {
    /// The whole body, read to its end.
    Whole(Bytes),
    /// The body's first non-empty chunk, and the rest as it comes.
    Started {
        /// The first non-empty chunk.
        first: Bytes,
        /// The rest of the body.
        rest: Body<E>,
    },
}

impl<E> std::fmt::Debug for ReadAhead<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadAhead::Whole(whole) => f.debug_tuple("Whole").field(&whole.len()).finish(),
            ReadAhead::Started { first, .. } => f
                .debug_struct("Started")
                .field("first", &first.len())
                .finish_non_exhaustive(),
        }
    }
}

impl<E: Send + 'static> ReadAhead<E> {
    /// The body read so far, replayed, and the rest of it as it comes.
    pub fn replayed(self) -> Body<E> {
        match self {
            ReadAhead::Whole(whole) if whole.is_empty() => stream::empty().boxed(),
            ReadAhead::Whole(whole) => stream::once(async move { Ok(whole) }).boxed(),
            ReadAhead::Started { first, rest } => {
                stream::once(async move { Ok(first) }).chain(rest).boxed()
            }
        }
    }
}

/// Reads `body`, an answer of `answer_len` bytes, to its end if that is at most `limit`
/// bytes, else up to its first non-empty chunk. A body of one chunk is kept as it came;
/// only a second chunk makes a copy.
pub async fn read_ahead<E>(
    mut body: Body<E>,
    answer_len: u64,
    limit: u64,
) -> Result<ReadAhead<E>, E> {
    if answer_len > limit {
        return Ok(match first_chunk(body).await? {
            (Some(first), rest) => ReadAhead::Started { first, rest },
            (None, _) => ReadAhead::Whole(Bytes::new()),
        });
    }
    let (mut first, mut joined) = (Bytes::new(), None::<BytesMut>);
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        match &mut joined {
            Some(joined) => joined.extend_from_slice(&chunk),
            None if first.is_empty() => first = chunk,
            None => {
                // The length may overstate a HEAD's (empty) body; never reserve more
                // than the limit.
                let mut both = BytesMut::with_capacity(answer_len.min(limit) as usize);
                both.extend_from_slice(&first);
                both.extend_from_slice(&chunk);
                joined = Some(both);
            }
        }
    }
    Ok(ReadAhead::Whole(joined.map_or(first, BytesMut::freeze)))
}

/// The first non-empty chunk of `body`, and the body to read on from; `None` if it ended
/// first.
pub async fn first_chunk<E>(mut body: Body<E>) -> Next<E> {
    loop {
        match body.next().await {
            Some(Ok(chunk)) if chunk.is_empty() => continue,
            Some(Ok(chunk)) => return Ok((Some(chunk), body)),
            Some(Err(error)) => return Err(error),
            None => return Ok((None, body)),
        }
    }
}

/// The caller's body of a read of bytes `range` whose winner yielded `first` and streams
/// `rest`: `first`, then `rest`, resumed from `source` (by races of `policy`) when it
/// stalls or breaks; `copies_left` more copies may start. A `first` running past the
/// range's end is an error at once.
pub fn resuming<S, T>(
    source: S,
    policy: Policy<T>,
    first: Bytes,
    rest: Body<S::Error>,
    range: Range<u64>,
    copies_left: usize,
) -> Body<S::Error>
where
    S: Source,
    T: Timer + Send + Sync + 'static,
    T::Sleep: Send,
{
    let delivered = first.len() as u64;
    let offset = range.start.saturating_add(delivered);
    if offset > range.end {
        let error = source.not_its_range(ran_past(offset, range.end));
        return stream::once(async move { Err(error) }).boxed();
    }
    let body = Resuming {
        source: Arc::new(source),
        policy,
        state: State::Body(rest),
        offset,
        end: range.end,
        copies_left,
        pace: Pace::default(),
        watch: None,
    };
    stream::once(async move { Ok(first) }).chain(body).boxed()
}

/// Says how a body reached byte `offset` of a read ending at `end`.
fn ran_past(offset: u64, end: u64) -> String {
    format!("the body ran past the end of the read: byte {offset} of a read ending at {end}")
}

/// A read's body that resumes itself when it stalls; see the [module docs](self).
struct Resuming<S: Source, T: Timer> {
    source: Arc<S>,
    policy: Policy<T>,
    state: State<S::Error>,
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

enum State<E> {
    Body(Body<E>),
    /// A race of the stalled body against resumes; it ends with the resumes it started.
    Racing(BoxFuture<'static, (Next<E>, usize)>),
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

/// The verdict on one copy of a read: a win, an error another copy would repeat
/// (`is_fatal`: the store's rule), or an error another copy may not. The object_store
/// and OpenDAL integrations classify their reads by it, and a resume race its copies.
pub fn verdict_by<V, E>(result: &Result<V, E>, is_fatal: impl Fn(&E) -> bool) -> Verdict {
    match result {
        Ok(_) => Verdict::Win,
        Err(error) if is_fatal(error) => Verdict::Fatal,
        Err(_) => Verdict::Retry,
    }
}

/// The verdict on one copy of a resume race, by its source's rule.
fn verdict<S: Source>(result: &Next<S::Error>) -> Verdict {
    verdict_by(result, S::is_fatal)
}

impl<S, T> Resuming<S, T>
where
    S: Source,
    T: Timer + Send + Sync + 'static,
    T::Sleep: Send,
{
    /// A chunk for the caller: counted in the offset and the pace. A chunk running past
    /// the read's end ends the read with an error instead: the body is not the range
    /// its answer said.
    fn deliver(&mut self, chunk: Bytes) -> Poll<Option<Result<Bytes, S::Error>>> {
        let offset = self.offset.saturating_add(chunk.len() as u64);
        if offset > self.end {
            self.state = State::Done;
            let error = self.source.not_its_range(ran_past(offset, self.end));
            return Poll::Ready(Some(Err(error)));
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
    fn ended(&mut self) -> Poll<Option<Result<Bytes, S::Error>>> {
        self.state = State::Done;
        if self.offset == self.end {
            return Poll::Ready(None);
        }
        let message = format!(
            "the body ended at byte {} of a read ending at {}",
            self.offset, self.end
        );
        Poll::Ready(Some(Err(self.source.not_its_range(message))))
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
        let Some(delay) = self.policy.delay_for(self.source.key()) else {
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
    fn race(&mut self, original: BoxFuture<'static, Next<S::Error>>) {
        let (source, range) = (Arc::clone(&self.source), self.offset..self.end);
        let mut original = Some(original);
        let copies = move || -> BoxFuture<'static, Next<S::Error>> {
            match original.take() {
                Some(original) => original,
                None => Arc::clone(&source).read(range.clone()),
            }
        };
        let race = copies
            .hedged(self.policy.clone())
            .max_copies(self.copies_left.saturating_add(1))
            .classify(verdict::<S>);
        // The race borrows the key from the source it holds, as long as it runs.
        let keyed = Arc::clone(&self.source);
        // Pinned here, so that the call can say how many copies it started once it ended:
        // all but its first (the stalled body) were resumes.
        self.state = State::Racing(
            async move {
                let mut race = pin!(race.key(keyed.key()));
                let won = race.as_mut().await;
                (won, race.copies_started().saturating_sub(1))
            }
            .boxed(),
        );
    }
}

impl<S, T> Stream for Resuming<S, T>
where
    S: Source,
    T: Timer + Send + Sync + 'static,
    T::Sleep: Send,
{
    type Item = Result<Bytes, S::Error>;

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, S::Error>>> {
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
                    Poll::Ready(Some(Err(error))) if this.resumable() && !S::is_fatal(&error) => {
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
