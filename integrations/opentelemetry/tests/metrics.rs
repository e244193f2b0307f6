//! The OpenTelemetry SDK's in-memory exporter reads exactly what `Policy::stats` says,
//! after scripted calls on tokio's paused clock.

use std::collections::BTreeMap;
use std::future::{pending, Future};
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::{Attempt, Budget, Hedgeable, Policy, Stats};
use opentelemetry::metrics::MeterProvider;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tokio::time::sleep;

/// A meter provider whose collections land in an in-memory exporter.
struct Collector {
    exporter: InMemoryMetricExporter,
    provider: SdkMeterProvider,
}

/// One exported data point: metric name and its attributes, sorted.
type Series = (String, Vec<(String, String)>);

/// What one collection exported: the value of every counter's and every gauge's series,
/// and the unit of every instrument.
#[derive(Debug)]
struct Collected {
    values: BTreeMap<Series, u64>,
    gauges: BTreeMap<Series, f64>,
    units: BTreeMap<String, String>,
}

/// A data point's attributes as text, sorted.
fn sorted_attributes<'a>(attributes: impl Iterator<Item = &'a KeyValue>) -> Vec<(String, String)> {
    let mut attributes: Vec<(String, String)> = attributes
        .map(|kv| (kv.key.to_string(), value_text(&kv.value)))
        .collect();
    attributes.sort();
    attributes
}

impl Collector {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        Collector { exporter, provider }
    }

    /// Collects now and returns what the exporter received.
    fn collect(&self) -> Collected {
        self.exporter.reset();
        self.provider.force_flush().expect("flush");
        let exported = self.exporter.get_finished_metrics().expect("metrics");
        let mut values = BTreeMap::new();
        let mut gauges = BTreeMap::new();
        let mut units = BTreeMap::new();
        for metric in exported
            .iter()
            .flat_map(|resource| resource.scope_metrics())
            .flat_map(|scope| scope.metrics())
        {
            let name = metric.name().to_owned();
            units.insert(name.clone(), metric.unit().to_owned());
            match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    assert!(sum.is_monotonic(), "{name} is a counter");
                    for point in sum.data_points() {
                        let series = (name.clone(), sorted_attributes(point.attributes()));
                        values.insert(series, point.value());
                    }
                }
                AggregatedMetrics::U64(MetricData::Gauge(gauge)) => {
                    for point in gauge.data_points() {
                        let series = (name.clone(), sorted_attributes(point.attributes()));
                        gauges.insert(series, point.value() as f64);
                    }
                }
                AggregatedMetrics::F64(MetricData::Gauge(gauge)) => {
                    for point in gauge.data_points() {
                        let series = (name.clone(), sorted_attributes(point.attributes()));
                        gauges.insert(series, point.value());
                    }
                }
                data => panic!("{name} is neither a u64 counter nor a gauge: {data:?}"),
            }
        }
        Collected {
            values,
            gauges,
            units,
        }
    }
}

fn value_text(value: &Value) -> String {
    value.as_str().into_owned()
}

impl Collected {
    /// The value of `metric` for the data point with exactly `attributes`.
    fn value(&self, metric: &str, attributes: &[(&str, &str)]) -> Option<u64> {
        let mut attributes: Vec<(String, String)> = attributes
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        attributes.sort();
        self.values.get(&(metric.to_owned(), attributes)).copied()
    }

    /// The gauge `metric` of the policy named `name` (or of the unnamed one), if exported.
    fn gauge(&self, metric: &str, name: Option<&str>) -> Option<f64> {
        let attributes = name
            .map(|name| vec![("hedging.policy.name".to_owned(), name.to_owned())])
            .unwrap_or_default();
        self.gauges.get(&(metric.to_owned(), attributes)).copied()
    }

    /// The stats of the policy named `name` (or of the unnamed one), as exported.
    fn stats(&self, name: Option<&str>) -> Stats {
        let read = |metric: &str, extra: Option<(&'static str, &'static str)>| {
            let attributes: Vec<(&str, &str)> = name
                .map(|name| ("hedging.policy.name", name))
                .into_iter()
                .chain(extra)
                .collect();
            self.value(metric, &attributes)
                .unwrap_or_else(|| panic!("no {metric} {extra:?} for {name:?} in {self:#?}"))
        };
        let wins = read("hedging.calls", Some(("hedging.outcome", "win")));
        let failures = read("hedging.calls", Some(("hedging.outcome", "failure")));
        let cancelled = read("hedging.calls", Some(("hedging.outcome", "cancelled")));
        Stats {
            calls: wins + failures + cancelled,
            wins,
            failures,
            cancelled,
            hedges: read("hedging.hedges", None),
            hedge_wins: read("hedging.hedge_wins", None),
            budget_denied: read("hedging.budget.denials", None),
            out_of_scope: read("hedging.out_of_scope", None),
            withheld: read("hedging.withheld", None),
        }
    }
}

/// A copy that answers `answer` after `after` (at once for zero).
async fn copy(after: Duration, answer: Result<u32, &'static str>) -> Result<u32, &'static str> {
    if !after.is_zero() {
        sleep(after).await;
    }
    answer
}

/// Runs scripted calls through `policy`, so that every counter ends at a different
/// value: 4 originals that win at once, 2 hedges that win, 4 calls whose two copies fail
/// (their hedges spend the rest of the budget's 6 tokens), 1 call whose hedge the budget
/// refuses, and 3 calls dropped while their original is pending.
async fn scripted_run(policy: &Policy<TokioTimer>) {
    let stall = Duration::from_secs(1);
    for _ in 0..4 {
        let answer = (|| copy(Duration::ZERO, Ok(1))).hedged(policy).await;
        assert_eq!(answer, Ok(1));
    }
    for _ in 0..2 {
        let answer = (|a: Attempt| match a.index() {
            0 => copy(stall, Ok(0)),
            _ => copy(Duration::ZERO, Ok(2)),
        })
        .hedged(policy)
        .await;
        assert_eq!(answer, Ok(2), "the hedge wins");
    }
    for _ in 0..4 {
        let answer = (|| copy(Duration::ZERO, Err("unavailable")))
            .hedged(policy)
            .await;
        assert_eq!(answer, Err("unavailable"), "both copies failed");
    }
    // The budget's tokens are spent: the hedge due at 10 ms is refused.
    let answer = (|a: Attempt| copy(Duration::from_millis(50), Ok(a.index() as u32)))
        .hedged(policy)
        .await;
    assert_eq!(answer, Ok(0), "the original answers alone");
    for _ in 0..3 {
        let mut dropped = pin!((|| pending::<Result<u32, &str>>()).hedged(policy));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(dropped.as_mut().poll(&mut cx).is_pending());
    }
    // Two requests a layer passed through, outside its scope.
    policy.count_out_of_scope();
    policy.count_out_of_scope();
}

fn scripted_policy(name: &'static str) -> Policy<TokioTimer> {
    Policy::builder()
        .name(name)
        .max_copies(2)
        .delay(Duration::from_millis(10))
        .budget(&Budget::new(0.0).burst(6.0))
        .timer(TokioTimer::new())
        .build()
}

#[tokio::test(start_paused = true)]
async fn exported_counters_equal_the_stats_after_a_scripted_run() {
    let collector = Collector::new();
    let policy = scripted_policy("scripted");
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));

    scripted_run(&policy).await;

    let stats = policy.stats();
    let expected = Stats {
        calls: 14,
        wins: 7,
        failures: 4,
        cancelled: 3,
        hedges: 6,
        hedge_wins: 2,
        budget_denied: 1,
        out_of_scope: 2,
        withheld: 0,
    };
    assert_eq!(
        stats, expected,
        "the script drives every counter but `withheld`"
    );
    assert_eq!(collector.collect().stats(Some("scripted")), stats);
}

#[tokio::test(start_paused = true)]
async fn withheld_hedges_are_exported() {
    let collector = Collector::new();
    // One hedge that loses brings the win rate under 0.99: the next due hedge is withheld.
    let policy = Policy::builder()
        .name("withheld")
        .delay(Duration::from_millis(10))
        .min_win_rate(0.99)
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));
    for _ in 0..2 {
        let answer = (|a: Attempt| match a.index() {
            0 => copy(Duration::from_millis(50), Ok(0)),
            _ => copy(Duration::from_secs(1), Ok(1)),
        })
        .hedged(&policy)
        .await;
        assert_eq!(answer, Ok(0), "the original wins");
    }
    let stats = policy.stats();
    assert_eq!((stats.hedges, stats.withheld), (1, 1), "{stats:?}");
    assert_eq!(collector.collect().stats(Some("withheld")), stats);
}

#[tokio::test(start_paused = true)]
async fn counters_are_read_at_collection_time() {
    let collector = Collector::new();
    let policy = scripted_policy("late");
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));

    let before = collector.collect().stats(Some("late"));
    assert_eq!(before, Stats::default(), "nothing ran yet");

    scripted_run(&policy).await;
    let after = collector.collect().stats(Some("late"));
    assert_eq!(after, policy.stats());
    assert_eq!(after.calls, 14);
}

#[tokio::test(start_paused = true)]
async fn each_policy_is_its_own_series() {
    let collector = Collector::new();
    let meter = collector.provider.meter("test");
    let heads = scripted_policy("heads");
    let ranges = scripted_policy("ranges");
    hedging_opentelemetry::register(&heads, &meter);
    hedging_opentelemetry::register(&ranges, &meter);

    scripted_run(&heads).await;
    let answer = (|| copy(Duration::ZERO, Ok(7))).hedged(&ranges).await;
    assert_eq!(answer, Ok(7));

    let collected = collector.collect();
    assert_eq!(collected.stats(Some("heads")), heads.stats());
    assert_eq!(collected.stats(Some("ranges")), ranges.stats());
    assert_eq!(collected.stats(Some("ranges")).calls, 1);
    assert_eq!(collected.stats(Some("heads")).calls, 14);
}

#[tokio::test(start_paused = true)]
async fn an_unnamed_policy_has_no_policy_attribute() {
    let collector = Collector::new();
    let policy = Policy::builder()
        .delay(Duration::from_millis(10))
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));

    let answer = (|| copy(Duration::ZERO, Ok(1))).hedged(&policy).await;
    assert_eq!(answer, Ok(1));

    let collected = collector.collect();
    assert_eq!(collected.stats(None), policy.stats());
    assert_eq!(
        collected.value("hedging.calls", &[("hedging.outcome", "win")]),
        Some(1)
    );
}

#[test]
fn units_follow_the_semantic_conventions() {
    let collector = Collector::new();
    let policy = Policy::builder()
        .name("units")
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));

    let units = collector.collect().units;
    let expected: BTreeMap<String, String> = [
        ("hedging.budget.denials", "{hedge}"),
        ("hedging.calls", "{call}"),
        ("hedging.delay", "s"),
        ("hedging.enabled", "1"),
        ("hedging.hedge_wins", "{call}"),
        ("hedging.hedges", "{hedge}"),
        ("hedging.out_of_scope", "{request}"),
        ("hedging.withheld", "{call}"),
    ]
    .into_iter()
    .map(|(name, unit)| (name.to_owned(), unit.to_owned()))
    .collect();
    assert_eq!(units, expected);
}

// --- Gauges: the knobs, read at collection time -----------------------------------------

#[tokio::test(start_paused = true)]
async fn gauges_read_the_delay_the_switch_and_the_budget_at_collection_time() {
    let collector = Collector::new();
    let budget = Budget::new(0.0).burst(6.0).max_outstanding(4);
    let policy = Policy::builder()
        .name("knobs")
        .max_copies(2)
        .delay(Duration::from_millis(10))
        .budget(&budget)
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));

    let before = collector.collect();
    assert_eq!(before.gauge("hedging.delay", Some("knobs")), Some(0.010));
    assert_eq!(before.gauge("hedging.enabled", Some("knobs")), Some(1.0));
    assert_eq!(
        before.gauge("hedging.budget.tokens", Some("knobs")),
        Some(6.0)
    );
    assert_eq!(
        before.gauge("hedging.budget.outstanding", Some("knobs")),
        Some(0.0)
    );

    // A call whose hedge is in flight holds a token and a slot.
    let mut call =
        Box::pin((|a: Attempt| copy(Duration::from_secs(1), Ok(a.index() as u32))).hedged(&policy));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(call.as_mut().poll(&mut cx).is_pending());
    tokio::time::advance(Duration::from_millis(10)).await;
    assert!(call.as_mut().poll(&mut cx).is_pending());
    assert_eq!(policy.stats().hedges, 1);
    policy.set_enabled(false);

    let during = collector.collect();
    assert_eq!(during.gauge("hedging.enabled", Some("knobs")), Some(0.0));
    assert_eq!(
        during.gauge("hedging.budget.tokens", Some("knobs")),
        Some(5.0)
    );
    assert_eq!(
        during.gauge("hedging.budget.outstanding", Some("knobs")),
        Some(1.0)
    );

    drop(call);
    policy.set_enabled(true);
    let after = collector.collect();
    assert_eq!(after.gauge("hedging.enabled", Some("knobs")), Some(1.0));
    assert_eq!(
        after.gauge("hedging.budget.outstanding", Some("knobs")),
        Some(0.0)
    );
}

#[tokio::test(start_paused = true)]
async fn the_delay_gauge_follows_the_adaptive_delay() {
    let collector = Collector::new();
    let policy = Policy::builder()
        .name("adaptive")
        .adaptive_delay(0.5)
        .delay(Duration::from_millis(100)) // until 10 latencies are known
        .adaptive_min_samples(10)
        .adaptive_window(Duration::from_millis(400))
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));
    assert_eq!(
        collector.collect().gauge("hedging.delay", Some("adaptive")),
        Some(0.1)
    );

    // A second of calls that each answer in 20 ms: the delay follows them down.
    for _ in 0..50 {
        let answer = (|| copy(Duration::from_millis(20), Ok(1)))
            .hedged(&policy)
            .await;
        assert_eq!(answer, Ok(1));
    }
    let delay = policy.delay().unwrap();
    assert!(
        delay < Duration::from_millis(100),
        "the adaptive delay moved: {delay:?}"
    );
    assert_eq!(
        collector.collect().gauge("hedging.delay", Some("adaptive")),
        Some(delay.as_secs_f64())
    );
}

#[test]
fn a_policy_without_a_delay_or_a_budget_reports_neither() {
    let collector = Collector::new();
    let policy = Policy::builder()
        .name("fallback")
        .fallback()
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));
    let collected = collector.collect();
    assert_eq!(collected.gauge("hedging.delay", Some("fallback")), None);
    assert_eq!(
        collected.gauge("hedging.budget.tokens", Some("fallback")),
        None
    );
    assert_eq!(
        collected.gauge("hedging.budget.outstanding", Some("fallback")),
        None
    );
    assert_eq!(
        collected.gauge("hedging.enabled", Some("fallback")),
        Some(1.0)
    );
}

#[test]
fn budget_gauges_have_their_units() {
    let collector = Collector::new();
    let policy = Policy::builder()
        .budget(&Budget::throttling(10.0, 0.1))
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));
    let collected = collector.collect();
    assert_eq!(collected.units["hedging.budget.tokens"], "{token}");
    assert_eq!(collected.units["hedging.budget.outstanding"], "{hedge}");
    assert_eq!(collected.gauge("hedging.budget.tokens", None), Some(10.0));
}

#[test]
fn a_name_read_at_run_time_is_the_policy_attribute() {
    let collector = Collector::new();
    let name = String::from("from-a-file");
    let policy = Policy::builder()
        .name(name.clone())
        .timer(TokioTimer::new())
        .build();
    hedging_opentelemetry::register(&policy, &collector.provider.meter("test"));
    drop(name);
    let collected = collector.collect();
    assert_eq!(collected.stats(Some("from-a-file")), Stats::default());
    assert_eq!(
        collected.gauge("hedging.enabled", Some("from-a-file")),
        Some(1.0)
    );
}
