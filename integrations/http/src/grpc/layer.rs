//! [`GrpcHedgeLayer`]: which methods are hedged, by which policy, with which verdicts.

use std::fmt;
use std::sync::Arc;

use hedging::Policy;

use crate::body::DEFAULT_MAX_REPLAY_BYTES;
use crate::key::KeyBy;

use super::methods::{MethodNameError, Routes};
use super::scope::OutOfScope;
use super::GrpcVerdict;

/// Where a layer sends a call whose method one of its names matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Hedged by the layer's policy, with its verdicts.
    Layer,
    /// Hedged by this entry of the layer's method table.
    #[cfg_attr(not(feature = "service-config"), allow(dead_code))]
    Entry(usize),
    /// Sent once: its method config has no hedging policy.
    #[cfg_attr(not(feature = "service-config"), allow(dead_code))]
    Unhedged,
}

/// A policy of a layer's method table, with the verdicts its methods' copies get.
struct Entry<T> {
    policy: Policy<T>,
    verdict: GrpcVerdict,
}

/// A [`Layer`](tower_layer::Layer) that hedges gRPC calls as gRPC's design A6 does:
/// [`GrpcHedge`](super::GrpcHedge) around the inner service (a tonic `Channel`, or any
/// `Service<http::Request<B>>` speaking gRPC over HTTP/2).
///
/// Only the methods named with [`methods`](GrpcHedgeLayer::methods) are hedged (or
/// every one, with [`all_methods`](GrpcHedgeLayer::all_methods)); any other call is sent
/// once, straight to the inner service, and counted in the policy's
/// [`Stats::out_of_scope`](hedging::Stats::out_of_scope), not in its `calls`. The
/// policy's `max_copies` is A6's `maxAttempts` (capped at [`MAX_ATTEMPTS`](super::MAX_ATTEMPTS)),
/// its `delay` A6's `hedgingDelay`.
///
/// ```
/// use std::time::Duration;
/// use hedging::{timer::TokioTimer, Policy};
/// use hedging_http::grpc::GrpcHedgeLayer;
///
/// let policy = Policy::builder()
///     .max_copies(3)                      // maxAttempts
///     .delay(Duration::from_millis(10))   // hedgingDelay
///     .timer(TokioTimer::new())
///     .build();
/// let layer = GrpcHedgeLayer::new(policy)
///     .methods(["shop.Catalog", "shop.Cart/Get"])
///     .non_fatal_codes([14, 13]); // UNAVAILABLE, INTERNAL
/// # let _ = layer;
/// ```
///
/// # Keys
///
/// On a policy with [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys), each call
/// is keyed by its full method path, a `&str` (`"/shop.Catalog/Get"`), so one layer over
/// a fast method and a slow one learns a delay per method:
/// `policy.delay_for("/shop.Catalog/Get")` is the delay such a call gets now.
/// [`key_by`](GrpcHedgeLayer::key_by) keys otherwise. On a policy without keys the key is
/// never hashed.
///
/// With the feature `service-config`, `GrpcHedgeLayer::from_service_config` builds the
/// layer from gRPC's service config instead: a policy per method config, each method
/// hedged by the most specific one (see [the module docs](super#service-config)).
///
/// # Is hedging on?
///
/// `policy.stats().calls` grows with every call the layer hedges (a call sent once
/// because its body was too large for replay included). `stats().out_of_scope` grows with
/// the calls no name matched (or that carry [`NoHedge`](crate::NoHedge)): if it grows
/// while `calls` does not, the names match nothing. Names are case-sensitive, as paths
/// are: `"kv.Store/get"` misses `/kv.Store/Get`. With the feature `tracing`, the layer
/// names each method it passed through, once, in an `INFO` event. On a layer from a
/// service config, each method's policy ([`policy_for`](GrpcHedgeLayer::policy_for))
/// counts its calls, and the layer's own [`policy`](GrpcHedgeLayer::policy) the rest.
///
/// # Defaults
///
/// - methods: none (A6 hedges only the methods its config names);
/// - `non_fatal_codes`: `[14]` (`UNAVAILABLE`);
/// - `max_replay_bytes`: 64 KiB.
pub struct GrpcHedgeLayer<T> {
    /// Hedges the methods of [`Route::Layer`]; counts the calls out of scope.
    pub(crate) policy: Policy<T>,
    verdict: GrpcVerdict,
    pub(crate) routes: Arc<Routes<Route>>,
    /// The policies of [`Route::Entry`]: a service config's, one per method config.
    entries: Arc<[Entry<T>]>,
    pub(crate) max_replay_bytes: usize,
    pub(crate) out_of_scope: Arc<OutOfScope>,
    pub(crate) key_by: KeyBy<T>,
}

impl<T> GrpcHedgeLayer<T> {
    /// Hedges by `policy` the methods named later with
    /// [`methods`](GrpcHedgeLayer::methods); none until then.
    pub fn new(policy: Policy<T>) -> Self {
        GrpcHedgeLayer {
            policy,
            verdict: GrpcVerdict::default(),
            routes: Arc::new(Routes::default()),
            entries: Arc::new([]),
            max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
            out_of_scope: Arc::new(OutOfScope::default()),
            key_by: KeyBy::default(),
        }
    }

    /// Hedges these methods only, named as A6's service config names them:
    /// `package.Service` for every method of a service, `package.Service/Method` for one.
    /// Replaces earlier names and [`all_methods`](GrpcHedgeLayer::all_methods) (and, on a
    /// layer made by `from_service_config`, its methods' policies: the names are hedged by
    /// [`policy`](GrpcHedgeLayer::policy)).
    ///
    /// # Panics
    ///
    /// If a name is not of that form (empty, with a leading `/`, a `/` with no method
    /// after it, more than one `/`, whitespace): names written in the code are a typo to
    /// fix before the first call, as with `http::HeaderName::from_static`. Names read
    /// from a file or flag go through [`try_methods`](GrpcHedgeLayer::try_methods), which
    /// returns the fault instead.
    ///
    /// ```should_panic
    /// # use hedging::{timer::ManualTimer, Policy};
    /// # use hedging_http::grpc::GrpcHedgeLayer;
    /// # let policy = Policy::builder().timer(ManualTimer::new()).build();
    /// // panics: gRPC method name "/kv.Store/Get" starts with '/': A6 names have none, as in "kv.Store/Get"
    /// GrpcHedgeLayer::new(policy).methods(["/kv.Store/Get"]);
    /// ```
    #[track_caller]
    pub fn methods(self, names: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        match self.try_methods(names) {
            Ok(layer) => layer,
            Err(error) => panic!("{error}"),
        }
    }

    /// [`methods`](GrpcHedgeLayer::methods), for names that are data (a configuration
    /// file, a flag): the first name that is not an A6 name is returned as a
    /// [`MethodNameError`] saying what is wrong with it.
    ///
    /// ```
    /// # use hedging::{timer::ManualTimer, Policy};
    /// # use hedging_http::grpc::GrpcHedgeLayer;
    /// # let policy = Policy::builder().timer(ManualTimer::new()).build();
    /// let names = "shop.Catalog, shop.Cart/"; // from a config file
    /// let error = GrpcHedgeLayer::new(policy)
    ///     .try_methods(names.split(',').map(str::trim))
    ///     .unwrap_err();
    /// assert_eq!(
    ///     error.to_string(),
    ///     "gRPC method name \"shop.Cart/\" has no method after its '/': name the service \
    ///      alone, \"shop.Cart\", for every method of it"
    /// );
    /// ```
    pub fn try_methods(
        self,
        names: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Self, MethodNameError> {
        let routes = Routes::named(names, Route::Layer)?;
        Ok(self.routed(routes))
    }

    /// Hedges every method (A6's method config with an empty name). Only for services
    /// whose every method is safe to run twice. Replaces earlier names, as
    /// [`methods`](GrpcHedgeLayer::methods) does.
    pub fn all_methods(self) -> Self {
        self.routed(Routes::all(Route::Layer))
    }

    /// The layer with these routes to its own policy only.
    fn routed(mut self, routes: Routes<Route>) -> Self {
        self.routes = Arc::new(routes);
        self.entries = Arc::new([]);
        self.out_of_scope = Arc::new(OutOfScope::default());
        self
    }

    /// The gRPC status codes after which other copies may still succeed (A6's
    /// `nonFatalStatusCodes`), as integers: `tonic::Code::Unavailable as i32` is `14`.
    /// Replaces the default `[14]`. Any other status ends the call with it. For the
    /// methods hedged by [`policy`](GrpcHedgeLayer::policy); those of a service config
    /// keep its `nonFatalStatusCodes`.
    pub fn non_fatal_codes(mut self, codes: impl IntoIterator<Item = i32>) -> Self {
        self.verdict = GrpcVerdict::new(codes);
        self
    }

    crate::accessors::define_layer_settings!(max_replay_bytes);

    crate::accessors::define_layer_settings!(
        key_by,
        /// Keys each call by what `key` makes of its request's head, replacing the default
        /// key, the call's full method path (see [Keys](Self#keys)). Called for every call the
        /// layer hedges; its key is hashed only on a policy with keys.
        ///
        /// ```
        /// # use hedging::{timer::ManualTimer, Policy};
        /// # use hedging_http::grpc::GrpcHedgeLayer;
        /// # let policy = Policy::builder().adaptive_delay(0.95).adaptive_keys(64).timer(ManualTimer::new()).build();
        /// // One delay per method and tenant, as the client names its tenant in a header.
        /// let layer = GrpcHedgeLayer::new(policy)
        ///     .all_methods()
        ///     .key_by(|head: &http::request::Parts| {
        ///         let tenant = head.headers.get("x-tenant").map(|t| t.as_bytes().to_vec());
        ///         (head.uri.path().to_owned(), tenant)
        ///     });
        /// # let _ = layer;
        /// ```
    );

    /// The layer's own policy: the one the methods named by
    /// [`methods`](GrpcHedgeLayer::methods) are hedged by, and the one that counts the
    /// calls the layer passes through, outside its scope, in
    /// [`Stats::out_of_scope`](hedging::Stats::out_of_scope). On a layer made by
    /// `from_service_config` (feature `service-config`) it hedges nothing: each method's
    /// policy is [`policy_for`](GrpcHedgeLayer::policy_for)'s.
    pub fn policy(&self) -> &Policy<T> {
        &self.policy
    }

    /// The policy a call to `method` (`package.Service/Method`, as A6 names one method)
    /// is hedged by; `None` for a method the layer sends once, outside its scope.
    ///
    /// ```
    /// # use hedging::{timer::ManualTimer, Policy};
    /// # use hedging_http::grpc::GrpcHedgeLayer;
    /// # let policy = Policy::builder().timer(ManualTimer::new()).build();
    /// let layer = GrpcHedgeLayer::new(policy).methods(["kv.Store"]);
    /// assert!(layer.policy_for("kv.Store/Get").is_some());
    /// assert!(layer.policy_for("kv.Store/get").is_some(), "any method of kv.Store");
    /// assert!(layer.policy_for("kv.store/Get").is_none(), "case-sensitive");
    /// ```
    pub fn policy_for(&self, method: &str) -> Option<&Policy<T>> {
        let route = self.routes.find_method(method)?;
        self.hedged_by(route).map(|(policy, _)| policy)
    }

    /// The methods (`package.Service/Method`) that no name of the layer matched, so their
    /// calls went straight to the inner service, unhedged: each once, first seen first,
    /// from every clone of the layer and every service it made. At most
    /// 64 are kept (later ones are counted in `out_of_scope` only); a call in scope never
    /// touches the list.
    ///
    /// On a layer made by `from_service_config` (feature `service-config`), each is also a
    /// `WARN` event, with the feature `tracing` (on by default), the first time the layer
    /// sees it: a name misspelt in a service config is otherwise silent. Other layers say it
    /// in an `INFO` event.
    ///
    /// ```
    /// # use hedging::{timer::ManualTimer, Policy};
    /// # use hedging_http::grpc::GrpcHedgeLayer;
    /// # let policy = Policy::builder().timer(ManualTimer::new()).build();
    /// let layer = GrpcHedgeLayer::new(policy).methods(["helloworld.Greeter/SayHelo"]);
    /// // ... calls to /helloworld.Greeter/SayHello, sent unhedged ...
    /// assert!(layer.unmatched().is_empty(), "no call seen yet");
    /// ```
    pub fn unmatched(&self) -> Vec<String> {
        self.out_of_scope.unmatched()
    }

    /// Every policy of the layer, each once: its own first, then a service config's, one
    /// per method config with a hedging policy and a name, in the config's order. Give each to
    /// `hedging_opentelemetry::register`, or sum their stats.
    pub fn policies(&self) -> impl Iterator<Item = &Policy<T>> {
        let entries = self.entries.iter().map(|entry| &entry.policy);
        std::iter::once(&self.policy).chain(entries)
    }

    /// The policy and verdicts of a call that takes `route`; `None` for one sent once.
    pub(crate) fn hedged_by(&self, route: Route) -> Option<(&Policy<T>, &GrpcVerdict)> {
        match route {
            Route::Layer => Some((&self.policy, &self.verdict)),
            Route::Entry(index) => {
                let entry = &self.entries[index];
                Some((&entry.policy, &entry.verdict))
            }
            Route::Unhedged => None,
        }
    }
}

#[cfg(feature = "service-config")]
#[cfg_attr(docsrs, doc(cfg(feature = "service-config")))]
impl<T: hedging::timer::Timer> GrpcHedgeLayer<T> {
    /// Hedges each method by its method config's `hedgingPolicy` (feature
    /// `service-config`): a policy per method config, with `max_copies` = `maxAttempts`,
    /// `delay` = `hedgingDelay`, named after its method config's names (`*` for the
    /// default), and its `nonFatalStatusCodes` as the verdicts (none when absent, as in
    /// A6: every failure ends the call, a transport error, `UNAVAILABLE`, included); every
    /// policy on `timer`
    /// and, when the config has `retryThrottling`, sharing one
    /// [`Budget::throttling`](hedging::Budget::throttling) made for this layer (A6's one
    /// per channel: clones of the layer share it).
    ///
    /// A method whose method config has no `hedgingPolicy`, or that no name matches, is
    /// sent once, straight to the inner service, and counted in the `out_of_scope` of the
    /// layer's own [`policy`](GrpcHedgeLayer::policy), which hedges nothing. One that no
    /// name matches is a `WARN` event the first time the layer sees it (feature `tracing`),
    /// and listed by [`unmatched`](GrpcHedgeLayer::unmatched).
    ///
    /// ```
    /// use hedging::timer::TokioTimer;
    /// use hedging_http::grpc::{GrpcHedgeLayer, ServiceConfig};
    ///
    /// let config: ServiceConfig = r#"{
    ///   "methodConfig": [
    ///     {"name": [{"service": "kv.Store", "method": "Get"}],
    ///      "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.01s", "nonFatalStatusCodes": ["UNAVAILABLE"]}},
    ///     {"name": [{"service": "kv.Store"}],
    ///      "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0.05s"}}
    ///   ],
    ///   "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
    /// }"#.parse()?;
    /// let layer = GrpcHedgeLayer::from_service_config(&config, TokioTimer::new());
    ///
    /// assert_eq!(layer.policy_for("kv.Store/Get").unwrap().max_copies(), 3);
    /// assert_eq!(layer.policy_for("kv.Store/Put").unwrap().max_copies(), 2);
    /// assert!(layer.policy_for("kv.Other/Get").is_none());
    /// # Ok::<(), hedging_http::grpc::ServiceConfigError>(())
    /// ```
    pub fn from_service_config(config: &super::ServiceConfig, timer: T) -> Self {
        let throttling = config.retry_throttling().map(|t| t.to_budget());
        let mut entries = Vec::new();
        // Each method config's route, by its index in the config.
        let mut routes_of = Vec::new();
        for method_config in config.method_configs() {
            let route = match method_config.hedging_policy() {
                // A method config without names applies to nothing: no policy for it.
                Some(hedging) if !method_config.names().is_empty() => {
                    let mut builder = hedging.to_builder().name(method_config.label());
                    if let Some(throttling) = &throttling {
                        builder = builder.budget(throttling);
                    }
                    let codes = hedging.non_fatal_status_codes().iter().copied();
                    entries.push(Entry {
                        policy: builder.timer(timer.clone()).build(),
                        verdict: GrpcVerdict::new(codes),
                    });
                    Route::Entry(entries.len() - 1)
                }
                _ => Route::Unhedged,
            };
            routes_of.push(route);
        }
        let routes = config.routes().map(|index| routes_of[index]);
        let policy = Policy::builder()
            .max_copies(1)
            .name("out of scope")
            .timer(timer)
            .build();
        GrpcHedgeLayer {
            routes: Arc::new(routes),
            entries: entries.into(),
            out_of_scope: Arc::new(OutOfScope::of_service_config()),
            ..GrpcHedgeLayer::new(policy)
        }
    }
}

impl<T> Clone for GrpcHedgeLayer<T> {
    fn clone(&self) -> Self {
        GrpcHedgeLayer {
            policy: self.policy.clone(),
            verdict: self.verdict.clone(),
            routes: Arc::clone(&self.routes),
            entries: Arc::clone(&self.entries),
            max_replay_bytes: self.max_replay_bytes,
            out_of_scope: Arc::clone(&self.out_of_scope),
            key_by: self.key_by.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Entry<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("policy", &self.policy)
            .field("verdict", &self.verdict)
            .finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for GrpcHedgeLayer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcHedgeLayer")
            .field("policy", &self.policy)
            .field("verdict", &self.verdict)
            .field("routes", &self.routes)
            .field("entries", &self.entries)
            .field("max_replay_bytes", &self.max_replay_bytes)
            .field("key", &self.key_by)
            .finish_non_exhaustive()
    }
}
