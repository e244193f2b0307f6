//! Which gRPC methods are hedged, named as A6's service config names them.

use std::collections::HashSet;

/// The hedged methods: `package.Service` (every method of it) or
/// `package.Service/Method`, or every method.
#[derive(Clone, Debug, Default)]
pub(crate) struct Methods {
    all: bool,
    names: HashSet<String>,
}

impl Methods {
    /// Exactly these names; a leading `/` (as in a request path) is ignored.
    pub(crate) fn named(names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let names = names
            .into_iter()
            .map(|name| {
                let name: String = name.into();
                let name = name.strip_prefix('/').unwrap_or(&name);
                // `package.Service/` names the whole service.
                name.strip_suffix('/').unwrap_or(name).to_owned()
            })
            .collect();
        Methods { all: false, names }
    }

    /// Every method.
    pub(crate) fn all() -> Self {
        Methods {
            all: true,
            names: HashSet::new(),
        }
    }

    /// Whether the call at `path` (`/package.Service/Method`) is hedged.
    pub(crate) fn contains(&self, path: &str) -> bool {
        if self.all {
            return true;
        }
        let Some(full) = path.strip_prefix('/') else {
            return false;
        };
        let Some((service, method)) = full.rsplit_once('/') else {
            return false;
        };
        !service.is_empty()
            && !method.is_empty()
            && (self.names.contains(full) || self.names.contains(service))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_match_a_whole_service() {
        let methods = Methods::named(["shop.Catalog"]);
        assert!(methods.contains("/shop.Catalog/Get"));
        assert!(methods.contains("/shop.Catalog/List"));
        assert!(!methods.contains("/shop.Cart/Get"));
        assert!(!methods.contains("/shop.CatalogAdmin/Get"));
        assert!(!methods.contains("/other.shop.Catalog/Get"));
    }

    #[test]
    fn method_names_match_one_method() {
        let methods = Methods::named(["shop.Catalog/Get"]);
        assert!(methods.contains("/shop.Catalog/Get"));
        assert!(!methods.contains("/shop.Catalog/GetMany"));
        assert!(!methods.contains("/shop.Catalog/List"));
    }

    #[test]
    fn method_names_accept_a_leading_or_trailing_slash() {
        let methods = Methods::named(["/shop.Catalog/Get", "shop.Cart/"]);
        assert!(methods.contains("/shop.Catalog/Get"));
        assert!(methods.contains("/shop.Cart/Add"));
    }

    #[test]
    fn method_names_reject_paths_that_are_not_grpc() {
        let methods = Methods::named(["shop.Catalog"]);
        for path in [
            "",
            "/",
            "shop.Catalog/Get",
            "/shop.Catalog",
            "/shop.Catalog/",
            "//Get",
        ] {
            assert!(!methods.contains(path), "{path:?}");
        }
    }

    #[test]
    fn no_method_names_hedge_nothing_and_all_hedges_everything() {
        assert!(!Methods::default().contains("/shop.Catalog/Get"));
        assert!(Methods::all().contains("/shop.Catalog/Get"));
    }
}
