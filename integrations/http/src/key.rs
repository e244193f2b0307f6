//! The key a layer gives each call, for a policy with
//! [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): the layer's default, or the
//! one `key_by` names.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use hedging::key::KeyHash;
use hedging::Policy;
use http::header::HOST;
use http::request::Parts;
use http::Request;

/// How a layer keys its calls: by its default, or by the closure `key_by` was given.
pub(crate) struct KeyBy<T>(Option<Arc<KeyFn<T>>>);

/// A `key_by` closure, hashing its key as the call's policy does.
type KeyFn<T> = dyn Fn(&Parts, &Policy<T>) -> KeyHash + Send + Sync;

impl<T> KeyBy<T> {
    /// The layer's default key.
    pub(crate) fn default_key() -> Self {
        KeyBy(None)
    }

    /// Keys each call by what `key` makes of its request's head.
    pub(crate) fn custom<Q, F>(key: F) -> Self
    where
        Q: Hash,
        F: Fn(&Parts) -> Q + Send + Sync + 'static,
        T: 'static,
    {
        KeyBy(Some(Arc::new(move |parts: &Parts, policy: &Policy<T>| {
            policy.key_hash(&key(parts))
        })))
    }

    /// The key of `request`'s call by `policy`: `default` of the request, or the
    /// closure's key of its head. Neither is hashed on a policy without keys.
    pub(crate) fn key<B>(
        &self,
        policy: &Policy<T>,
        request: Request<B>,
        default: impl FnOnce(&Request<B>) -> KeyHash,
    ) -> (Request<B>, KeyHash) {
        match &self.0 {
            None => {
                let key = default(&request);
                (request, key)
            }
            Some(key_by) => {
                let (parts, body) = request.into_parts();
                let key = key_by(&parts, policy);
                (Request::from_parts(parts, body), key)
            }
        }
    }
}

/// The default key of an HTTP call: its target, `(scheme, authority)` as two `&str`, as
/// the request's URI has them; the `Host` header when the URI has no authority, and
/// `"http"` when it has no scheme.
pub(crate) fn target<B>(request: &Request<B>) -> (&str, &str) {
    let uri = request.uri();
    let scheme = uri.scheme_str().unwrap_or("http");
    let authority = match uri.authority() {
        Some(authority) => authority.as_str(),
        None => request
            .headers()
            .get(HOST)
            .and_then(|host| host.to_str().ok())
            .unwrap_or(""),
    };
    (scheme, authority)
}

impl<T> Clone for KeyBy<T> {
    fn clone(&self) -> Self {
        KeyBy(self.0.clone())
    }
}

impl<T> fmt::Debug for KeyBy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            None => "default",
            Some(_) => "key_by",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_uris_scheme_and_authority_or_the_host_header() {
        let absolute = Request::get("https://api.example.com:8443/a?b")
            .body(())
            .unwrap();
        assert_eq!(target(&absolute), ("https", "api.example.com:8443"));
        let relative = Request::get("/a")
            .header(HOST, "api.example.com")
            .body(())
            .unwrap();
        assert_eq!(target(&relative), ("http", "api.example.com"));
        let bare = Request::get("/a").body(()).unwrap();
        assert_eq!(target(&bare), ("http", ""));
    }
}
