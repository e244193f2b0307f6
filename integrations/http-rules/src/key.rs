//! [`KeyBy`]: the key an HTTP integration gives each call, for a policy with
//! [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): the integration's default,
//! or what a user's `key_by` closure makes of the request; and [`size_class`], the key the
//! object-store integrations give a read.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use hedging::key::KeyHash;
use hedging::Policy;

/// How an HTTP integration keys its calls: by its default (the request's target, say), or
/// by the closure its `key_by` was given. `R` is what the closure is shown: the request's
/// head (`http::request::Parts`) in `hedging-http`, the `reqwest::Request` in
/// `reqwest-hedging`; `T` is the policy's timer.
///
/// A key is hashed as the call's policy hashes keys, and only on a policy with keys, so
/// `policy.delay_for(&key)` finds the delay a call of that key gets.
///
/// ```
/// use hedging::{timer::ManualTimer, Policy};
/// use hedging_http_rules::KeyBy;
///
/// let policy = Policy::builder()
///     .adaptive_delay(0.95)
///     .adaptive_keys(64)
///     .timer(ManualTimer::new())
///     .build();
/// let by_path = KeyBy::<http::Uri, _>::custom(|uri: &http::Uri| uri.path().to_owned());
/// let uri: http::Uri = "http://example.com/users".parse().unwrap();
/// let key = by_path.key(&policy, &uri, |_| unreachable!("a closure was given"));
/// assert_eq!(key, policy.key_hash(&"/users".to_owned()));
///
/// let default = KeyBy::default();
/// let key = default.key(&policy, &uri, |uri| policy.key_hash(&uri.host()));
/// assert_eq!(key, policy.key_hash(&Some("example.com")));
/// ```
pub struct KeyBy<R: ?Sized, T>(Option<Arc<KeyFn<R, T>>>);

/// A `key_by` closure, hashing its key as the call's policy does.
type KeyFn<R, T> = dyn Fn(&R, &Policy<T>) -> KeyHash + Send + Sync;

impl<R: ?Sized, T> KeyBy<R, T> {
    /// Keys each call by what `key` makes of what the call is shown of its request.
    pub fn custom<Q, F>(key: F) -> Self
    where
        Q: Hash,
        F: Fn(&R) -> Q + Send + Sync + 'static,
        R: 'static,
        T: 'static,
    {
        KeyBy(Some(Arc::new(move |request: &R, policy: &Policy<T>| {
            policy.key_hash(&key(request))
        })))
    }

    /// Whether calls are keyed by the integration's default, not by a closure.
    pub fn is_default(&self) -> bool {
        self.0.is_none()
    }

    /// The key of a call of `request` by `policy`: the closure's key, or `default`'s
    /// (which hashes with `policy.key_hash`) when no closure was given.
    pub fn key(
        &self,
        policy: &Policy<T>,
        request: &R,
        default: impl FnOnce(&R) -> KeyHash,
    ) -> KeyHash {
        match &self.0 {
            None => default(request),
            Some(key_by) => key_by(request, policy),
        }
    }
}

/// The integration's default key.
impl<R: ?Sized, T> Default for KeyBy<R, T> {
    fn default() -> Self {
        KeyBy(None)
    }
}

impl<R: ?Sized, T> Clone for KeyBy<R, T> {
    fn clone(&self) -> Self {
        KeyBy(self.0.clone())
    }
}

impl<R: ?Sized, T> fmt::Debug for KeyBy<R, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            None => "default",
            Some(_) => "key_by",
        })
    }
}

/// The size class of a read of `bytes` bytes, the key the object-store integrations give
/// a read by default: the power of two at or above it, so reads of about one size share a
/// delay; `u64::MAX` past 2^63 bytes, the class of a read of unknown length.
///
/// ```
/// use hedging_http_rules::size_class;
///
/// assert_eq!(size_class(4_000), 4_096);
/// assert_eq!(size_class(4_096), 4_096);
/// assert_eq!(size_class(u64::MAX), u64::MAX);
/// ```
pub fn size_class(bytes: u64) -> u64 {
    bytes.checked_next_power_of_two().unwrap_or(u64::MAX)
}
