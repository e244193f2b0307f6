//! The calls a layer passes through unhedged because they are outside its scope: counted
//! in the policy's [`Stats::out_of_scope`](hedging::Stats::out_of_scope), not in its
//! `calls`, and, with the feature `tracing`, named once per method in an event.

use hedging::Policy;

/// Why a call was outside the layer's scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// No name the layer was given matches its method.
    Unmatched,
    /// The service config's method config for it has no hedging policy.
    #[cfg_attr(not(feature = "service-config"), allow(dead_code))]
    WithoutHedgingPolicy,
    /// It carries the [`NoHedge`](crate::NoHedge) extension.
    OptedOut,
}

impl Reason {
    #[cfg(feature = "tracing")]
    fn as_str(self) -> &'static str {
        match self {
            Reason::Unmatched => "no name the layer was given matches the method",
            Reason::WithoutHedgingPolicy => "its method config has no hedgingPolicy",
            Reason::OptedOut => "the request carries NoHedge",
        }
    }
}

/// How many methods a layer names in events; later ones are counted only, so a client
/// calling many methods outside the layer's scope cannot grow the set without bound.
#[cfg(feature = "tracing")]
const NAMED_METHODS: usize = 64;

/// Counts a layer's calls outside its scope and names their methods, once each. Shared by
/// every clone of the layer and every service it made.
#[derive(Debug, Default)]
pub(crate) struct OutOfScope {
    /// The methods named in an event so far: off the hedged path, so a lock is cheap.
    #[cfg(feature = "tracing")]
    named: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl OutOfScope {
    /// Counts the call at `path` in `policy`'s `out_of_scope`; with the feature `tracing`,
    /// says so in an `INFO` event the first time the layer sees its method.
    pub(crate) fn pass<T>(&self, policy: &Policy<T>, path: &str, reason: Reason) {
        policy.count_out_of_scope();
        #[cfg(feature = "tracing")]
        self.name_once(policy, path, reason);
        #[cfg(not(feature = "tracing"))]
        let _ = (path, reason);
    }

    #[cfg(feature = "tracing")]
    fn name_once<T>(&self, policy: &Policy<T>, path: &str, reason: Reason) {
        if self.first_sighting(path) {
            tracing::info!(
                policy = policy.name(),
                method = path,
                reason = reason.as_str(),
                "gRPC method outside the layer's scope: its calls are sent once, unhedged, \
                 and counted in out_of_scope"
            );
        }
    }

    /// Whether `path` is a method not named before, while fewer than
    /// [`NAMED_METHODS`] were.
    #[cfg(feature = "tracing")]
    fn first_sighting(&self, path: &str) -> bool {
        let mut named = self
            .named
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        named.len() < NAMED_METHODS && !named.contains(path) && named.insert(path.to_owned())
    }
}

#[cfg(all(test, feature = "tracing"))]
mod tests {
    use super::*;

    #[test]
    fn each_method_is_named_once() {
        let out_of_scope = OutOfScope::default();
        assert!(out_of_scope.first_sighting("/kv.Store/get"));
        assert!(!out_of_scope.first_sighting("/kv.Store/get"));
        assert!(out_of_scope.first_sighting("/kv.Store/put"));
    }

    #[test]
    fn methods_past_the_first_64_are_not_named() {
        let out_of_scope = OutOfScope::default();
        let named = (0..100)
            .filter(|n| out_of_scope.first_sighting(&format!("/kv.Store/M{n}")))
            .count();
        assert_eq!(named, NAMED_METHODS);
    }
}
