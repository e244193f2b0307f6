//! What the store tests share: a store wrapping a real one whose reads do something of
//! their own ([`OnRead`]) and whose other methods are the inner store's, and one such
//! store, [`Counted`], that counts the body bytes its inner store's answers yielded, so a
//! test knows when the reader has every byte sent before a stall and waits for more.
#![allow(dead_code)] // each test file uses its own part

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use futures::FutureExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// What a [`Wrapped`] store does with a read.
pub trait OnRead: fmt::Debug + Send + Sync + 'static {
    /// The store's name in its `Display`.
    const NAME: &'static str;

    /// Reads `location` with `options` from `inner`, as this store reads.
    fn read<'a, S: ObjectStore>(
        &'a self,
        inner: &'a S,
        location: &'a Path,
        options: GetOptions,
    ) -> BoxFuture<'a, Result<GetResult>>;
}

/// A real store whose reads go through `on_read`; every other method is forwarded as it
/// is.
#[derive(Debug)]
pub struct Wrapped<S, R> {
    pub inner: S,
    pub on_read: R,
}

impl<S: fmt::Display, R: OnRead> fmt::Display for Wrapped<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", R::NAME, self.inner)
    }
}

#[async_trait]
impl<S: ObjectStore, R: OnRead> ObjectStore for Wrapped<S, R> {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.on_read.read(&self.inner, location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// A real store whose answers' bodies count the bytes they yield.
pub type Counted<S> = Wrapped<S, CountBytes>;

/// The reads of [`Counted`]: the body bytes yielded so far.
#[derive(Debug, Default)]
pub struct CountBytes(Arc<AtomicU64>);

impl<S> Counted<S> {
    pub fn new(inner: S) -> Self {
        Wrapped {
            inner,
            on_read: CountBytes::default(),
        }
    }
}

/// Body bytes the inner store yielded so far.
pub fn received<S>(store: &Counted<S>) -> u64 {
    store.on_read.0.load(Relaxed)
}

impl OnRead for CountBytes {
    const NAME: &'static str = "Counted";

    fn read<'a, S: ObjectStore>(
        &'a self,
        inner: &'a S,
        location: &'a Path,
        options: GetOptions,
    ) -> BoxFuture<'a, Result<GetResult>> {
        let counter = Arc::clone(&self.0);
        async move {
            let mut result = inner.get_opts(location, options).await?;
            let body = std::mem::replace(
                &mut result.payload,
                GetResultPayload::Stream(futures::stream::empty().boxed()),
            );
            #[allow(irrefutable_let_patterns)] // a `File` payload only with feature `fs`
            let GetResultPayload::Stream(body) = body
            else {
                panic!("a store over the network answers with a stream")
            };
            result.payload = GetResultPayload::Stream(
                body.inspect(move |chunk| {
                    if let Ok(chunk) = chunk {
                        counter.fetch_add(chunk.len() as u64, Relaxed);
                    }
                })
                .boxed(),
            );
            Ok(result)
        }
        .boxed()
    }
}
