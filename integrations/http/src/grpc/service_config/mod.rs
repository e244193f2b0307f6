//! [`ServiceConfig`] (feature `service-config`): the hedging part of gRPC's service
//! config, read from its JSON, for
//! [`GrpcHedgeLayer::from_service_config`](super::GrpcHedgeLayer::from_service_config).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use hedging::{Budget, Policy, PolicyBuilder};

use super::methods::Routes;

mod codes;
mod duration;
mod parse;

/// gRPC's service config, as far as hedging goes: which methods are hedged by which
/// `hedgingPolicy`, and the channel's `retryThrottling`.
///
/// ```
/// use std::time::Duration;
/// use hedging_http::grpc::ServiceConfig;
///
/// let config = ServiceConfig::from_json(r#"{
///   "methodConfig": [{
///     "name": [{"service": "kv.Store", "method": "Get"}, {"service": "kv.Catalog"}],
///     "hedgingPolicy": {
///       "maxAttempts": 3,
///       "hedgingDelay": "0.02s",
///       "nonFatalStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
///     }
///   }],
///   "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
/// }"#).unwrap();
///
/// let get = config.hedging_policy("kv.Store/Get").unwrap();
/// assert_eq!(get.max_attempts(), 3);
/// assert_eq!(get.hedging_delay(), Duration::from_millis(20));
/// assert_eq!(get.non_fatal_status_codes(), [14, 8]);
/// assert!(config.hedging_policy("kv.Store/Put").is_none(), "no name matches it");
/// assert_eq!(config.retry_throttling().unwrap().max_tokens(), 10.0);
/// ```
///
/// # What is read, and checked
///
/// As gRPC reads it, and rejected whole, with an error naming the field, where gRPC
/// rejects it:
///
/// - `methodConfig[].name[]`: `{"service": "kv.Store", "method": "Get"}` for one method,
///   `{"service": "kv.Store"}` for every method of a service, `{}` for every method (the
///   default). A call takes the most specific: its method's, else its service's, else the
///   default. A name given twice, in one method config or two, and a `method` without a
///   `service` are rejected. So is a name no call can match: a `service` or `method`
///   with a `/`, whitespace or a control character (gRPC would take it and never match
///   it), refused by that field and the value written in it
///   (`methodConfig[0].name[0].method = "/Get" holds a '/': ...`).
/// - `hedgingPolicy`: `maxAttempts` (required, at least 2; above 5 counts as 5, A6's
///   cap), `hedgingDelay` (required, as grpc-java requires it; protobuf's JSON form,
///   `"0.1s"`, `"1.000000001s"`, at least `"0s"`, which sends every copy at once) and
///   `nonFatalStatusCodes` (names as `"UNAVAILABLE"` or integers; not `OK`; none when
///   absent, as in A6: every failure is then fatal).
/// - A method config with both a `retryPolicy` and a `hedgingPolicy` is rejected (they
///   are a `oneof`). One with a `retryPolicy` only hedges nothing: retries are not
///   implemented here, and the policy's contents are not checked.
/// - `retryThrottling`: `maxTokens` in `(0, 1000]`, `tokenRatio` above 0, both required;
///   each is kept to three decimals (truncated, as grpc-java keeps them), at least 0.001.
///
/// Numbers may be written as JSON strings (`"3"`), as protobuf's JSON form allows, and a
/// `null` field is an absent one.
///
/// # Unknown fields are ignored
///
/// As gRPC ignores them: a service config is forward compatible, so a field this crate
/// does not know (`loadBalancingConfig`, `timeout`, `waitForReady`, a field added to gRPC
/// later) is skipped, not refused. A misspelt field is skipped too (`"hedging_policy"`,
/// `"maxattempts"`): its methods go unhedged, and the layer counts them in
/// [`Stats::out_of_scope`](hedging::Stats::out_of_scope).
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    method_configs: Vec<MethodConfig>,
    /// Each name to the index of its method config.
    routes: Routes<usize>,
    retry_throttling: Option<RetryThrottling>,
}

impl ServiceConfig {
    /// Reads a service config from its JSON; see [What is read](ServiceConfig#what-is-read-and-checked).
    ///
    /// ```
    /// use hedging_http::grpc::ServiceConfig;
    ///
    /// let error = ServiceConfig::from_json(
    ///     r#"{"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 1, "hedgingDelay": "0s"}}]}"#,
    /// )
    /// .unwrap_err();
    /// assert_eq!(error.field(), "methodConfig[0].hedgingPolicy.maxAttempts");
    /// assert_eq!(
    ///     error.to_string(),
    ///     "methodConfig[0].hedgingPolicy.maxAttempts = 1 is out of range: expected 2 or more (more than 5 counts as 5)"
    /// );
    /// ```
    pub fn from_json(json: &str) -> Result<ServiceConfig, ServiceConfigError> {
        parse::service_config(json)
    }

    /// Every method config, in the order of the JSON.
    pub fn method_configs(&self) -> &[MethodConfig] {
        &self.method_configs
    }

    /// The method config a call to `method` (`package.Service/Method`) takes: its own
    /// name's, else its service's, else the default; `None` when none applies.
    pub fn method_config(&self, method: &str) -> Option<&MethodConfig> {
        let index = self.routes.find_method(method)?;
        Some(&self.method_configs[index])
    }

    /// The hedging policy of a call to `method` (`package.Service/Method`); `None` when no
    /// method config applies or the one that does has no `hedgingPolicy`.
    pub fn hedging_policy(&self, method: &str) -> Option<&HedgingPolicy> {
        self.method_config(method)?.hedging_policy()
    }

    /// The channel's `retryThrottling`, if it has one.
    pub fn retry_throttling(&self) -> Option<RetryThrottling> {
        self.retry_throttling
    }

    /// Each name to the index of its method config.
    pub(crate) fn routes(&self) -> &Routes<usize> {
        &self.routes
    }
}

impl FromStr for ServiceConfig {
    type Err = ServiceConfigError;

    /// [`ServiceConfig::from_json`].
    fn from_str(json: &str) -> Result<Self, ServiceConfigError> {
        ServiceConfig::from_json(json)
    }
}

/// One entry of `methodConfig`: the methods it names and their hedging policy.
#[derive(Clone, Debug, PartialEq)]
pub struct MethodConfig {
    names: Vec<String>,
    hedging_policy: Option<HedgingPolicy>,
    retry_policy: bool,
}

impl MethodConfig {
    /// The names, as A6 spells them: `"kv.Store/Get"`, `"kv.Store"`, and `""` for the
    /// default.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Its `hedgingPolicy`, if it has one.
    pub fn hedging_policy(&self) -> Option<&HedgingPolicy> {
        self.hedging_policy.as_ref()
    }

    /// Whether it has a `retryPolicy`: its methods are then not hedged (retries are not
    /// implemented here).
    pub fn has_retry_policy(&self) -> bool {
        self.retry_policy
    }

    /// The label of its policy: its names, `*` for the default.
    pub(crate) fn label(&self) -> String {
        let names = self.names.iter().map(|name| match name.as_str() {
            "" => "*",
            name => name,
        });
        names.collect::<Vec<_>>().join(", ")
    }
}

/// A method config's `hedgingPolicy`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HedgingPolicy {
    max_attempts: usize,
    hedging_delay: Duration,
    non_fatal_status_codes: Vec<i32>,
}

impl HedgingPolicy {
    /// `maxAttempts`, at most 5 ([`MAX_ATTEMPTS`](super::MAX_ATTEMPTS)): the most copies
    /// of a call, the original included.
    pub fn max_attempts(&self) -> usize {
        self.max_attempts
    }

    /// `hedgingDelay`: each copy's delay after the one before.
    pub fn hedging_delay(&self) -> Duration {
        self.hedging_delay
    }

    /// `nonFatalStatusCodes`, as integers in the order given: the codes after which the
    /// next copy starts at once (see [`GrpcVerdict`](super::GrpcVerdict)).
    pub fn non_fatal_status_codes(&self) -> &[i32] {
        &self.non_fatal_status_codes
    }

    /// A policy builder with `max_copies` = `maxAttempts` and `delay` = `hedgingDelay`,
    /// for a layer built by hand: add the timer (and a throttling budget) in code.
    pub fn to_builder(&self) -> PolicyBuilder {
        Policy::builder()
            .max_copies(self.max_attempts)
            .delay(self.hedging_delay)
    }
}

/// The channel's `retryThrottling`, checked, each number to three decimals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryThrottling {
    max_tokens: f64,
    token_ratio: f64,
}

impl RetryThrottling {
    /// `maxTokens`, in `[0.001, 1000]`.
    pub fn max_tokens(&self) -> f64 {
        self.max_tokens
    }

    /// `tokenRatio`, at least 0.001.
    pub fn token_ratio(&self) -> f64 {
        self.token_ratio
    }

    /// A new [`Budget::throttling`] of these settings: give one to every policy of one
    /// channel.
    pub fn to_budget(&self) -> Budget {
        Budget::throttling(self.max_tokens, self.token_ratio)
    }
}

/// A service config that is rejected: its message names the field at fault and what is
/// wrong with it, as in `methodConfig[0].hedgingPolicy.maxAttempts = 1 is out of range:
/// expected 2 or more (more than 5 counts as 5)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceConfigError {
    field: String,
    message: String,
}

impl ServiceConfigError {
    /// The field at fault, as a path into the JSON (`methodConfig[1].name[0]`,
    /// `methodConfig[0].name[0].method`, `retryThrottling.maxTokens`); empty when the text is not a JSON object.
    pub fn field(&self) -> &str {
        &self.field
    }
}

impl fmt::Display for ServiceConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ServiceConfigError {}
