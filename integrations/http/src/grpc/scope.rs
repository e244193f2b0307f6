//! The calls a layer passes through unhedged because they are outside its scope: counted
//! in the policy's [`Stats::out_of_scope`](hedging::Stats::out_of_scope), not in its
//! `calls`; the methods no name matched are kept for `GrpcHedgeLayer::unmatched` and,
//! with the feature `tracing`, each is named once in an event.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{PoisonError, RwLock};

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

/// How many methods a layer names in events, and lists in
/// [`unmatched`](crate::grpc::GrpcHedgeLayer::unmatched); later ones are counted only, so
/// a client calling many methods outside the layer's scope cannot grow them without bound.
pub(crate) const NAMED_METHODS: usize = 64;

/// Counts a layer's calls outside its scope and names their methods, once each. Shared by
/// every clone of the layer and every service it made.
#[derive(Debug, Default)]
pub(crate) struct OutOfScope {
    /// Whether a method no name matches is a `WARN`, not an `INFO`: the layer's names are a
    /// service config's, where a misspelt one leaves its method silently unhedged.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    warn_unmatched: bool,
    /// The methods no name matched, first seen first, A6's way (`package.Service/Method`):
    /// read under a shared lock, written once per method; never touched by a call in scope.
    unmatched: RwLock<Vec<String>>,
    /// Whether `unmatched` holds [`NAMED_METHODS`]: no method is added, or named, after.
    full: AtomicBool,
    /// The methods out of scope for another reason named in an event so far: off the
    /// hedged path, so a lock is cheap.
    #[cfg(feature = "tracing")]
    named: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl OutOfScope {
    /// For a layer whose names are a service config's: its unmatched methods are `WARN`s.
    #[cfg_attr(not(feature = "service-config"), allow(dead_code))]
    pub(crate) fn of_service_config() -> Self {
        OutOfScope {
            warn_unmatched: true,
            ..OutOfScope::default()
        }
    }

    /// Counts the call at `path` in `policy`'s `out_of_scope`; the first time the layer
    /// sees its method, keeps it if no name matched it and, with the feature `tracing`,
    /// says so in an event (`WARN` for a method a service config does not match, else
    /// `INFO`).
    pub(crate) fn pass<T>(&self, policy: &Policy<T>, path: &str, reason: Reason) {
        policy.count_out_of_scope();
        let first_sighting = match reason {
            Reason::Unmatched => self.first_unmatched(path),
            #[cfg(feature = "tracing")]
            _ => self.first_sighting(path),
            #[cfg(not(feature = "tracing"))]
            _ => false,
        };
        #[cfg(feature = "tracing")]
        if first_sighting {
            self.name(policy, path, reason);
        }
        #[cfg(not(feature = "tracing"))]
        let _ = (policy, first_sighting);
    }

    /// The methods kept by [`pass`](Self::pass), first seen first.
    pub(crate) fn unmatched(&self) -> Vec<String> {
        self.unmatched
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    #[cfg(feature = "tracing")]
    fn name<T>(&self, policy: &Policy<T>, path: &str, reason: Reason) {
        if reason == Reason::Unmatched && self.warn_unmatched {
            tracing::warn!(
                policy = policy.name(),
                method = path,
                "gRPC method that no name of the service config matches: its calls are sent \
                 once, unhedged, and counted in out_of_scope (GrpcHedgeLayer::unmatched lists \
                 such methods; is a name misspelt?)"
            );
            return;
        }
        tracing::info!(
            policy = policy.name(),
            method = path,
            reason = reason.as_str(),
            "gRPC method outside the layer's scope: its calls are sent once, unhedged, \
             and counted in out_of_scope"
        );
    }

    /// Whether the method at `path`, which no name matched, is new: then it is kept, while
    /// fewer than [`NAMED_METHODS`] are.
    fn first_unmatched(&self, path: &str) -> bool {
        if self.full.load(Relaxed) {
            return false;
        }
        let method = path.strip_prefix('/').unwrap_or(path);
        let known = |kept: &[String]| kept.iter().any(|kept| kept == method);
        if known(
            &self
                .unmatched
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        ) {
            return false;
        }
        let mut kept = self
            .unmatched
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= NAMED_METHODS || known(&kept) {
            return false;
        }
        kept.push(method.to_owned());
        self.full.store(kept.len() == NAMED_METHODS, Relaxed);
        true
    }

    /// Whether `path` is a method not named before, while fewer than
    /// [`NAMED_METHODS`] were.
    #[cfg(feature = "tracing")]
    fn first_sighting(&self, path: &str) -> bool {
        let mut named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
        named.len() < NAMED_METHODS && !named.contains(path) && named.insert(path.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unmatched_method_is_kept_once_first_seen_first() {
        let out_of_scope = OutOfScope::default();
        assert!(out_of_scope.first_unmatched("/kv.Store/get"));
        assert!(!out_of_scope.first_unmatched("/kv.Store/get"));
        assert!(out_of_scope.first_unmatched("/kv.Store/put"));
        assert_eq!(out_of_scope.unmatched(), ["kv.Store/get", "kv.Store/put"]);
    }

    #[test]
    fn unmatched_methods_past_the_first_64_are_not_kept() {
        let out_of_scope = OutOfScope::default();
        let kept = (0..100)
            .filter(|n| out_of_scope.first_unmatched(&format!("/kv.Store/M{n}")))
            .count();
        assert_eq!(kept, NAMED_METHODS);
        assert_eq!(out_of_scope.unmatched().len(), NAMED_METHODS);
        assert_eq!(out_of_scope.unmatched()[63], "kv.Store/M63");
    }

    #[cfg(feature = "tracing")]
    #[test]
    fn each_method_is_named_once() {
        let out_of_scope = OutOfScope::default();
        assert!(out_of_scope.first_sighting("/kv.Store/get"));
        assert!(!out_of_scope.first_sighting("/kv.Store/get"));
        assert!(out_of_scope.first_sighting("/kv.Store/put"));
    }

    #[cfg(feature = "tracing")]
    #[test]
    fn methods_past_the_first_64_are_not_named() {
        let out_of_scope = OutOfScope::default();
        let named = (0..100)
            .filter(|n| out_of_scope.first_sighting(&format!("/kv.Store/M{n}")))
            .count();
        assert_eq!(named, NAMED_METHODS);
    }
}
