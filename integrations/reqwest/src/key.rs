//! The key the middleware gives each call, for a policy with
//! [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): the request's target, or
//! what [`HedgeMiddleware::key_by`](crate::HedgeMiddleware::key_by) makes of the request.

use hedging_http_rules::KeyBy as SharedKeyBy;
use reqwest::{Request, Url};

/// How the middleware keys its calls: a `key_by` closure is shown the request.
pub(crate) type KeyBy<T> = SharedKeyBy<Request, T>;

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
