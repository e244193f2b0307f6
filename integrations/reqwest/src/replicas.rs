//! The base URLs a [`HedgeMiddleware`](crate::HedgeMiddleware) spreads a call's copies
//! over, and the rotation that picks each call's first.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use hedging_http_rules::InvalidOrigin;
use http::uri::{Authority, Scheme};
use reqwest::Url;

/// The replicas of [`HedgeMiddleware::replicas`](crate::HedgeMiddleware::replicas):
/// copy k of call c goes to base `(first(c) + k) mod n`.
#[derive(Debug)]
pub(crate) struct Replicas {
    bases: Vec<Url>,
    /// Calls started: the first base of the next one.
    calls: AtomicUsize,
}

impl Replicas {
    pub(crate) fn new<I>(bases: I) -> Result<Replicas, InvalidOrigin>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let bases = hedging_http_rules::origins(bases)?;
        Ok(Replicas {
            bases: bases.into_iter().map(url).collect(),
            calls: AtomicUsize::new(0),
        })
    }

    /// The base of the next call's first copy; the call's copy k goes `k` bases on.
    pub(crate) fn first(&self) -> usize {
        self.calls.fetch_add(1, Relaxed) % self.bases.len()
    }

    /// Sends `url` to base `first + copy`: its scheme, host and port; path and query kept.
    pub(crate) fn send_to(&self, url: &mut Url, first: usize, copy: usize) {
        let mut to = self.bases[(first + copy) % self.bases.len()].clone();
        to.set_path(url.path());
        to.set_query(url.query());
        to.set_fragment(url.fragment());
        *url = to;
    }

    pub(crate) fn bases(&self) -> &[Url] {
        &self.bases
    }
}

/// The base URL of an origin.
fn url((scheme, authority): (Scheme, Authority)) -> Url {
    Url::parse(&format!("{scheme}://{authority}/")).expect("an origin is a URL")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_is_a_scheme_a_host_and_a_port() {
        let replicas = Replicas::new(["http://10.0.0.1:8080", "https://b.example/"]).unwrap();
        assert_eq!(replicas.bases().len(), 2);
    }

    #[test]
    fn a_base_that_is_not_an_origin_or_none_is_an_error() {
        let error = Replicas::new(["http://a:1", "http://h/api"]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("\"http://h/api\": a path or query"),
            "{error}"
        );
        let none: [&str; 0] = [];
        let error = Replicas::new(none).unwrap_err().to_string();
        assert!(error.contains("no origin given"), "{error}");
    }

    #[test]
    fn copy_k_of_a_call_keeps_its_path_and_query_on_base_first_plus_k() {
        let replicas = Replicas::new(["http://a:1", "http://b:2", "https://c"]).unwrap();
        let first = replicas.first();
        let sent: Vec<String> = (0..4)
            .map(|copy| {
                let mut url = Url::parse("http://catalog/items?page=2").unwrap();
                replicas.send_to(&mut url, first, copy);
                url.into()
            })
            .collect();
        assert_eq!(
            sent,
            [
                "http://a:1/items?page=2",
                "http://b:2/items?page=2",
                "https://c/items?page=2",
                "http://a:1/items?page=2",
            ]
        );
        assert_eq!(replicas.first(), 1, "the next call starts one on");
    }
}
