//! [`ReadAhead`]: what each copy of a read reads before it can win, and the winner as
//! the caller's `GetResult`.

use std::ops::Range;

use bytes::{Bytes, BytesMut};
use futures_util::stream::{self, BoxStream, StreamExt};
use object_store::{GetResult, GetResultPayload, ObjectMeta, Result};

/// What a copy of `get_opts` reads before it can win: the whole body when it is small,
/// else its first bytes and the stream of the rest.
pub(crate) struct ReadAhead {
    pub(crate) meta: ObjectMeta,
    /// The bytes of the object the answer holds: the read's size, known here once.
    pub(crate) range: Range<u64>,
    attributes: object_store::Attributes,
    extensions: object_store::Extensions,
    body: Body,
}

pub(crate) enum Body {
    Whole(Bytes),
    Started {
        first: Bytes,
        rest: BoxStream<'static, Result<Bytes>>,
    },
}

/// The first non-empty chunk of `body`, and the body to read on from; `None` if it ended
/// first.
pub(crate) async fn first_chunk(
    mut body: BoxStream<'static, Result<Bytes>>,
) -> Result<(Option<Bytes>, BoxStream<'static, Result<Bytes>>)> {
    loop {
        match body.next().await {
            Some(Ok(chunk)) if chunk.is_empty() => continue,
            Some(Ok(chunk)) => return Ok((Some(chunk), body)),
            Some(Err(error)) => return Err(error),
            None => return Ok((None, body)),
        }
    }
}

impl ReadAhead {
    /// Reads `result`'s body to its end if it answers at most `limit` bytes (or is a
    /// HEAD), else up to its first non-empty chunk.
    pub(crate) async fn read(mut result: GetResult, limit: u64, head: bool) -> Result<Self> {
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
            match first_chunk(stream).await? {
                (Some(first), rest) => Body::Started { first, rest },
                (None, _) => Body::Whole(Bytes::new()),
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

    /// The body read so far, leaving an empty one.
    pub(crate) fn take_body(&mut self) -> Body {
        std::mem::replace(&mut self.body, Body::Whole(Bytes::new()))
    }

    /// The winner as the caller's `GetResult`, its body `stream`.
    pub(crate) fn into_result(self, stream: BoxStream<'static, Result<Bytes>>) -> GetResult {
        GetResult {
            payload: GetResultPayload::Stream(stream),
            meta: self.meta,
            range: self.range,
            attributes: self.attributes,
            extensions: self.extensions,
        }
    }

    /// The winner's body replayed from what was read, and the rest of it as it comes.
    pub(crate) fn replayed(body: Body) -> BoxStream<'static, Result<Bytes>> {
        match body {
            Body::Whole(whole) if whole.is_empty() => stream::empty().boxed(),
            Body::Whole(whole) => stream::once(async move { Ok(whole) }).boxed(),
            Body::Started { first, rest } => {
                stream::once(async move { Ok(first) }).chain(rest).boxed()
            }
        }
    }
}
