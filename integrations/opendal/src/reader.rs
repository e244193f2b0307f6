//! [`HedgedReader`]: a read's requests, hedged where they are made, when the reader
//! opens a byte range; and the body of a read answered past the buffer limit, resumed
//! from its offset, of the same version, when it stalls (the shared rule,
//! [`hedging_http_rules::resume`]).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use futures_util::future::{BoxFuture, FutureExt};
use futures_util::stream::{self, StreamExt};
use hedging::timer::Timer;
use hedging::{Attempt, Hedgeable};
use hedging_http_rules::resume::{self, first_chunk, read_ahead, Body, Next, ReadAhead};
use opendal::options::ReadOptions;
use opendal::raw::oio::{self, Read as _, ReadStream as _};
use opendal::raw::{OpRead, RpRead, Service as _, Servicer};
use opendal::{Buffer, BytesRange, Error, ErrorKind, Metadata, OperationContext, Result};
use sync_wrapper::SyncWrapper;

use crate::key::{Call, CallKey};
use crate::settings::{is_fatal, verdict, Settings};

/// The reader of one `read` of a [`HedgedService`](crate::HedgedService): each byte range
/// it opens is a hedged call; made by the service, named here so it can be named.
pub struct HedgedReader<T, K> {
    reader: oio::Reader,
    object: Arc<Object>,
    settings: Arc<Settings<T, K>>,
}

/// What a resume needs to read the object again: the service, the context, the path and
/// the caller's arguments.
struct Object {
    service: Servicer,
    ctx: OperationContext,
    path: String,
    args: OpRead,
}

impl<T, K> fmt::Debug for HedgedReader<T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgedReader")
            .field("path", &self.object.path)
            .finish_non_exhaustive()
    }
}

/// The winner of a read's race: the answer, the bytes of the object it holds (if the
/// answer says), and its body read ahead.
type Won = (RpRead, Option<Range<u64>>, ReadAhead<Error>);

impl<T, K> HedgedReader<T, K>
where
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
    K: CallKey,
{
    pub(crate) fn new(
        reader: oio::Reader,
        service: Servicer,
        ctx: OperationContext,
        path: &str,
        args: OpRead,
        settings: Arc<Settings<T, K>>,
    ) -> Self {
        let path = path.to_owned();
        let object = Arc::new(Object {
            service,
            ctx,
            path,
            args,
        });
        HedgedReader {
            reader,
            object,
            settings,
        }
    }

    /// Opens `range` as a hedged call: each copy reads its body to its end if it answers
    /// at most the buffer limit, else to its first chunk; the winner's body, resumed when
    /// it stalls if the answer names its version.
    async fn open_hedged(&self, range: BytesRange) -> Result<(RpRead, Body<Error>)> {
        let settings = &*self.settings;
        let key = settings.key.key(&Call::read(&self.object.path, range));
        let (reader, limit) = (&self.reader, settings.buffer_limit);
        let mut copies_started = 0;
        let (rp, answered, ahead): Won = (|attempt: Attempt| {
            copies_started = attempt.index() + 1;
            async move {
                let (rp, stream) = reader.open(range).await?;
                let answered = answered(range, rp.metadata());
                let length = answered
                    .as_ref()
                    .map_or(u64::MAX, |bytes| bytes.end - bytes.start);
                let ahead = read_ahead(body_of(stream), length, limit).await?;
                Ok((rp, answered, ahead))
            }
        })
        .hedged(&settings.policy)
        .classify(verdict)
        .key(&key)
        .await?;
        let body = match ahead {
            ReadAhead::Started { first, rest } if settings.resume_stalls => {
                match (answered, self.source(rp.metadata(), key)) {
                    (Some(range), Some(source)) => {
                        let copies_left =
                            settings.policy.max_copies().saturating_sub(copies_started);
                        let policy = settings.policy.clone();
                        resume::resuming(source, policy, first, rest, range, copies_left)
                    }
                    _ => ReadAhead::Started { first, rest }.replayed(),
                }
            }
            ahead => ahead.replayed(),
        };
        Ok((rp, body))
    }

    /// What a stalled body of the answer `metadata` describes resumes from, if it names
    /// its version: a strong ETag, sent as `If-Match` where the service takes it, or the
    /// service's version id, read by version where it can; either compared with each
    /// resume's answer.
    fn source(&self, metadata: Option<&Metadata>, key: K::Key) -> Option<Source<K::Key>> {
        let metadata = metadata?;
        let e_tag = resume::strong_e_tag(metadata.etag()).map(str::to_owned);
        let version = metadata.version().map(str::to_owned);
        if e_tag.is_none() && version.is_none() {
            return None;
        }
        let object = &self.object;
        let capability = object.service.capability();
        let args = &object.args;
        let options = ReadOptions {
            if_match: match capability.read_with_if_match {
                true => e_tag.clone(),
                false => None,
            }
            .or_else(|| args.if_match().map(str::to_owned)),
            version: match capability.read_with_version {
                true => version.clone(),
                false => None,
            }
            .or_else(|| args.version().map(str::to_owned)),
            if_none_match: args.if_none_match().map(str::to_owned),
            if_version_match: args.if_version_match().map(str::to_owned),
            if_version_not_match: args.if_version_not_match().map(str::to_owned),
            if_modified_since: args.if_modified_since(),
            if_unmodified_since: args.if_unmodified_since(),
            override_content_type: args.override_content_type().map(str::to_owned),
            override_cache_control: args.override_cache_control().map(str::to_owned),
            override_content_disposition: args.override_content_disposition().map(str::to_owned),
            ..ReadOptions::default()
        };
        let (_, args, _): (BytesRange, OpRead, _) = options.into();
        Some(Source {
            object: Arc::clone(object),
            args,
            e_tag,
            version,
            key,
        })
    }
}

impl<T, K> oio::Read for HedgedReader<T, K>
where
    T: Timer + fmt::Debug + Send + Sync + 'static,
    T::Sleep: Send,
    K: CallKey,
{
    async fn open(&self, range: BytesRange) -> Result<(RpRead, Box<dyn oio::ReadStreamDyn>)> {
        let (rp, body) = self.open_hedged(range).await?;
        let stream = HedgedStream(SyncWrapper::new(body));
        Ok((rp, Box::new(stream) as Box<dyn oio::ReadStreamDyn>))
    }

    async fn read(&self, range: BytesRange) -> Result<(RpRead, Buffer)> {
        let settings = &*self.settings;
        match range.size() {
            // Each copy reads the whole range before it can win.
            Some(size) if size <= settings.buffer_limit => {
                let key = settings.key.key(&Call::read(&self.object.path, range));
                let reader = &self.reader;
                (|| reader.read(range))
                    .hedged(&settings.policy)
                    .classify(verdict)
                    .key(&key)
                    .await
            }
            // Larger: hedged to the first byte, then resumed when it stalls.
            _ => {
                let (rp, mut body) = self.open_hedged(range).await?;
                let mut chunks = Vec::new();
                while let Some(chunk) = body.next().await {
                    chunks.push(chunk?);
                }
                Ok((rp, chunks.into_iter().collect()))
            }
        }
    }
}

/// The bytes of the object an answer to a read of `range` holds, by the object's length
/// its metadata gives; `None` if it gives none.
fn answered(range: BytesRange, metadata: Option<&Metadata>) -> Option<Range<u64>> {
    let total = metadata?.content_length();
    // Zero is also what metadata without a length says: not trusted to bound a body.
    if total == 0 {
        return None;
    }
    let (start, end) = match range {
        BytesRange::Range {
            offset,
            size: Some(size),
        } => (offset, offset.saturating_add(size).min(total)),
        BytesRange::Range { offset, size: None } => (offset, total),
        BytesRange::Suffix { size } => (total.saturating_sub(size), total),
    };
    (start <= end).then_some(start..end)
}

/// An OpenDAL body as a stream of chunks, ending after its first error.
fn body_of(stream: Box<dyn oio::ReadStreamDyn>) -> Body<Error> {
    stream::unfold(Some(stream), |stream| async move {
        let mut stream = stream?;
        match stream.read().await {
            Ok(buffer) if buffer.is_empty() => None,
            Ok(buffer) => Some((Ok(buffer.to_bytes()), Some(stream))),
            Err(error) => Some((Err(error), None)),
        }
    })
    .boxed()
}

/// The caller's body: OpenDAL asks a read stream to be `Sync`, which a body that races
/// is not; it is only ever read through `&mut`.
struct HedgedStream(SyncWrapper<Body<Error>>);

impl oio::ReadStream for HedgedStream {
    async fn read(&mut self) -> Result<Buffer> {
        match self.0.get_mut().next().await {
            Some(Ok(chunk)) => Ok(Buffer::from(chunk)),
            Some(Err(error)) => Err(error),
            None => Ok(Buffer::new()),
        }
    }
}

/// What a resume reads: the object, of the version the first answer was, with the
/// caller's arguments and `If-Match` or the version; and the read's key.
struct Source<Q> {
    object: Arc<Object>,
    args: OpRead,
    e_tag: Option<String>,
    version: Option<String>,
    key: Q,
}

impl<Q: Send + Sync + 'static> Source<Q> {
    /// Bytes `range` of the first answer's version, up to their first chunk. A service
    /// that ignores `If-Match` and answers another version fails it all the same.
    async fn read_range(self: Arc<Self>, range: Range<u64>) -> Next<Error> {
        let object = &self.object;
        let reader = object
            .service
            .read(&object.ctx, &object.path, self.args.clone())?;
        let asked = BytesRange::new(range.start, Some(range.end - range.start));
        let (rp, stream) = reader.open(asked).await?;
        let metadata = rp.metadata();
        // Only what the first answer named is compared: a weak ETag it had is not kept.
        let changed = |kept: &Option<String>, answered: Option<&str>| {
            kept.is_some() && kept.as_deref() != answered
        };
        let (e_tag, version) = (
            metadata.and_then(Metadata::etag),
            metadata.and_then(Metadata::version),
        );
        if changed(&self.e_tag, e_tag) || changed(&self.version, version) {
            let message = format!(
                "the object changed while it was read: version {:?} (ETag {:?}) became {version:?} ({e_tag:?})",
                self.version, self.e_tag
            );
            return Err(Error::new(ErrorKind::ConditionNotMatch, message));
        }
        let answered = answered(asked, metadata);
        if answered.as_ref() != Some(&range) {
            let message =
                format!("a resume asked for bytes {range:?} and was answered {answered:?}");
            return Err(not_its_range(message));
        }
        match first_chunk(body_of(stream)).await? {
            (Some(chunk), rest) => Ok((Some(chunk), rest)),
            (None, _) => Err(not_its_range(
                "a resumed body ended before its first byte".into(),
            )),
        }
    }
}

fn not_its_range(message: String) -> Error {
    Error::new(ErrorKind::Unexpected, message)
}

impl<Q> resume::Source for Source<Q>
where
    Q: core::hash::Hash + Send + Sync + 'static,
{
    type Error = Error;
    type Key = Q;

    fn key(&self) -> &Q {
        &self.key
    }

    fn read(self: Arc<Self>, range: Range<u64>) -> BoxFuture<'static, Next<Error>> {
        self.read_range(range).boxed()
    }

    fn is_fatal(error: &Error) -> bool {
        is_fatal(error)
    }

    fn not_its_range(&self, message: String) -> Error {
        not_its_range(message)
    }
}
