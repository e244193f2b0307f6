//! Policies from operators' configuration files (feature `serde`): [`PolicyConfig`] holds
//! every [`PolicyBuilder`] setting as data, read from TOML, YAML or JSON.
//!
//! Each field is named as its builder method, durations are strings as people write
//! them (`"20ms"`, `"1.5s"`, `"250us"`, `"1m30s"`), and [`PolicyConfig::to_builder`] gives
//! back a builder, so that what only code can say (the timer, the `on_hedge` hook, a
//! budget shared with other policies) is added in code.
//!
//! ```
//! use hedging::config::PolicyConfig;
//!
//! let config: PolicyConfig = toml::from_str(r#"
//!     name = "user-reads"
//!     max_copies = 3
//!     delay = "20ms"            # until the adaptive delay knows 100 latencies
//!     adaptive_delay = 0.95     # then hedge at the p95 of recent latencies,
//!     min_delay = "2ms"         # within these bounds
//!     max_delay = "200ms"
//!
//!     [budget]
//!     ratio = 0.1               # at most 10% extra copies over time
//!     max_outstanding = 50
//! "#).unwrap();
//!
//! let policy = config.to_builder().build(); // add `.timer(..)`, `.on_hedge(..)` first
//! assert_eq!(policy.name(), Some("user-reads"));
//! assert_eq!(policy.budget().unwrap().ratio(), 0.1);
//! ```
//!
//! # Validation
//!
//! A value a file gives is checked when the file is deserialized: one out of the range
//! its builder method accepts without clamping, or settings that contradict each other
//! (two modes, a `max_delay` below the `delay`, a budget of both kinds), fail the whole
//! file, with a message naming the key, the value and the accepted range. The error is
//! raised as the value at fault is read (for settings that contradict each other, the
//! one read second), so the format adds its line and column, in sections such as
//! `[budget]` too; a fault only a whole table shows (a budget that sets no kind, a bound
//! against a default) is placed where the format places that table:
//!
//! ```
//! # use hedging::config::PolicyConfig;
//! let file = "name = \"reads\"\nmax_copies = 0";
//! let error = toml::from_str::<PolicyConfig>(file).unwrap_err().to_string();
//! assert!(error.contains("line 2, column 14"), "{error}");
//! assert!(error.contains("max_copies = 0 is out of range: expected 1..=64"));
//! ```
//!
//! Unknown keys are refused too, as `deny_unknown_fields` refuses them, so a misspelt setting is not
//! silently ignored. A `PolicyConfig` that was deserialized is therefore valid, and
//! [`to_builder`](PolicyConfig::to_builder) cannot fail; one put together in code can be
//! checked the same way with [`PolicyConfig::validate`], and is otherwise clamped as the
//! builder clamps.
//!
//! # Sharing a budget
//!
//! A `budget` section gives its policy a [`Budget`](crate::Budget) of its own. To share one budget
//! between policies (one per backend, as [`Budget`](crate::Budget) recommends), leave the section out
//! of each policy, read a [`BudgetConfig`] of your own (say a `[budgets.storage]` table),
//! make it once with [`BudgetConfig::to_budget`] and give it to every builder with
//! [`PolicyBuilder::budget`]. `.budget(&shared)` after `to_builder()` also replaces a
//! section's budget.
//!
//! # Live changes
//!
//! A policy is built once; of a reloaded file, two settings apply to it live:
//! `enabled`, through [`Policy::set_enabled`](crate::Policy::set_enabled), and the
//! budget's `ratio` (or `token_ratio`), through [`Budget::set_ratio`](crate::Budget::set_ratio). Any other change
//! needs a new policy.

use alloc::format;
use alloc::string::String;
use core::fmt;
use core::time::Duration;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use self::duration::{Text, Unreadable};
use self::read::{Checked, Scalar, Seen};
use crate::builder::PolicyBuilder;
use crate::policy::Policy;

mod budget;
mod check;
mod duration;
mod error;
mod read;

pub use self::budget::BudgetConfig;
pub use self::error::ConfigError;

/// Every setting of a [`PolicyBuilder`] as data, each field named as its builder method;
/// `None` (or `false`) leaves the builder's default.
///
/// Deserialized from any serde format (TOML, YAML, JSON), checked as the
/// [module docs](crate::config#validation) say; serialized with the same keys, durations as
/// strings, unset fields left out. See [`to_builder`](Self::to_builder).
///
/// The modes: [`delay`](Self::delay) alone (the default mode, with a 10 ms delay when
/// unset), [`parallel`](Self::parallel) or [`fallback`](Self::fallback);
/// [`adaptive_delay`](Self::adaptive_delay) goes with the `delay` mode only.
/// `delay_fn` and `on_hedge` take functions: set them in code.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PolicyConfig {
    /// [`PolicyBuilder::name`]: the label of tracing events and metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// [`PolicyBuilder::enabled`]: `false` is the kill switch. Default `true`.
    pub enabled: bool,
    /// [`PolicyBuilder::max_copies`], in `1..=64`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_copies: Option<usize>,
    /// [`PolicyBuilder::delay`]; with [`adaptive_delay`](Self::adaptive_delay), the delay
    /// until enough latencies are known, within `min_delay..=max_delay`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "duration::serialize"
    )]
    pub delay: Option<Duration>,
    /// [`PolicyBuilder::parallel`]: every copy at once.
    #[serde(skip_serializing_if = "is_false")]
    pub parallel: bool,
    /// [`PolicyBuilder::fallback`]: the next copy only after a failure.
    #[serde(skip_serializing_if = "is_false")]
    pub fallback: bool,
    /// [`PolicyBuilder::max_delay`], at least the `delay` and the `min_delay`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "duration::serialize"
    )]
    pub max_delay: Option<Duration>,
    /// [`PolicyBuilder::adaptive_delay`]: the quantile to hedge at, in `0.0..=1.0`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive_delay: Option<f64>,
    /// [`PolicyBuilder::optimal_delay`]: the quantile of call latency whose delay the
    /// model chooses, in `0.0..=1.0`; not with `adaptive_delay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimal_delay: Option<f64>,
    /// [`PolicyBuilder::min_delay`], at most the `max_delay`.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "duration::serialize"
    )]
    pub min_delay: Option<Duration>,
    /// [`PolicyBuilder::adaptive_min_samples`], at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive_min_samples: Option<u32>,
    /// [`PolicyBuilder::adaptive_window`], at least 100 ms.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "duration::serialize"
    )]
    pub adaptive_window: Option<Duration>,
    /// [`PolicyBuilder::adaptive_keys`]: the most keys whose delay (and win rate) is
    /// learnt on its own, in `0..=4096`; 0, the default, is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive_keys: Option<usize>,
    /// [`PolicyBuilder::min_win_rate`], in `0.0..=1.0`; 0, the default, withholds nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_win_rate: Option<f64>,
    /// [`PolicyBuilder::hedge_probability`], in `0.0..=1.0`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hedge_probability: Option<f64>,
    /// [`PolicyBuilder::replace_failed`].
    #[serde(skip_serializing_if = "is_false")]
    pub replace_failed: bool,
    /// `PolicyBuilder::catch_unwind` (feature `std`; `true` is refused without it).
    #[serde(skip_serializing_if = "is_false")]
    pub catch_unwind: bool,
    /// [`PolicyBuilder::budget`]: a budget of this policy's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetConfig>,
}

impl Default for PolicyConfig {
    /// Nothing set: the builder's defaults, enabled.
    fn default() -> Self {
        PolicyConfig {
            name: None,
            enabled: true,
            max_copies: None,
            delay: None,
            parallel: false,
            fallback: false,
            max_delay: None,
            adaptive_delay: None,
            optimal_delay: None,
            min_delay: None,
            adaptive_min_samples: None,
            adaptive_window: None,
            adaptive_keys: None,
            min_win_rate: None,
            hedge_probability: None,
            replace_failed: false,
            catch_unwind: false,
            budget: None,
        }
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl PolicyConfig {
    /// A builder with every setting given here, on the default timer: add the timer,
    /// hooks and a shared budget in code, then [`build`](PolicyBuilder::build).
    ///
    /// A `budget` section makes a new [`Budget`](crate::Budget) for this builder (see
    /// [`BudgetConfig::to_budget`]); a later `.budget(&shared)` replaces it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use hedging::config::PolicyConfig;
    /// use hedging::{timer::ManualTimer, Budget};
    ///
    /// let config: PolicyConfig = serde_json::from_str(r#"{"max_copies": 3, "delay": "5ms"}"#).unwrap();
    /// let storage = Budget::new(0.05); // one budget for every policy of this backend
    /// let policy = config
    ///     .to_builder()
    ///     .budget(&storage)
    ///     .on_hedge(|attempt| println!("hedge {}", attempt.index()))
    ///     .timer(ManualTimer::new())
    ///     .build();
    /// assert_eq!(policy.delay(), Some(Duration::from_millis(5)));
    /// ```
    pub fn to_builder(&self) -> PolicyBuilder {
        let mut builder = Policy::builder().enabled(self.enabled);
        if let Some(name) = &self.name {
            builder = builder.name(name.clone());
        }
        if let Some(max_copies) = self.max_copies {
            builder = builder.max_copies(max_copies);
        }
        if self.parallel {
            builder = builder.parallel();
        }
        if self.fallback {
            builder = builder.fallback();
        }
        if let Some(delay) = self.delay {
            builder = builder.delay(delay);
        }
        if let Some(quantile) = self.adaptive_delay {
            builder = builder.adaptive_delay(quantile);
        }
        if let Some(quantile) = self.optimal_delay {
            builder = builder.optimal_delay(quantile);
        }
        if let Some(max_delay) = self.max_delay {
            builder = builder.max_delay(max_delay);
        }
        if let Some(min_delay) = self.min_delay {
            builder = builder.min_delay(min_delay);
        }
        if let Some(samples) = self.adaptive_min_samples {
            builder = builder.adaptive_min_samples(samples);
        }
        if let Some(window) = self.adaptive_window {
            builder = builder.adaptive_window(window);
        }
        if let Some(keys) = self.adaptive_keys {
            builder = builder.adaptive_keys(keys);
        }
        if let Some(rate) = self.min_win_rate {
            builder = builder.min_win_rate(rate);
        }
        if let Some(probability) = self.hedge_probability {
            builder = builder.hedge_probability(probability);
        }
        builder = builder.replace_failed(self.replace_failed);
        #[cfg(feature = "std")]
        {
            builder = builder.catch_unwind(self.catch_unwind);
        }
        if let Some(budget) = &self.budget {
            builder = builder.budget(&budget.to_budget());
        }
        builder
    }
}

/// The keys of a policy table, as [`Key`] lists them.
const KEYS: &[&str] = &[
    "name",
    "enabled",
    "max_copies",
    "delay",
    "parallel",
    "fallback",
    "max_delay",
    "adaptive_delay",
    "optimal_delay",
    "min_delay",
    "adaptive_min_samples",
    "adaptive_window",
    "adaptive_keys",
    "min_win_rate",
    "hedge_probability",
    "replace_failed",
    "catch_unwind",
    "budget",
];

/// A key of a policy table; any other is refused.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Name,
    Enabled,
    MaxCopies,
    Delay,
    Parallel,
    Fallback,
    MaxDelay,
    AdaptiveDelay,
    OptimalDelay,
    MinDelay,
    AdaptiveMinSamples,
    AdaptiveWindow,
    AdaptiveKeys,
    MinWinRate,
    HedgeProbability,
    ReplaceFailed,
    CatchUnwind,
    Budget,
}

impl<'de> Deserialize<'de> for PolicyConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct("PolicyConfig", KEYS, PolicyVisitor)
    }
}

struct PolicyVisitor;

impl<'de> Visitor<'de> for PolicyVisitor {
    type Value = PolicyConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a hedging policy: a table of its settings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PolicyConfig, A::Error> {
        let mut config = PolicyConfig::default();
        let mut seen = Seen::default();
        while let Some(key) = map.next_key::<Key>()? {
            seen.mark(key as usize, KEYS)?;
            let (map, config, name) = (&mut map, &mut config, KEYS[key as usize]);
            match key {
                Key::Name => value(map, name, config, |c, text| c.name = Some(text)),
                Key::Enabled => value(map, name, config, |c, on| c.enabled = on),
                Key::MaxCopies => value(map, name, config, |c, copies| c.max_copies = Some(copies)),
                Key::Delay => duration(map, name, config, |c| &mut c.delay),
                Key::Parallel => value(map, name, config, |c, on| c.parallel = on),
                Key::Fallback => value(map, name, config, |c, on| c.fallback = on),
                Key::MaxDelay => duration(map, name, config, |c| &mut c.max_delay),
                Key::AdaptiveDelay => value(map, name, config, |c, q| c.adaptive_delay = Some(q)),
                Key::OptimalDelay => value(map, name, config, |c, q| c.optimal_delay = Some(q)),
                Key::MinDelay => duration(map, name, config, |c| &mut c.min_delay),
                Key::AdaptiveMinSamples => value(map, name, config, |c, samples| {
                    c.adaptive_min_samples = Some(samples)
                }),
                Key::AdaptiveWindow => duration(map, name, config, |c| &mut c.adaptive_window),
                Key::AdaptiveKeys => {
                    value(map, name, config, |c, keys| c.adaptive_keys = Some(keys))
                }
                Key::MinWinRate => value(map, name, config, |c, rate| c.min_win_rate = Some(rate)),
                Key::HedgeProbability => {
                    value(map, name, config, |c, p| c.hedge_probability = Some(p))
                }
                Key::ReplaceFailed => value(map, name, config, |c, on| c.replace_failed = on),
                Key::CatchUnwind => value(map, name, config, |c, on| c.catch_unwind = on),
                Key::Budget => map.next_value().map(|budget| config.budget = budget),
            }?;
        }
        // What a later key could have changed: bounds that hold against a default.
        config.validate().map_err(de::Error::custom)?;
        Ok(config)
    }
}

/// The next value of `map`, given to `config` by `set` and checked against the settings
/// read before it, inside the format's visit of it (see [`read`]).
fn value<'de, A: MapAccess<'de>, T: Scalar>(
    map: &mut A,
    key: &'static str,
    config: &mut PolicyConfig,
    set: impl FnOnce(&mut PolicyConfig, T),
) -> Result<(), A::Error> {
    map.next_value_seed(Checked::new(key, |value| {
        set(config, value);
        config.check_read()
    }))
}

/// The next value of `map`, a duration for `key`, to the field `slot` gives.
fn duration<'de, A: MapAccess<'de>>(
    map: &mut A,
    key: &'static str,
    config: &mut PolicyConfig,
    slot: fn(&mut PolicyConfig) -> &mut Option<Duration>,
) -> Result<(), A::Error> {
    map.next_value_seed(Checked::new(key, |text| {
        *slot(config) = Some(read_duration(key, text)?);
        config.check_read()
    }))
}

/// The duration a file gives for `key`.
fn read_duration(key: &'static str, Text(text): Text) -> Result<Duration, ConfigError> {
    match duration::parse(&text) {
        Ok(duration) => Ok(duration),
        Err(Unreadable::Malformed) => Err(ConfigError::new(
            key,
            format!(
                "{key} = {text:?} is not a duration: expected a number and a unit (ns, us, ms, \
                 s, m, h), such as \"20ms\" or \"1.5s\""
            ),
        )),
        Err(Unreadable::Negative) => Err(ConfigError::out_of_range(
            key,
            format_args!("{text:?}"),
            "a duration of 0 or more",
        )),
        Err(Unreadable::TooLong) => Err(check::too_long(key, format_args!("{text:?}"))),
    }
}
