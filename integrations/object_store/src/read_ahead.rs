//! [`ReadAhead`]: what each copy of a read reads before it can win (the shared rule,
//! [`hedging_http_rules::resume::read_ahead`]), and the winner as the caller's
//! `GetResult`.

use std::ops::Range;

use bytes::Bytes;
use hedging_http_rules::resume::{self, Body};
use object_store::{Error, GetResult, GetResultPayload, ObjectMeta, Result};

/// What a copy of `get_opts` reads before it can win: the whole body when it is small,
/// else its first bytes and the stream of the rest.
pub(crate) struct ReadAhead {
    pub(crate) meta: ObjectMeta,
    /// The bytes of the object the answer holds: the read's size, known here once.
    pub(crate) range: Range<u64>,
    attributes: object_store::Attributes,
    extensions: object_store::Extensions,
    body: resume::ReadAhead<Error>,
}

impl ReadAhead {
    /// Reads `result`'s body to its end if it answers at most `limit` bytes (or is a
    /// HEAD), else up to its first non-empty chunk.
    pub(crate) async fn read(mut result: GetResult, limit: u64, head: bool) -> Result<Self> {
        // A HEAD's body is empty, whatever its range says.
        let answer_len = match head {
            true => 0,
            false => result.range.end.saturating_sub(result.range.start),
        };
        let meta = result.meta.clone();
        let range = result.range.clone();
        let attributes = std::mem::take(&mut result.attributes);
        let extensions = std::mem::take(&mut result.extensions);
        // `into_stream` reads a local file in chunks; any other payload is already a stream.
        let body = resume::read_ahead(result.into_stream(), answer_len, limit).await?;
        Ok(ReadAhead {
            meta,
            range,
            attributes,
            extensions,
            body,
        })
    }

    /// The body read so far, leaving an empty one.
    pub(crate) fn take_body(&mut self) -> resume::ReadAhead<Error> {
        std::mem::replace(&mut self.body, resume::ReadAhead::Whole(Bytes::new()))
    }

    /// The winner as the caller's `GetResult`, its body `stream`.
    pub(crate) fn into_result(self, stream: Body<Error>) -> GetResult {
        GetResult {
            payload: GetResultPayload::Stream(stream),
            meta: self.meta,
            range: self.range,
            attributes: self.attributes,
            extensions: self.extensions,
        }
    }
}
