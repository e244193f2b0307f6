//! Which requests a layer hedges: [`HedgedMethods`] and the [`NoHedge`] opt-out.

use std::sync::Arc;

use http::{Extensions, Method};

/// The methods hedged unless a layer is told otherwise: `GET`, `HEAD` and `OPTIONS`,
/// the safe methods of RFC 9110 (§9.2.1), which are also idempotent.
pub const DEFAULT_METHODS: [Method; 3] = [Method::GET, Method::HEAD, Method::OPTIONS];

/// A request extension that sends the request once, unhedged, whatever its method.
///
/// One type for every integration: a request marked for one is marked for all.
///
/// ```
/// let mut request = http::Request::get("http://example.com/").body(()).unwrap();
/// request.extensions_mut().insert(hedging_http_rules::NoHedge);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NoHedge;

impl NoHedge {
    /// Whether `extensions` opt their request out: they hold a `NoHedge`.
    pub fn opts_out(extensions: &Extensions) -> bool {
        extensions.get::<NoHedge>().is_some()
    }
}

/// The methods a layer hedges; a request of any other method, or one carrying
/// [`NoHedge`], is outside its scope.
///
/// Cheap to clone (the list is shared).
///
/// # Default
///
/// [`DEFAULT_METHODS`]: `GET`, `HEAD`, `OPTIONS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HedgedMethods {
    methods: Arc<[Method]>,
}

impl HedgedMethods {
    /// Exactly these methods; an empty list hedges nothing. Name only methods that are
    /// safe to send twice.
    pub fn new(methods: impl IntoIterator<Item = Method>) -> Self {
        let methods = Arc::from_iter(methods);
        HedgedMethods { methods }
    }

    /// Whether a request with `method` and `extensions` is the layer's to hedge: its
    /// method is listed and it carries no [`NoHedge`].
    pub fn hedges(&self, method: &Method, extensions: &Extensions) -> bool {
        self.methods.contains(method) && !NoHedge::opts_out(extensions)
    }

    /// The methods, in the order they were given.
    pub fn as_slice(&self) -> &[Method] {
        &self.methods
    }
}

impl Default for HedgedMethods {
    fn default() -> Self {
        HedgedMethods::new(DEFAULT_METHODS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_hedges_the_safe_methods_only() {
        let methods = HedgedMethods::default();
        let none = Extensions::new();
        for method in [Method::GET, Method::HEAD, Method::OPTIONS] {
            assert!(methods.hedges(&method, &none), "{method}");
        }
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
            assert!(!methods.hedges(&method, &none), "{method}");
        }
    }

    #[test]
    fn no_hedge_takes_a_listed_method_out() {
        let mut opted_out = Extensions::new();
        opted_out.insert(NoHedge);
        assert!(!HedgedMethods::default().hedges(&Method::GET, &opted_out));
    }

    #[test]
    fn a_list_replaces_the_default() {
        let methods = HedgedMethods::new([Method::PUT]);
        let none = Extensions::new();
        assert!(methods.hedges(&Method::PUT, &none));
        assert!(!methods.hedges(&Method::GET, &none));
        assert!(!HedgedMethods::new([]).hedges(&Method::GET, &none));
    }
}
