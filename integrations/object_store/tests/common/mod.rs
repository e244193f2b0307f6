//! What the resume tests share: a store that counts the body bytes its inner store's
//! answers yielded, so a test knows when the reader has every byte sent before a stall
//! and waits for more.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// A real store whose answers' bodies count the bytes they yield; every other method is
/// forwarded as it is.
#[derive(Debug)]
pub struct Counted<S> {
    pub inner: S,
    pub body_bytes: Arc<AtomicU64>,
}

impl<S> Counted<S> {
    pub fn new(inner: S) -> Self {
        Counted {
            inner,
            body_bytes: Arc::new(AtomicU64::new(0)),
        }
    }
}

/// Body bytes the inner store yielded so far.
pub fn received<S>(store: &Counted<S>) -> u64 {
    store.body_bytes.load(Relaxed)
}

impl<S: std::fmt::Display> std::fmt::Display for Counted<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Counted({})", self.inner)
    }
}

#[async_trait]
impl<S: ObjectStore> ObjectStore for Counted<S> {
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
        let mut result = self.inner.get_opts(location, options).await?;
        let counter = Arc::clone(&self.body_bytes);
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
