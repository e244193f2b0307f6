//! OpenTelemetry metrics for [`hedging`] policies: are the hedges winning, and what are
//! the knobs set to?
//!
//! [`register`] creates observable counters that read [`Policy::stats`] when the meter
//! provider collects, so a hedged call pays nothing for them: the policy keeps counting
//! in its per-thread cells as it always does, and the counters are summed only at export.
//! Gauges read, at the same time, the delay in effect, the kill switch and the budget.
//!
//! ```
//! use hedging_opentelemetry::hedging::{timer::TokioTimer, Policy}; // the core, re-exported
//! use opentelemetry::global;
//!
//! let reads = Policy::builder()
//!     .name("user-reads") // the `hedging.policy.name` attribute of every data point
//!     .timer(TokioTimer::new())
//!     .build();
//! hedging_opentelemetry::register(&reads, &global::meter("my-service"));
//! ```
//!
//! # Instruments
//!
//! Every instrument is a monotonic `u64` observable counter carrying the attribute
//! `hedging.policy.name` (the policy's [`name`](hedging::PolicyBuilder::name); absent
//! when it has none).
//!
//! | instrument | unit | attributes | `Stats` field |
//! |---|---|---|---|
//! | `hedging.calls` | `{call}` | `hedging.outcome` = `win` | `wins` |
//! | `hedging.calls` | `{call}` | `hedging.outcome` = `failure` | `failures` |
//! | `hedging.calls` | `{call}` | `hedging.outcome` = `cancelled` | `cancelled` |
//! | `hedging.hedges` | `{hedge}` | | `hedges`: copies started beyond the first |
//! | `hedging.hedge_wins` | `{call}` | | `hedge_wins`: calls won by a copy other than the first |
//! | `hedging.budget.denials` | `{hedge}` | | `budget_denied`: copies the budget refused |
//! | `hedging.out_of_scope` | `{request}` | | `out_of_scope`: requests a layer passed through unhedged, outside its scope (not calls) |
//! | `hedging.withheld` | `{call}` | | `withheld`: calls whose due hedge was withheld because hedges stopped winning ([`min_win_rate`](hedging::PolicyBuilder::min_win_rate)) |
//!
//! And observable gauges, read at collection time, with the same `hedging.policy.name`
//! attribute:
//!
//! | instrument | type | unit | reads |
//! |---|---|---|---|
//! | `hedging.delay` | `f64` gauge | `s` | [`Policy::delay`]: the delay before the first hedge now (the adaptive delay as it stands); no data point in the `fallback` and `delay_fn` modes |
//! | `hedging.enabled` | `u64` gauge | `1` | [`Policy::is_enabled`]: 1, or 0 once [`Policy::set_enabled(false)`](Policy::set_enabled) |
//! | `hedging.budget.tokens` | `f64` gauge | `{token}` | [`Budget::tokens`](hedging::Budget::tokens); only for a policy with a budget |
//! | `hedging.budget.outstanding` | `u64` gauge | `{hedge}` | [`Budget::outstanding`](hedging::Budget::outstanding): extra copies in flight holding a `max_outstanding` slot (0 without that cap); only for a policy with a budget |
//!
//! A budget shared by several policies is reported under each policy's name: its gauges
//! are one budget's, not to be summed over policies.
//!
//! `calls` is the sum of `hedging.calls` over its outcomes: one instrument with an
//! outcome attribute, as the semantic conventions prefer to a counter per outcome, so
//! summing a metric over its attributes gives a meaningful total. The three outcomes of
//! a policy are read from one snapshot. Names follow the OpenTelemetry naming guide:
//! a `hedging.` namespace for a library-specific metric, pluralized names for counts of
//! discrete things, units as UCUM annotations, and no `_total` suffix (a Prometheus
//! exporter adds it: `hedging_calls_total{hedging_outcome="win"}`).
//!
//! Questions operators ask, as queries over rates:
//!
//! - *Are the hedges winning?* `hedging.hedge_wins / hedging.hedges`: the share of hedges
//!   that came back first. Near zero, the delay is too short (hedges start while the
//!   original is about to answer); near one, every hedge pays for itself.
//! - *What does hedging cost?* `hedging.hedges / hedging.calls`: extra requests per call
//!   a layer was asked to hedge. Requests a layer passed by, outside its scope (a `POST`,
//!   a `NoHedge` request, an object-store write), are in `hedging.out_of_scope`, never in
//!   `hedging.calls`, by one rule in every integration:
//!   [which requests are counted](https://docs.rs/hedging-http-rules/latest/hedging_http_rules/#which-requests-are-counted).
//! - *Is the budget biting?* `hedging.budget.denials` above zero: hedges it refused;
//!   `hedging.budget.tokens` near zero says it is about to.
//! - *What is it set to?* `hedging.delay` against the backend's latency percentiles, and
//!   `hedging.enabled` to see who switched hedging off.
//!
//! # gRPC A96
//!
//! gRFC A96 defines `grpc.client.call.hedges` (unit `{hedge}`): a histogram recorded once
//! per call with the number of hedges that call started, calls without a hedge not
//! recorded. Its sum is `hedging.hedges` here, and its count is the number of calls that
//! hedged at least once, which the policy's counters do not keep. A96's per-call
//! histograms need a per-call hook; these counters are totals, read at collection time
//! so the hot path records nothing extra. Its `grpc.client.attempt.started` with
//! `grpc.attempt_type = "hedge"` counts the same copies as `hedging.hedges`.
//!
//! # Lifetime
//!
//! Each callback holds a clone of the policy (a reference-count bump) and lives as long
//! as the meter provider, which has no way to unregister it. Register each policy once:
//! two registrations of one policy, or two unnamed policies, report the same attribute
//! set twice. [`Policy::reset_stats`] makes the counters fall, which a backend reads as a
//! counter reset; do not reset a policy whose stats are exported.
//!
//! # Features
//!
//! - `tokio`: `hedging::timer::TokioTimer`, through the [`hedging`] re-export: the
//!   timer for tokio, so that a test's paused tokio clock drives the hedges (the default
//!   `FuturesTimer` follows the real clock).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs, unsafe_code)]
#![warn(missing_debug_implementations, unreachable_pub, rust_2018_idioms)]

use hedging::timer::Timer;
use hedging::{Policy, Stats};
use opentelemetry::metrics::{AsyncInstrument, Meter};
use opentelemetry::KeyValue;

/// The core crate, re-exported: name [`Policy`], the timers and [`Stats`] through it
/// (`hedging_opentelemetry::hedging::Policy`), and they are always the version this
/// crate was built with.
pub use hedging;

/// The attribute that names the policy on every data point.
pub const POLICY_NAME: &str = "hedging.policy.name";

/// The attribute of `hedging.calls` that says how a call ended: `win`, `failure` or
/// `cancelled`.
pub const OUTCOME: &str = "hedging.outcome";

/// Creates the observable counters and gauges listed in the crate docs for `policy` on
/// `meter`.
///
/// Nothing is recorded on a call's path: each collection reads [`Policy::stats`] once
/// per counter, and the delay, the switch and the budget once per gauge. The callbacks
/// hold a clone of the policy for as long as the meter provider lives; register a policy
/// once.
///
/// ```
/// use hedging::{timer::TokioTimer, Policy};
/// use opentelemetry::metrics::MeterProvider;
/// use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
///
/// let exporter = InMemoryMetricExporter::default();
/// let provider = SdkMeterProvider::builder()
///     .with_reader(PeriodicReader::builder(exporter.clone()).build())
///     .build();
/// let policy = Policy::builder().name("heads").timer(TokioTimer::new()).build();
/// hedging_opentelemetry::register(&policy, &provider.meter("storage"));
///
/// provider.force_flush().unwrap();
/// let exported = exporter.get_finished_metrics().unwrap();
/// let names: Vec<_> = exported[0].scope_metrics().flat_map(|s| s.metrics()).map(|m| m.name().to_owned()).collect();
/// assert!(names.contains(&"hedging.hedge_wins".to_owned()));
/// ```
pub fn register<T>(policy: &Policy<T>, meter: &Meter)
where
    T: Timer + Send + Sync + 'static,
{
    let name = policy
        .name()
        .map(|name| KeyValue::new(POLICY_NAME, name.to_owned()));
    let attributes =
        |extra: Option<KeyValue>| -> Vec<KeyValue> { name.iter().cloned().chain(extra).collect() };

    let outcomes = [
        attributes(Some(KeyValue::new(OUTCOME, "win"))),
        attributes(Some(KeyValue::new(OUTCOME, "failure"))),
        attributes(Some(KeyValue::new(OUTCOME, "cancelled"))),
    ];
    let calls_policy = policy.clone();
    meter
        .u64_observable_counter("hedging.calls")
        .with_description(
            "Hedged calls that ended, by outcome: won, failed, or dropped before they finished.",
        )
        .with_unit("{call}")
        .with_callback(move |observer| {
            // One snapshot for the three outcomes, so they add up to the same calls.
            let stats = calls_policy.stats();
            let [wins, failures, cancelled] = &outcomes;
            observer.observe(stats.wins, wins);
            observer.observe(stats.failures, failures);
            observer.observe(stats.cancelled, cancelled);
        })
        .build();

    counter(
        meter,
        policy,
        "hedging.hedges",
        "{hedge}",
        "Copies of a request started beyond the first, by the clock or after a failure.",
        attributes(None),
        |stats| stats.hedges,
    );
    counter(
        meter,
        policy,
        "hedging.hedge_wins",
        "{call}",
        "Hedged calls won by a copy other than the first.",
        attributes(None),
        |stats| stats.hedge_wins,
    );
    counter(
        meter,
        policy,
        "hedging.budget.denials",
        "{hedge}",
        "Copies beyond the first that the policy's hedging budget refused to start.",
        attributes(None),
        |stats| stats.budget_denied,
    );
    counter(
        meter,
        policy,
        "hedging.out_of_scope",
        "{request}",
        "Requests a layer passed through unhedged because they were outside its scope.",
        attributes(None),
        |stats| stats.out_of_scope,
    );
    counter(
        meter,
        policy,
        "hedging.withheld",
        "{call}",
        "Calls whose due hedge was withheld because recent hedges stopped winning.",
        attributes(None),
        |stats| stats.withheld,
    );
    gauges(policy, meter, attributes(None));
}

/// The gauges of the knobs: the delay in effect, the switch, and the budget if any.
fn gauges<T>(policy: &Policy<T>, meter: &Meter, attributes: Vec<KeyValue>)
where
    T: Timer + Send + Sync + 'static,
{
    let (delay_policy, delay_attributes) = (policy.clone(), attributes.clone());
    meter
        .f64_observable_gauge("hedging.delay")
        .with_description(
            "The delay before a call's first hedge as it stands now: fixed, or the adaptive delay.",
        )
        .with_unit("s")
        .with_callback(move |observer| {
            if let Some(delay) = delay_policy.delay() {
                observer.observe(delay.as_secs_f64(), &delay_attributes);
            }
        })
        .build();

    let (switch_policy, switch_attributes) = (policy.clone(), attributes.clone());
    meter
        .u64_observable_gauge("hedging.enabled")
        .with_description("1 while the policy may hedge, 0 once it was switched off.")
        .with_unit("1")
        .with_callback(move |observer| {
            observer.observe(u64::from(switch_policy.is_enabled()), &switch_attributes);
        })
        .build();

    let Some(budget) = policy.budget() else {
        return;
    };
    let (tokens_budget, tokens_attributes) = (budget.clone(), attributes.clone());
    meter
        .f64_observable_gauge("hedging.budget.tokens")
        .with_description("The tokens the policy's hedging budget holds now.")
        .with_unit("{token}")
        .with_callback(move |observer| {
            observer.observe(tokens_budget.tokens(), &tokens_attributes);
        })
        .build();
    let outstanding_budget = budget.clone();
    meter
        .u64_observable_gauge("hedging.budget.outstanding")
        .with_description(
            "Extra copies in flight holding a slot of the budget's max_outstanding (0 without that cap).",
        )
        .with_unit("{hedge}")
        .with_callback(move |observer| {
            observer.observe(outstanding_budget.outstanding() as u64, &attributes);
        })
        .build();
}

/// One observable counter reading one field of the policy's stats.
fn counter<T>(
    meter: &Meter,
    policy: &Policy<T>,
    name: &'static str,
    unit: &'static str,
    description: &'static str,
    attributes: Vec<KeyValue>,
    field: fn(&Stats) -> u64,
) where
    T: Send + Sync + 'static,
{
    let policy = policy.clone();
    meter
        .u64_observable_counter(name)
        .with_description(description)
        .with_unit(unit)
        .with_callback(move |observer: &dyn AsyncInstrument<u64>| {
            observer.observe(field(&policy.stats()), &attributes);
        })
        .build();
}
