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
//! | the same, answering more than the limit | to the first byte: the first copy whose body yields its first bytes wins, and the rest of its body streams from that copy alone |
//! | [`get_ranges`](ObjectStore::get_ranges) | through the last byte of every range |
//! | writes, lists, deletes, copies, renames | not at all: forwarded to the inner store |
//!
//! Each read is a call, counted in the policy's `calls`. Every other method is outside
//! the store's scope: forwarded as it is, and counted once per call of the method in
//! the policy's [`out_of_scope`](hedging::Stats::out_of_scope) (however many requests
//! the inner store makes for it: a multipart upload's parts, a list's pages), so
//! `hedges / calls` is the extra requests per read. The rule is every integration's:
//! [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
//!
//! A read answering more than the limit is not buffered: once its first bytes arrive it
//! is committed to one copy, and a stall later in its body is not hedged. Whether a read
//! is buffered is decided by the size of the answer each copy receives (its byte range),
//! so a whole-object `get` of a small object is buffered too. While racing, every copy in
//! flight may hold up to the limit in memory.
//!
//! # Verdicts
//!
//! Errors that another copy would only repeat end the read at once and are returned:
//! `NotFound`, `Precondition`, `NotModified`, `PermissionDenied`, `Unauthenticated`,
//! `InvalidPath`, and the errors that say the store cannot do the request at all
//! (`NotSupported`, `NotImplemented`, `UnknownConfigurationKey`, `AlreadyExists`). Any
//! other error (a `Generic` transport or server error, an error in the body) fails that
//! copy only: the race goes on, and if every copy fails the first copy's error is
//! returned. A server's pushback (a 503 with `Retry-After`) is such an error: no copy is
//! held for it, so the next copy starts at once if one may, and on the last copy the
//! read ends at once.
//!
//! # One policy per kind of read
//!
//! A HEAD, a 64 KiB range and a 1 GiB scan have different latencies; an
//! [adaptive delay](hedging::PolicyBuilder::adaptive_delay) fed by all three would hedge
//! the small reads too late and the large ones too early. Give each kind its own store
//! and policy over one shared inner store (`Arc<S>` is an `ObjectStore` too):
//!
//! ```
//! # use std::{sync::Arc, time::Duration};
//! # use hedging::{timer::TokioTimer, Policy};
//! # use hedging_object_store::HedgedStore;
//! # use object_store::memory::InMemory;
//! let policy = |name, quantile| {
//!     Policy::builder().name(name).adaptive_delay(quantile).timer(TokioTimer::new()).build()
//! };
//! let s3 = Arc::new(InMemory::new()); // shared connection pool and credentials
//! let heads = HedgedStore::new(Arc::clone(&s3), policy("heads", 0.95));
//! let ranges = HedgedStore::new(Arc::clone(&s3), policy("ranges", 0.95));
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

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures_util::stream::{self, BoxStream, StreamExt};
use hedging::timer::Timer;
use hedging::{Hedgeable, Policy, Verdict};
use object_store::path::Path;
use object_store::{
    CopyOptions, Error, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
    Result,
};

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
#[derive(Debug)]
pub struct HedgedStore<S, T> {
    inner: S,
    policy: Policy<T>,
    buffer_limit: usize,
}

impl<S, T> HedgedStore<S, T> {
    /// Hedges the reads of `inner` by `policy`, buffering answers of up to 1 MiB.
    pub fn new(inner: S, policy: Policy<T>) -> Self {
        HedgedStore {
            inner,
            policy,
            buffer_limit: DEFAULT_BUFFER_LIMIT,
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

    /// The inner store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The policy the reads are hedged by; its [`stats`](Policy::stats) count them.
    pub fn policy(&self) -> &Policy<T> {
        &self.policy
    }
}

impl<S: fmt::Display, T> fmt::Display for HedgedStore<S, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HedgedStore({})", self.inner)
    }
}

/// What a copy of `get_opts` reads before it can win: the whole body when it is small,
/// else its first bytes and the stream of the rest.
struct ReadAhead {
    meta: ObjectMeta,
    range: Range<u64>,
    attributes: object_store::Attributes,
    extensions: object_store::Extensions,
    body: Body,
}

enum Body {
    Whole(Bytes),
    Started {
        first: Bytes,
        rest: BoxStream<'static, Result<Bytes>>,
    },
}

impl ReadAhead {
    /// Reads `result`'s body to its end if it answers at most `limit` bytes (or is a
    /// HEAD), else up to its first non-empty chunk.
    async fn read(mut result: GetResult, limit: u64, head: bool) -> Result<Self> {
        let answer_len = result.range.end.saturating_sub(result.range.start);
        let meta = result.meta.clone();
        let range = result.range.clone();
        let attributes = std::mem::take(&mut result.attributes);
        let extensions = std::mem::take(&mut result.extensions);
        // `into_stream` reads a local file in chunks; any other payload is already a stream.
        let mut stream = result.into_stream();
        let body = if head || answer_len <= limit {
            // A body of one chunk is kept as it came; only a second chunk makes a copy.
            let (mut first, mut joined) = (Bytes::new(), None::<BytesMut>);
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                match &mut joined {
                    Some(joined) => joined.extend_from_slice(&chunk),
                    None if first.is_empty() => first = chunk,
                    None => {
                        // The range may overstate a HEAD's (empty) body; never reserve
                        // more than the limit.
                        let mut both = BytesMut::with_capacity(answer_len.min(limit) as usize);
                        both.extend_from_slice(&first);
                        both.extend_from_slice(&chunk);
                        joined = Some(both);
                    }
                }
            }
            Body::Whole(joined.map_or(first, BytesMut::freeze))
        } else {
            loop {
                match stream.next().await {
                    Some(Ok(chunk)) if chunk.is_empty() => continue,
                    Some(Ok(first)) => {
                        break Body::Started {
                            first,
                            rest: stream,
                        }
                    }
                    Some(Err(error)) => return Err(error),
                    None => break Body::Whole(Bytes::new()),
                }
            }
        };
        Ok(ReadAhead {
            meta,
            range,
            attributes,
            extensions,
            body,
        })
    }

    /// The winner as the caller's `GetResult`, its body replayed from what was read.
    fn into_result(self) -> GetResult {
        let stream = match self.body {
            Body::Whole(whole) if whole.is_empty() => stream::empty().boxed(),
            Body::Whole(whole) => stream::once(async move { Ok(whole) }).boxed(),
            Body::Started { first, rest } => {
                stream::once(async move { Ok(first) }).chain(rest).boxed()
            }
        };
        GetResult {
            payload: GetResultPayload::Stream(stream),
            meta: self.meta,
            range: self.range,
            attributes: self.attributes,
            extensions: self.extensions,
        }
    }
}

/// The verdict on one copy of a read: errors another copy would repeat are fatal.
fn verdict<V>(result: &Result<V>) -> Verdict {
    match result {
        Ok(_) => Verdict::Win,
        Err(error) if is_fatal(error) => Verdict::Fatal,
        Err(_) => Verdict::Retry,
    }
}

/// Whether `error` says the request itself cannot succeed, so another copy would fail
/// the same way.
fn is_fatal(error: &Error) -> bool {
    matches!(
        error,
        Error::NotFound { .. }
            | Error::Precondition { .. }
            | Error::NotModified { .. }
            | Error::PermissionDenied { .. }
            | Error::Unauthenticated { .. }
            | Error::InvalidPath { .. }
            | Error::NotSupported { .. }
            | Error::NotImplemented { .. }
            | Error::UnknownConfigurationKey { .. }
            | Error::AlreadyExists { .. }
    )
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<S, T> ObjectStore for HedgedStore<S, T>
where
    S: ObjectStore,
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
        let inner = &self.inner;
        let read = (|| {
            let options = options.clone();
            async move {
                let result = inner.get_opts(location, options).await?;
                ReadAhead::read(result, limit, head).await
            }
        })
        .hedged(&self.policy)
        .classify(verdict)
        .await?;
        Ok(read.into_result())
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let inner = &self.inner;
        (|| inner.get_ranges(location, ranges))
            .hedged(&self.policy)
            .classify(verdict)
            .await
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
