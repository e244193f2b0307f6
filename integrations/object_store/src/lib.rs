//! Hedged reads for [`object_store`]: when a GET, HEAD or range read to S3, GCS, Azure
//! or any HTTP store has not answered within a delay, send a copy and keep the first.
//!
//! Object stores have a long tail: most reads answer in milliseconds, a few wait out a
//! slow disk, a busy partition or a lost packet. [`HedgedStore`] wraps any
//! [`ObjectStore`] and races copies of its reads by a [`hedging::Policy`]; every other
//! method (writes, lists, deletes, copies) goes to the inner store untouched.
//!
//! ```
//! use std::time::Duration;
//! use hedging_object_store::hedging::{timer::TokioTimer, Policy}; // the core, re-exported
//! use hedging_object_store::HedgedStore;
//! use object_store::{memory::InMemory, path::Path, ObjectStoreExt};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let policy = Policy::builder()
//!     .name("object-reads")
//!     .delay(Duration::from_millis(50)) // near the store's p95
//!     .timer(TokioTimer::new())
//!     .build();
//! let store = HedgedStore::new(InMemory::new(), policy); // an AmazonS3, a GoogleCloudStorage...
//!
//! let path = Path::from("tables/part-0.parquet");
//! store.put(&path, vec![7; 4096].into()).await?;
//! let footer = store.get_range(&path, 4088..4096).await?; // hedged through its last byte
//! assert_eq!(footer.len(), 8);
//! # Ok::<_, object_store::Error>(())
//! # }).unwrap();
//! ```
//!
//! # What is hedged
//!
//! | read | hedged |
//! |---|---|
//! | [`head`](object_store::ObjectStoreExt::head) | through the answer |
//! | [`get_range`](object_store::ObjectStoreExt::get_range), [`get_opts`](ObjectStore::get_opts), [`get`](object_store::ObjectStoreExt::get) answering at most [`buffer_limit`](HedgedStore::buffer_limit) bytes (1 MiB by default) | through the last byte: each copy reads its whole body, so a body that stalls halfway is hedged too |
//! | the same, answering more than the limit | to the first byte, then through the last byte by [resuming](#resuming-a-stalled-body): a body that stalls is raced by a ranged read of the rest of the same object version. With [`resume_stalls(false)`](HedgedStore::resume_stalls), to the first byte only |
//! | [`get_ranges`](ObjectStore::get_ranges) | each range (as `object_store` coalesces them) a read of its own, as above |
//! | writes, lists, deletes, copies, renames | not at all: forwarded to the inner store |
//!
//! Each read is a call, counted in the policy's `calls`. Every other method is outside
//! the store's scope: forwarded as it is, and counted once per call of the method in
//! the policy's [`out_of_scope`](hedging::Stats::out_of_scope) (however many requests
//! the inner store makes for it: a multipart upload's parts, a list's pages), so
//! `hedges / calls` is the extra requests per call (a read, or the resume race of a
//! stalled read). The rule is every integration's:
//! [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
//!
//! A read answering more than the limit is not buffered: once its first bytes arrive it
//! is committed to one copy, whose body streams to the caller as it comes. Whether a
//! read is buffered is decided by the size of the answer each copy receives (its byte
//! range), so a whole-object `get` of a small object is buffered too. While racing, every
//! copy in flight may hold up to the limit in memory.
//!
//! # Resuming a stalled body
//!
//! The body of a read answering more than the limit is watched while its reader waits
//! for it. It is **stalled** when it has yielded nothing for its read's current delay
//! ([`delay_for`](Policy::delay_for) of the read's key, the policy's
//! [`delay`](Policy::delay) without keys) *and* for more than 4 times its mean wait per
//! chunk so far (the reader's waits, from asking for a chunk to getting it, on the
//! policy's timer, over every copy of the read; before its second chunk a body has no
//! pace, and the delay alone decides). So a body that is slow but steady is not
//! stalled, and a reader that is slower than its body never waits at all.
//!
//! A stall is raced as a hedged call of its own, by the policy: the stalled body's next
//! chunk is its original, and a ranged read of the rest is its hedge, from the first
//! byte the caller has not received, with `If-Match` set to the first answer's ETag (and
//! the first answer's version, where the store has versions). The hedge starts the
//! read's delay (its key's, on a policy with keys) after the stall unless the body
//! yields first, and asks the budget;
//! whichever yields next continues, the other is dropped (over HTTP/1.1, its connection
//! closed). The caller gets every byte once, in order, in the chunks the copy it came
//! from yielded; each copy holds at most the one chunk it is yielding.
//!
//! - An object that changed meanwhile ends the read with
//!   [`Error::Precondition`], never with bytes of two
//!   versions: the store refuses the `If-Match`, or, where a store ignores it, the
//!   resume's ETag or version differs from the first answer's.
//! - A read's copies, the first answer's and every resume, stay within the policy's
//!   `max_copies`: once they are spent, the body is no longer watched. A resume the
//!   budget refuses leaves the body as it was, racing alone until it yields.
//! - Each race is counted as a call: the resume in `hedges`, in `hedge_wins` if it won.
//! - A body that breaks while it streams (an error, such as a connection closed halfway)
//!   is a failed copy: a resume of the rest starts at once, as the race's failure rule
//!   starts the next copy, within the same cap and budget. An error another copy would
//!   repeat (`Precondition`, `NotFound`, …), or one with no copy left, ends the read.
//! - A resumed body is held to its range: one that ends before the read's last byte, or
//!   runs past it, ends the read with an error (`Error::Generic`), never passing as the
//!   whole range. This holds for the first answer's body as for a resume's.
//! - An answer with neither a strong ETag nor a version is not resumed (nothing says the
//!   rest would be the same bytes: a weak ETag `W/"…"` names an equivalent object, not
//!   its bytes, and fails every `If-Match`), nor is a read under a policy without a
//!   current delay (`fallback`, `delay_fn`) or [disabled](Policy::set_enabled). With a
//!   weak ETag and a version, the version alone holds the resume to the object.
//!
//! The watch is one sleep of the policy's timer per read, re-armed for each wait; the
//! race is the core's. A read whose body flows is one call: no race is made for it, and
//! an adaptive delay learns from reads, not from the gaps between chunks.
//!
//! # Verdicts
//!
//! Errors that another copy would only repeat end the read at once and are returned:
//! `NotFound`, `Precondition`, `NotModified`, `PermissionDenied`, `Unauthenticated`,
//! `InvalidPath`, and the errors that say the store cannot do the request at all
//! (`NotSupported`, `NotImplemented`, `UnknownConfigurationKey`, `AlreadyExists`), and a
//! `416 Range Not Satisfiable` (a range the object does not hold, which object_store
//! reports as `Generic`, its status read from the error's text). Any other error (a
//! `Generic` transport or server error, an error in the body) fails that copy only: the
//! race goes on, and if every copy fails the first copy's error is returned. A server's pushback (a 503 with `Retry-After`) is such an error: no copy is
//! held for it, so the next copy starts at once if one may, and on the last copy the
//! read ends at once.
//!
//! # A delay per size of read
//!
//! A HEAD, a 64 KiB range and a 1 GiB scan have different latencies; an
//! [adaptive delay](hedging::PolicyBuilder::adaptive_delay) fed by all three would hedge
//! the small reads too late and the large ones too early. On a policy with
//! [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), each read is keyed by its
//! [`SizeClass`] (the bytes it asks for, rounded up to a power of two; a `head` class
//! `0`), so one store learns a delay per class: `policy.delay_for(&4096_u64)` is the one
//! a 4 KiB read gets now. [`key_by`](HedgedStore::key_by) keys otherwise (by table, by
//! prefix). Stores that want another quantile or buffer limit still take a store and
//! policy each, over one shared inner store (`Arc<S>` is an `ObjectStore` too):
//!
//! ```
//! # use std::sync::Arc;
//! # use hedging::{timer::TokioTimer, Policy};
//! # use hedging_object_store::HedgedStore;
//! # use object_store::memory::InMemory;
//! let policy = |name, quantile| {
//!     Policy::builder()
//!         .name(name)
//!         .adaptive_delay(quantile)
//!         .adaptive_keys(64) // a delay per size class
//!         .timer(TokioTimer::new())
//!         .build()
//! };
//! let s3 = Arc::new(InMemory::new()); // shared connection pool and credentials
//! let reads = HedgedStore::new(Arc::clone(&s3), policy("reads", 0.95));
//! let scans = HedgedStore::new(s3, policy("scans", 0.99)).buffer_limit(0);
//! ```
//!
//! Hedged reads are safe to send twice; writes are never hedged. Stores with their own
//! retries (the cloud stores' `RetryConfig`) retry inside each copy: keep their retry
//! timeout above the hedge delay, or a copy gives up before its hedge could win.
//!
//! # Features
//!
//! - `tokio`: `hedging::timer::TokioTimer`, through the [`hedging`] re-export: the
//!   timer for the cloud stores, which run on tokio, so that a test's paused tokio clock
//!   drives the hedges (the default `FuturesTimer` follows the real clock).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

use std::fmt;
use std::ops::Range;
use std::pin::pin;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use hedging::timer::Timer;
use hedging::{Hedgeable, Policy};
use object_store::path::Path;
use object_store::{
    coalesce_ranges, CopyOptions, Error, GetOptions, GetResult, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, RenameOptions, Result, OBJECT_STORE_COALESCE_DEFAULT,
};

use hedging_http_rules::resume::{self as rule, Body};

use crate::read_ahead::ReadAhead;
use crate::resume::Source;
use crate::verdict::verdict;

mod key;
mod read_ahead;
mod resume;
mod verdict;

pub use crate::key::{ReadKey, SizeClass};

/// The core crate, re-exported: name [`Policy`], the timers and [`Stats`](hedging::Stats)
/// through it (`hedging_object_store::hedging::Policy`), and they are always the version
/// this crate was built with.
pub use hedging;

/// The default [`HedgedStore::buffer_limit`]: 1 MiB.
pub const DEFAULT_BUFFER_LIMIT: usize = 1 << 20;

/// An [`ObjectStore`] whose reads are hedged by a [`Policy`]; see the
/// [crate docs](crate) for what is hedged and how.
///
/// ```
/// # use hedging::{timer::TokioTimer, Policy};
/// # use hedging_object_store::HedgedStore;
/// # use object_store::memory::InMemory;
/// let policy = Policy::builder().timer(TokioTimer::new()).build();
/// let store = HedgedStore::new(InMemory::new(), policy).buffer_limit(256 * 1024);
/// assert_eq!(store.to_string(), "HedgedStore(InMemory)");
/// ```
///
/// `K` is what each read is keyed by, for a policy with
/// [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): its [`SizeClass`] unless
/// [`key_by`](Self::key_by) says otherwise.
pub struct HedgedStore<S, T, K = SizeClass> {
    inner: Arc<S>,
    policy: Policy<T>,
    buffer_limit: usize,
    resume_stalls: bool,
    key: K,
}

impl<S, T> HedgedStore<S, T> {
    /// Hedges the reads of `inner` by `policy`, buffering answers of up to 1 MiB, each
    /// read keyed by its [`SizeClass`].
    pub fn new(inner: S, policy: Policy<T>) -> Self {
        HedgedStore {
            inner: Arc::new(inner),
            policy,
            buffer_limit: DEFAULT_BUFFER_LIMIT,
            resume_stalls: true,
            key: SizeClass,
        }
    }
}

impl<S, T, K> HedgedStore<S, T, K> {
    /// Keys each read by `key(location, options)` instead of its [`SizeClass`]: with a
    /// policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), reads of one
    /// key hedge at a delay learnt from their own latencies, which
    /// [`Policy::delay_for`] tells with the same value. `key` gets the read's location
    /// and the options the caller gave (a `head` has `options.head`; each coalesced range
    /// of `get_ranges`, its own range), and returns any owned [`Hash`](core::hash::Hash)
    /// value: a `String`, a `u64`, a `&'static str`, a tuple. A resume of the read's
    /// stalled body carries the same key.
    ///
    /// `key` is called once per read, also on a policy without keys (where its key is
    /// never hashed and changes nothing): keep it cheap.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use hedging::{timer::TokioTimer, Policy};
    /// # use hedging_object_store::HedgedStore;
    /// # use object_store::memory::InMemory;
    /// let policy = Policy::builder()
    ///     .adaptive_delay(0.95)
    ///     .adaptive_keys(16)
    ///     .timer(TokioTimer::new())
    ///     .build();
    /// // One delay per table, whatever the size of the read.
    /// let store = HedgedStore::new(InMemory::new(), policy).key_by(|location, _options| {
    ///     location.parts().next().map(|table| table.as_ref().to_owned())
    /// });
    /// let delay = store.policy().delay_for(&Some("orders".to_owned()));
    /// assert_eq!(delay, Some(Duration::from_millis(10))); // the fixed delay, until it learns
    /// ```
    pub fn key_by<F, Q>(self, key: F) -> HedgedStore<S, T, F>
    where
        F: Fn(&Path, &GetOptions) -> Q + Send + Sync + 'static,
        Q: core::hash::Hash + Send + Sync + 'static,
    {
        HedgedStore {
            inner: self.inner,
            policy: self.policy,
            buffer_limit: self.buffer_limit,
            resume_stalls: self.resume_stalls,
            key,
        }
    }

    /// The largest answer, in bytes, that each copy reads to its end before it can win,
    /// so that a stall anywhere in its body is hedged. Larger answers are hedged to their
    /// first byte. Default 1 MiB; `0` hedges every read with a body to its first byte
    /// (empty answers and HEADs are always read to their end).
    pub fn buffer_limit(mut self, bytes: usize) -> Self {
        self.buffer_limit = bytes;
        self
    }

    /// Whether the body of a read answering more than the buffer limit is resumed when
    /// it stalls: a ranged read of the rest of the same object version races the stalled
    /// body, as a hedge (see the [crate docs](crate#resuming-a-stalled-body)). Default
    /// `true`; `false` hedges such reads to their first byte only.
    pub fn resume_stalls(mut self, resume: bool) -> Self {
        self.resume_stalls = resume;
        self
    }

    /// The inner store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The policy the reads are hedged by; its [`stats`](Policy::stats) count them.
    pub fn policy(&self) -> &Policy<T> {
        &self.policy
    }
}

impl<S: fmt::Display, T, K> fmt::Display for HedgedStore<S, T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HedgedStore({})", self.inner)
    }
}

/// Whatever the key is: a closure need not be `Debug`.
impl<S: fmt::Debug, T: fmt::Debug, K> fmt::Debug for HedgedStore<S, T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgedStore")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .field("buffer_limit", &self.buffer_limit)
            .field("resume_stalls", &self.resume_stalls)
            .finish_non_exhaustive()
    }
}

impl<S, T, K> HedgedStore<S, T, K>
where
    S: ObjectStore,
    K: ReadKey,
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
{
    /// The `body` of `read`: a body under way, its first chunk delivered, the rest resumed
    /// (by races keyed by `key`) when it stalls; as it came if it is whole, if stalls are
    /// not resumed, or if the answer names no version to resume from.
    fn resuming(
        &self,
        location: &Path,
        options: GetOptions,
        key: K::Key,
        read: &ReadAhead,
        body: rule::ReadAhead<Error>,
        copies_left: usize,
    ) -> Body<Error> {
        let e_tag = rule::strong_e_tag(read.meta.e_tag.as_deref()).map(str::to_owned);
        let version = read.meta.version.clone();
        let resumable = self.resume_stalls && (e_tag.is_some() || version.is_some());
        let (first, rest) = match body {
            rule::ReadAhead::Started { first, rest } if resumable => (first, rest),
            body => return body.replayed(),
        };
        let source = Source {
            inner: Arc::clone(&self.inner),
            location: location.clone(),
            options,
            e_tag,
            version,
            key,
        };
        let range = read.range.clone();
        let policy = self.policy.clone();
        rule::resuming(source, policy, first, rest, range, copies_left)
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S, T, K> ObjectStore for HedgedStore<S, T, K>
where
    S: ObjectStore,
    K: ReadKey,
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
{
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.policy.count_out_of_scope();
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.policy.count_out_of_scope();
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let limit = u64::try_from(self.buffer_limit).unwrap_or(u64::MAX);
        let head = options.head;
        // Hashed only if the read makes its race, on a policy with keys.
        let key = self.key.key(location, &options);
        let inner = &self.inner;
        let call = (|| {
            let options = options.clone();
            async move {
                let result = inner.get_opts(location, options).await?;
                ReadAhead::read(result, limit, head).await
            }
        })
        .hedged(&self.policy)
        .classify(verdict)
        .key(&key);
        // Pinned here, so that the call can say how many copies it started once it won.
        let (mut read, copies_started) = {
            let mut call = pin!(call);
            let read = call.as_mut().await?;
            (read, call.copies_started())
        };
        let body = read.take_body();
        let copies_left = self.policy.max_copies().saturating_sub(copies_started);
        let stream = self.resuming(location, options, key, &read, body, copies_left);
        Ok(read.into_result(stream))
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        // Each coalesced range is a read of its own, hedged (and resumed) as any other,
        // and keyed by its own range.
        let read = |range| self.get_range(location, range);
        coalesce_ranges(ranges, read, OBJECT_STORE_COALESCE_DEFAULT).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.policy.count_out_of_scope();
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.policy.count_out_of_scope();
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.policy.count_out_of_scope();
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.policy.count_out_of_scope();
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.policy.count_out_of_scope();
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.policy.count_out_of_scope();
        self.inner.rename_opts(from, to, options).await
    }
}
