//! What a service and its readers share: their settings, and the verdict on one copy. A
//! leaf: `service.rs` and `reader.rs` import it, and it imports neither.

use std::sync::Arc;

use hedging::{Policy, Verdict};
use opendal::{Error, ErrorKind, Result};

/// What a service and its readers hedge by: the policy, the key, and the read settings.
pub(crate) struct Settings<T, K> {
    pub(crate) policy: Policy<T>,
    pub(crate) key: Arc<K>,
    pub(crate) buffer_limit: u64,
    pub(crate) resume_stalls: bool,
}

/// The verdict on one copy of a call: errors another copy would repeat are fatal.
pub(crate) fn verdict<V>(result: &Result<V>) -> Verdict {
    hedging_http_rules::resume::verdict_by(result, is_fatal)
}

/// Whether `error` says the call itself cannot succeed, so another copy would fail the
/// same way: a missing object, a refused condition or range, no permission, a request
/// the service cannot do. Anything else (`Unexpected`: a transport error, a 5xx, a
/// broken body; `RateLimited`) fails that copy only.
pub(crate) fn is_fatal(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::NotFound
            | ErrorKind::ConditionNotMatch
            | ErrorKind::RangeNotSatisfied
            | ErrorKind::PermissionDenied
            | ErrorKind::IsADirectory
            | ErrorKind::NotADirectory
            | ErrorKind::Unsupported
            | ErrorKind::ConfigInvalid
            | ErrorKind::AlreadyExists
            | ErrorKind::IsSameFile
    )
}
