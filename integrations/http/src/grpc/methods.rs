//! Which gRPC methods a layer hedges: names as A6's service config spells them
//! (`package.Service`, `package.Service/Method`), checked when they are given, and the
//! table a call's path is looked up in.

use std::collections::HashMap;
use std::fmt;

/// What is wrong with a gRPC method name (see [`MethodNameError`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MethodNameFault {
    /// The name is empty.
    Empty,
    /// The name starts with `/`, as a request path does: `"/kv.Store/Get"`.
    LeadingSlash,
    /// The name has a `/` and nothing after it: `"kv.Store/"`.
    EmptyMethod,
    /// The name has more than one `/`: `"kv/Store/Get"`.
    TooManySlashes,
    /// The name holds whitespace or a control character, which no request path carries
    /// (often a stray space from a configuration file).
    Whitespace,
}

/// A method name that is not one of gRPC A6's: `package.Service` (every method of the
/// service) or `package.Service/Method` (one method). Its message names the name and
/// what is wrong with it:
///
/// ```
/// use hedging::{timer::ManualTimer, Policy};
/// use hedging_http::grpc::{GrpcHedgeLayer, MethodNameFault};
///
/// let policy = Policy::builder().timer(ManualTimer::new()).build();
/// let error = GrpcHedgeLayer::new(policy).try_methods(["/kv.Store/Get"]).unwrap_err();
/// assert_eq!(error.fault(), MethodNameFault::LeadingSlash);
/// assert_eq!(
///     error.to_string(),
///     "gRPC method name \"/kv.Store/Get\" starts with '/': A6 names have none, as in \"kv.Store/Get\""
/// );
/// ```
///
/// Names are case-sensitive, as paths are: `"kv.store"` is a well-formed name that no
/// call to `kv.Store` matches. No check can tell; the calls it misses are counted in the
/// policy's [`Stats::out_of_scope`](hedging::Stats::out_of_scope).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodNameError {
    name: String,
    fault: MethodNameFault,
}

impl MethodNameError {
    /// The name, as it was given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What is wrong with it.
    pub fn fault(&self) -> MethodNameFault {
        self.fault
    }
}

impl fmt::Display for MethodNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        write!(f, "gRPC method name {name:?} ")?;
        match self.fault {
            MethodNameFault::Empty => f.write_str(
                "is empty: name a service (\"package.Service\") or one of its methods \
                 (\"package.Service/Method\")",
            ),
            MethodNameFault::LeadingSlash => {
                f.write_str("starts with '/': A6 names have none")?;
                match name.trim_start_matches('/') {
                    "" => Ok(()),
                    name => write!(f, ", as in {name:?}"),
                }
            }
            MethodNameFault::EmptyMethod => write!(
                f,
                "has no method after its '/': name the service alone, {:?}, for every method \
                 of it",
                name.trim_end_matches('/')
            ),
            MethodNameFault::TooManySlashes => f.write_str(
                "has more than one '/': A6 names are \"package.Service\" or \
                 \"package.Service/Method\"",
            ),
            MethodNameFault::Whitespace => f.write_str(
                "holds whitespace or a control character, which no request path carries",
            ),
        }
    }
}

impl std::error::Error for MethodNameError {}

/// `name` split into its service and, for a name of one method, the method; or what is
/// wrong with it.
pub(crate) fn parse(name: &str) -> Result<(&str, Option<&str>), MethodNameError> {
    let fault = |fault| MethodNameError {
        name: name.to_owned(),
        fault,
    };
    if name.is_empty() {
        return Err(fault(MethodNameFault::Empty));
    }
    if name.starts_with('/') {
        return Err(fault(MethodNameFault::LeadingSlash));
    }
    let (service, method) = match name.split_once('/') {
        None => (name, None),
        Some((_, method)) if method.contains('/') => {
            return Err(fault(MethodNameFault::TooManySlashes))
        }
        Some((_, "")) => return Err(fault(MethodNameFault::EmptyMethod)),
        Some((service, method)) => (service, Some(method)),
    };
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fault(MethodNameFault::Whitespace));
    }
    Ok((service, method))
}

/// Where each method's calls go, by A6's rule that the most specific name wins: a
/// method's own name, then its service's, then the default (every method).
#[derive(Clone, Debug)]
pub(crate) struct Routes<R> {
    methods: HashMap<String, R>,
    services: HashMap<String, R>,
    default: Option<R>,
}

impl<R> Default for Routes<R> {
    /// No method.
    fn default() -> Self {
        Routes {
            methods: HashMap::new(),
            services: HashMap::new(),
            default: None,
        }
    }
}

impl<R: Copy> Routes<R> {
    /// Every method to `route`.
    pub(crate) fn all(route: R) -> Self {
        Routes {
            default: Some(route),
            ..Routes::default()
        }
    }

    /// These names to `route`, or the first that is not an A6 name.
    pub(crate) fn named(
        names: impl IntoIterator<Item = impl AsRef<str>>,
        route: R,
    ) -> Result<Self, MethodNameError> {
        let mut routes = Routes::default();
        for name in names {
            let (service, method) = parse(name.as_ref())?;
            routes.insert(service, method, route);
        }
        Ok(routes)
    }

    /// `service`'s `method` (every method without one) to `route`; the route it had.
    pub(crate) fn insert(&mut self, service: &str, method: Option<&str>, route: R) -> Option<R> {
        match method {
            Some(method) => self.methods.insert(format!("{service}/{method}"), route),
            None => self.services.insert(service.to_owned(), route),
        }
    }

    /// The default, for every method no name matches, to `route`; the default it had.
    #[cfg_attr(not(feature = "service-config"), allow(dead_code))]
    pub(crate) fn insert_default(&mut self, route: R) -> Option<R> {
        self.default.replace(route)
    }

    /// The same names, each to `change` of its route.
    #[cfg_attr(not(feature = "service-config"), allow(dead_code))]
    pub(crate) fn map<S>(&self, change: impl Fn(R) -> S) -> Routes<S> {
        let changed = |routes: &HashMap<String, R>| {
            let routes = routes
                .iter()
                .map(|(name, route)| (name.clone(), change(*route)));
            routes.collect()
        };
        Routes {
            methods: changed(&self.methods),
            services: changed(&self.services),
            default: self.default.map(&change),
        }
    }

    /// Where the call at `path` (`/package.Service/Method`) goes; `None` when no name
    /// matches it. A path that is not a gRPC method's matches the default only.
    pub(crate) fn find(&self, path: &str) -> Option<R> {
        self.find_method(path.strip_prefix('/').unwrap_or_default())
    }

    /// Where a call to `method` (`package.Service/Method`) goes, as [`find`](Self::find).
    pub(crate) fn find_method(&self, method: &str) -> Option<R> {
        let named = service_of(method).and_then(|service| {
            let route = self.methods.get(method);
            route.or_else(|| self.services.get(service)).copied()
        });
        named.or(self.default)
    }
}

/// The service of `package.Service/Method`, if it is a gRPC method's full name.
fn service_of(method: &str) -> Option<&str> {
    let (service, name) = method.split_once('/')?;
    let is_method = !service.is_empty() && !name.is_empty() && !name.contains('/');
    is_method.then_some(service)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(names: &[&str]) -> Routes<()> {
        Routes::named(names, ()).unwrap()
    }

    fn fault(name: &str) -> MethodNameFault {
        parse(name).unwrap_err().fault()
    }

    #[test]
    fn method_names_match_a_whole_service() {
        let routes = named(&["shop.Catalog"]);
        assert!(routes.find("/shop.Catalog/Get").is_some());
        assert!(routes.find("/shop.Catalog/List").is_some());
        assert!(routes.find("/shop.Cart/Get").is_none());
        assert!(routes.find("/shop.CatalogAdmin/Get").is_none());
        assert!(routes.find("/other.shop.Catalog/Get").is_none());
    }

    #[test]
    fn method_names_match_one_method() {
        let routes = named(&["shop.Catalog/Get"]);
        assert!(routes.find("/shop.Catalog/Get").is_some());
        assert!(routes.find("/shop.Catalog/GetMany").is_none());
        assert!(routes.find("/shop.Catalog/List").is_none());
    }

    #[test]
    fn method_names_are_case_sensitive() {
        let routes = named(&["kv.Store/get", "kv.store"]);
        assert!(routes.find("/kv.Store/Get").is_none());
        assert!(routes.find("/kv.Store/Put").is_none());
    }

    #[test]
    fn the_most_specific_name_wins() {
        let mut routes = Routes::all(0);
        routes.insert("kv.Store", None, 1);
        routes.insert("kv.Store", Some("Get"), 2);
        assert_eq!(routes.find("/kv.Store/Get"), Some(2));
        assert_eq!(routes.find("/kv.Store/Put"), Some(1));
        assert_eq!(routes.find("/kv.Other/Get"), Some(0));
        assert_eq!(routes.find("/not a grpc path"), Some(0));
    }

    #[test]
    fn paths_that_are_not_grpc_match_no_name() {
        let routes = named(&["shop.Catalog"]);
        for path in [
            "",
            "/",
            "shop.Catalog/Get",
            "/shop.Catalog",
            "/shop.Catalog/",
            "/shop.Catalog/Get/More",
            "//Get",
        ] {
            assert!(routes.find(path).is_none(), "{path:?}");
        }
    }

    #[test]
    fn no_names_match_nothing_and_all_matches_everything() {
        assert!(Routes::<()>::default().find("/shop.Catalog/Get").is_none());
        assert!(Routes::all(()).find("/shop.Catalog/Get").is_some());
    }

    #[test]
    fn a6_names_parse_into_service_and_method() {
        assert_eq!(parse("kv.Store").unwrap(), ("kv.Store", None));
        assert_eq!(parse("kv.Store/Get").unwrap(), ("kv.Store", Some("Get")));
        assert_eq!(
            parse("Store").unwrap(),
            ("Store", None),
            "no package is well formed"
        );
    }

    #[test]
    fn malformed_names_are_refused_with_their_fault() {
        assert_eq!(fault(""), MethodNameFault::Empty);
        assert_eq!(fault("/kv.Store/Get"), MethodNameFault::LeadingSlash);
        assert_eq!(fault("/kv.Store"), MethodNameFault::LeadingSlash);
        assert_eq!(fault("/"), MethodNameFault::LeadingSlash);
        assert_eq!(fault("kv.Store/"), MethodNameFault::EmptyMethod);
        assert_eq!(fault("kv/Store/Get"), MethodNameFault::TooManySlashes);
        assert_eq!(fault("kv.Store/Get/"), MethodNameFault::TooManySlashes);
        assert_eq!(fault("kv.Store//Get"), MethodNameFault::TooManySlashes);
        assert_eq!(fault("kv.Store "), MethodNameFault::Whitespace);
        assert_eq!(fault("kv.Store/Get\n"), MethodNameFault::Whitespace);
    }

    #[test]
    fn a_name_is_refused_whole_among_good_ones() {
        let refused = Routes::named(["kv.Store", "kv.Store/"], ()).unwrap_err();
        assert_eq!(refused.name(), "kv.Store/");
    }
}
