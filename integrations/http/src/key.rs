//! The key a layer gives each call, for a policy with
//! [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): the layer's default, or the
//! one `key_by` names ([`KeyBy`], shared with every HTTP integration).

use hedging::key::KeyHash;
use hedging::Policy;
use http::header::HOST;
use http::request::Parts;
use http::Request;

/// How a layer keys its calls: a `key_by` closure is shown the request's head.
pub(crate) type KeyBy<T> = hedging_http_rules::KeyBy<Parts, T>;

/// `request` and the key of its call by `policy`: `default` of the request's head, or the
/// `key_by` closure's key of it. Neither is hashed on a policy without keys.
pub(crate) fn key_request<B, T>(
    key_by: &KeyBy<T>,
    policy: &Policy<T>,
    request: Request<B>,
    default: impl FnOnce(&Parts) -> KeyHash,
) -> (Request<B>, KeyHash) {
    let (parts, body) = request.into_parts();
    let key = key_by.key(policy, &parts, default);
    (Request::from_parts(parts, body), key)
}

/// The default key of an HTTP call: its target, `(scheme, authority)` as two `&str`, as
/// the request's URI has them; the `Host` header when the URI has no authority, and
/// `"http"` when it has no scheme.
pub(crate) fn target(head: &Parts) -> (&str, &str) {
    let uri = &head.uri;
    let scheme = uri.scheme_str().unwrap_or("http");
    let authority = match uri.authority() {
        Some(authority) => authority.as_str(),
        None => head
            .headers
            .get(HOST)
            .and_then(|host| host.to_str().ok())
            .unwrap_or(""),
    };
    (scheme, authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_uris_scheme_and_authority_or_the_host_header() {
        let head = |request: http::request::Builder| request.body(()).unwrap().into_parts().0;
        let absolute = head(Request::get("https://api.example.com:8443/a?b"));
        assert_eq!(target(&absolute), ("https", "api.example.com:8443"));
        let relative = head(Request::get("/a").header(HOST, "api.example.com"));
        assert_eq!(target(&relative), ("http", "api.example.com"));
        let bare = head(Request::get("/a"));
        assert_eq!(target(&bare), ("http", ""));
    }
}
