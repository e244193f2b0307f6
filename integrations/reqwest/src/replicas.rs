//! The base URLs a [`HedgeMiddleware`](crate::HedgeMiddleware) spreads a call's copies
//! over, and the rotation that picks each call's first.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

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
    pub(crate) fn new<I>(bases: I) -> Result<Replicas, InvalidReplica>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let bases = bases
            .into_iter()
            .map(|base| parse(base.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        if bases.is_empty() {
            return Err(InvalidReplica {
                base: String::new(),
                why: "no base URL given; a set needs at least one",
            });
        }
        Ok(Replicas {
            bases,
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

fn parse(base: &str) -> Result<Url, InvalidReplica> {
    let invalid = |why| InvalidReplica {
        base: base.into(),
        why,
    };
    let url = Url::parse(base).map_err(|_| invalid("not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid("not http or https"));
    }
    if url.host().is_none() {
        return Err(invalid("no host"));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            "a path, query or fragment; a base is scheme, host and port",
        ));
    }
    Ok(url)
}

/// A base URL [`HedgeMiddleware::replicas`](crate::HedgeMiddleware::replicas) cannot
/// send to, with why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidReplica {
    base: String,
    why: &'static str,
}

impl fmt::Display for InvalidReplica {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid replica base URL {:?}: {}", self.base, self.why)
    }
}

impl std::error::Error for InvalidReplica {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_is_a_scheme_a_host_and_a_port() {
        let replicas = Replicas::new(["http://10.0.0.1:8080", "https://b.example/"]).unwrap();
        assert_eq!(replicas.bases().len(), 2);
    }

    #[test]
    fn anything_else_is_refused_naming_the_base_and_why() {
        for (base, why) in [
            ("10.0.0.1:8080", "not"),
            ("ftp://h/", "not http or https"),
            ("http://h/api", "a path, query or fragment"),
            ("http://h/?a=1", "a path, query or fragment"),
            ("no url", "not a URL"),
        ] {
            let error = Replicas::new([base]).unwrap_err().to_string();
            assert!(error.contains(why), "{base}: {error}");
            assert!(error.contains(base), "{base}: {error}");
        }
        let none: [&str; 0] = [];
        let error = Replicas::new(none).unwrap_err().to_string();
        assert!(error.contains("no base URL given"), "{error}");
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
