//! The key the middleware gives each call, for a policy with
//! [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): the request's target, or
//! what [`HedgeMiddleware::key_by`](crate::HedgeMiddleware::key_by) makes of the request.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use hedging::key::KeyHash;
use hedging::Policy;
use reqwest::{Request, Url};

/// How the middleware keys its calls: by the request's target, or by a `key_by` closure.
pub(crate) struct KeyBy<T>(Option<Arc<KeyFn<T>>>);

/// A `key_by` closure, hashing its key as the call's policy does.
type KeyFn<T> = dyn Fn(&Request, &Policy<T>) -> KeyHash + Send + Sync;

impl<T> KeyBy<T> {
    /// The default key: the request's target.
    pub(crate) fn target() -> Self {
        KeyBy(None)
    }

    /// Keys each call by what `key` makes of its request.
    pub(crate) fn custom<Q, F>(key: F) -> Self
    where
        Q: Hash,
        F: Fn(&Request) -> Q + Send + Sync + 'static,
        T: 'static,
    {
        KeyBy(Some(Arc::new(
            move |request: &Request, policy: &Policy<T>| policy.key_hash(&key(request)),
        )))
    }

    /// The key of `request`'s call by `policy`, hashed only on a policy with keys.
    pub(crate) fn key(&self, policy: &Policy<T>, request: &Request) -> KeyHash {
        match &self.0 {
            None => policy.key_hash(&target(request.url())),
            Some(key_by) => key_by(request, policy),
        }
    }
}

/// The default key of a call to `url`: `(scheme, authority)`, two `&str`, the authority
/// as the URL keeps it (host, and port unless it is the scheme's default) without the
/// credentials: `("http", "10.0.0.1:8080")`, `("https", "api.example.com")`.
pub(crate) fn target(url: &Url) -> (&str, &str) {
    let authority = url.authority();
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    (url.scheme(), host)
}

impl<T> Clone for KeyBy<T> {
    fn clone(&self) -> Self {
        KeyBy(self.0.clone())
    }
}

impl<T> fmt::Debug for KeyBy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            None => "target",
            Some(_) => "key_by",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target_of(url: &str) -> (String, String) {
        let url = Url::parse(url).unwrap();
        let (scheme, authority) = target(&url);
        (scheme.to_owned(), authority.to_owned())
    }

    #[test]
    fn the_target_is_the_scheme_and_the_host_and_port_without_credentials() {
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            target_of("http://10.0.0.1:8080/a?b"),
            pair("http", "10.0.0.1:8080")
        );
        assert_eq!(
            target_of("https://user:secret@API.example.com/a"),
            pair("https", "api.example.com")
        );
        // The scheme's default port is no part of the URL, so no part of the key.
        assert_eq!(
            target_of("https://api.example.com:443/"),
            pair("https", "api.example.com")
        );
        assert_eq!(target_of("http://[::1]:8080/"), pair("http", "[::1]:8080"));
    }
}
