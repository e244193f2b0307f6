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
    )
}
