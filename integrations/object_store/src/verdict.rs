//! What one copy of a read means for its race: errors another copy would repeat are
//! fatal. A leaf: the reads of `lib.rs` and the resumes of `resume.rs` judge by it.

use hedging::Verdict;
use object_store::{Error, Result};

/// The verdict on one copy of a read: errors another copy would repeat are fatal.
pub(crate) fn verdict<V>(result: &Result<V>) -> Verdict {
    hedging_http_rules::resume::verdict_by(result, is_fatal)
}

/// Whether `error` says the request itself cannot succeed, so another copy would fail
/// the same way.
pub(crate) fn is_fatal(error: &Error) -> bool {
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
    ) || matches!(error, Error::Generic { source, .. } if refused_range(source.as_ref()))
}

/// Whether a `Generic` error is the store's `416 Range Not Satisfiable`: the object does
/// not hold the range asked, and every copy would be told so. object_store has no
/// variant of its own for it (its HTTP stores report the status in the message of a
/// `Generic` error), so the status is read from the error's chain.
fn refused_range(error: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = next {
        if error.to_string().contains("status code: 416") {
            return true;
        }
        next = error.source();
    }
    false
}
