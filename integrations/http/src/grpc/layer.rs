//! [`GrpcHedgeLayer`]: which methods are hedged, by which policy, with which verdicts.

use std::fmt;
use std::sync::Arc;

use hedging::Policy;
use tower_layer::Layer;

use crate::body::DEFAULT_MAX_REPLAY_BYTES;

use super::methods::{MethodNameError, Routes};
use super::scope::OutOfScope;
use super::service::GrpcHedge;
use super::GrpcVerdict;

/// Where a layer sends a call whose method one of its names matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Hedged by the layer's policy, with its verdicts.
    Layer,
}

/// A [`Layer`] that hedges gRPC calls as gRPC's design A6 does: [`GrpcHedge`] around
/// the inner service (a tonic `Channel`, or any `Service<http::Request<B>>` speaking
/// gRPC over HTTP/2).
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
/// # Is hedging on?
///
/// `policy.stats().calls` grows with every call the layer hedges (a call sent once
/// because its body was too large for replay included). `stats().out_of_scope` grows with
/// the calls no name matched (or that carry [`NoHedge`](crate::NoHedge)): if it grows
/// while `calls` does not, the names match nothing. Names are case-sensitive, as paths
/// are: `"kv.Store/get"` misses `/kv.Store/Get`. With the feature `tracing`, the layer
/// names each method it passed through, once, in an `INFO` event.
///
/// # Defaults
///
/// - methods: none (A6 hedges only the methods its config names);
/// - `non_fatal_codes`: `[14]` (`UNAVAILABLE`);
/// - `max_replay_bytes`: 64 KiB.
pub struct GrpcHedgeLayer<T> {
    pub(crate) policy: Policy<T>,
    pub(crate) routes: Arc<Routes<Route>>,
    pub(crate) verdict: GrpcVerdict,
    pub(crate) max_replay_bytes: usize,
    pub(crate) out_of_scope: Arc<OutOfScope>,
}

impl<T> GrpcHedgeLayer<T> {
    /// Hedges by `policy` the methods named later with
    /// [`methods`](GrpcHedgeLayer::methods); none until then.
    pub fn new(policy: Policy<T>) -> Self {
        GrpcHedgeLayer {
            policy,
            routes: Arc::new(Routes::default()),
            verdict: GrpcVerdict::default(),
            max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
            out_of_scope: Arc::new(OutOfScope::default()),
        }
    }

    /// Hedges these methods only, named as A6's service config names them:
    /// `package.Service` for every method of a service, `package.Service/Method` for one.
    /// Replaces earlier names and [`all_methods`](GrpcHedgeLayer::all_methods).
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
        mut self,
        names: impl IntoIterator<Item = impl AsRef<str>>,
    ) -> Result<Self, MethodNameError> {
        self.routes = Arc::new(Routes::named(names, Route::Layer)?);
        Ok(self)
    }

    /// Hedges every method (A6's method config with an empty name). Only for services
    /// whose every method is safe to run twice.
    pub fn all_methods(mut self) -> Self {
        self.routes = Arc::new(Routes::all(Route::Layer));
        self
    }

    /// The gRPC status codes after which other copies may still succeed (A6's
    /// `nonFatalStatusCodes`), as integers: `tonic::Code::Unavailable as i32` is `14`.
    /// Replaces the default `[14]`. Any other status ends the call with it.
    pub fn non_fatal_codes(mut self, codes: impl IntoIterator<Item = i32>) -> Self {
        self.verdict = GrpcVerdict::new(codes);
        self
    }

    crate::accessors::define_layer_settings!();
}

impl<S, T> Layer<S> for GrpcHedgeLayer<T> {
    type Service = GrpcHedge<S, T>;

    fn layer(&self, inner: S) -> Self::Service {
        GrpcHedge {
            inner,
            layer: self.clone(),
        }
    }
}

impl<T> Clone for GrpcHedgeLayer<T> {
    fn clone(&self) -> Self {
        GrpcHedgeLayer {
            policy: self.policy.clone(),
            routes: Arc::clone(&self.routes),
            verdict: self.verdict.clone(),
            max_replay_bytes: self.max_replay_bytes,
            out_of_scope: Arc::clone(&self.out_of_scope),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for GrpcHedgeLayer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcHedgeLayer")
            .field("policy", &self.policy)
            .field("routes", &self.routes)
            .field("verdict", &self.verdict)
            .field("max_replay_bytes", &self.max_replay_bytes)
            .finish_non_exhaustive()
    }
}
