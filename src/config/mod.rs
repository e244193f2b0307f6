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
//! file, with a message naming the key, the value and the accepted range:
//!
//! ```
//! # use hedging::config::PolicyConfig;
//! let error = toml::from_str::<PolicyConfig>("max_copies = 0").unwrap_err();
//! assert!(error.to_string().contains("max_copies = 0 is out of range: expected 1..=64"));
//! ```
//!
//! Unknown keys are refused too (`deny_unknown_fields`), so a misspelt setting is not
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
use core::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use self::duration::{Text, Unreadable};
use crate::builder::PolicyBuilder;
use crate::policy::Policy;

mod budget;
mod check;
mod duration;
mod error;

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
            min_delay: None,
            adaptive_min_samples: None,
            adaptive_window: None,
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

/// What a file holds, before it is checked: durations as their text.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    name: Option<String>,
    enabled: Option<bool>,
    max_copies: Option<usize>,
    delay: Option<Text>,
    parallel: Option<bool>,
    fallback: Option<bool>,
    max_delay: Option<Text>,
    adaptive_delay: Option<f64>,
    min_delay: Option<Text>,
    adaptive_min_samples: Option<u32>,
    adaptive_window: Option<Text>,
    hedge_probability: Option<f64>,
    replace_failed: Option<bool>,
    catch_unwind: Option<bool>,
    budget: Option<BudgetConfig>,
}

impl<'de> Deserialize<'de> for PolicyConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = Fields::deserialize(deserializer)?;
        let config = PolicyConfig::try_from(fields).map_err(serde::de::Error::custom)?;
        config.validate().map_err(serde::de::Error::custom)?;
        Ok(config)
    }
}

impl TryFrom<Fields> for PolicyConfig {
    type Error = ConfigError;

    fn try_from(fields: Fields) -> Result<Self, ConfigError> {
        Ok(PolicyConfig {
            name: fields.name,
            enabled: fields.enabled.unwrap_or(true),
            max_copies: fields.max_copies,
            delay: read_duration("delay", fields.delay)?,
            parallel: fields.parallel.unwrap_or(false),
            fallback: fields.fallback.unwrap_or(false),
            max_delay: read_duration("max_delay", fields.max_delay)?,
            adaptive_delay: fields.adaptive_delay,
            min_delay: read_duration("min_delay", fields.min_delay)?,
            adaptive_min_samples: fields.adaptive_min_samples,
            adaptive_window: read_duration("adaptive_window", fields.adaptive_window)?,
            hedge_probability: fields.hedge_probability,
            replace_failed: fields.replace_failed.unwrap_or(false),
            catch_unwind: fields.catch_unwind.unwrap_or(false),
            budget: fields.budget,
        })
    }
}

/// The duration a file gives for `key`, if any.
fn read_duration(key: &'static str, text: Option<Text>) -> Result<Option<Duration>, ConfigError> {
    let Some(Text(text)) = text else {
        return Ok(None);
    };
    match duration::parse(&text) {
        Ok(duration) => Ok(Some(duration)),
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
