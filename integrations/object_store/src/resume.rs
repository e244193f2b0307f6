//! [`Source`]: what the body of a read answered past the buffer limit resumes from when
//! it stalls, a ranged read of the rest of the same object version. The stall watch and
//! the race are the shared rule's ([`hedging_http_rules::resume`]).

use std::ops::Range;
use std::sync::Arc;

use futures_util::future::{BoxFuture, FutureExt};
use hedging_http_rules::resume::{first_chunk, Next};
use object_store::path::Path;
use object_store::{Error, GetOptions, GetRange, ObjectStore};

use crate::verdict::is_fatal;

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
    async fn read_range(self: Arc<Self>, range: Range<u64>) -> Next<Error> {
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

impl<S, Q> hedging_http_rules::resume::Source for Source<S, Q>
where
    S: ObjectStore,
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
        generic(message)
    }
}

fn generic(message: String) -> Error {
    Error::Generic {
        store: "HedgedStore",
        source: message.into(),
    }
}
