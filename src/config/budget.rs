//! [`BudgetConfig`]: a [`Budget`]'s settings as data, the `budget` section of a
//! [`PolicyConfig`](super::PolicyConfig).

use core::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::read::{Checked, Scalar, Seen};
use super::ConfigError;
use crate::budget::Budget;

/// A [`Budget`] as data: a token bucket (`ratio`, optionally `burst`) or gRPC's retry
/// throttling (`max_tokens` and `token_ratio`), either with `max_outstanding` and
/// `min_per_second`. Each field is named as the [`Budget`] method or argument it sets.
///
/// ```toml
/// [budget]
/// ratio = 0.1            # Budget::new(0.1)
/// max_outstanding = 50   # .max_outstanding(50)
/// ```
///
/// Deserializing checks each value against the range its method clamps to and refuses
/// a section that sets both kinds, or neither; see [`BudgetConfig::validate`].
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct BudgetConfig {
    /// [`Budget::new`]'s `ratio`: extra copies per call over time, at least 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// [`Budget::burst`]: a fixed cap on a token bucket's tokens, at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<f64>,
    /// [`Budget::max_outstanding`]: extra copies in flight at once, at least 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_outstanding: Option<usize>,
    /// [`Budget::min_per_second`]: extra copies per second let through whatever the
    /// tokens say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_per_second: Option<u32>,
    /// [`Budget::throttling`]'s `max_tokens`, in `0.001..=1000`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<f64>,
    /// [`Budget::throttling`]'s `token_ratio`, at least 0.001.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_ratio: Option<f64>,
}

/// The keys of a budget section, as [`Key`] lists them.
const KEYS: &[&str] = &[
    "ratio",
    "burst",
    "max_outstanding",
    "min_per_second",
    "max_tokens",
    "token_ratio",
];

/// A key of a budget section; any other is refused.
#[derive(Clone, Copy, Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Ratio,
    Burst,
    MaxOutstanding,
    MinPerSecond,
    MaxTokens,
    TokenRatio,
}

impl<'de> Deserialize<'de> for BudgetConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_struct("BudgetConfig", KEYS, BudgetVisitor)
    }
}

struct BudgetVisitor;

impl<'de> Visitor<'de> for BudgetVisitor {
    type Value = BudgetConfig;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a budget: a table of its settings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BudgetConfig, A::Error> {
        let mut config = BudgetConfig::default();
        let mut seen = Seen::default();
        while let Some(key) = map.next_key::<Key>()? {
            seen.mark(key as usize, KEYS)?;
            let (map, config, name) = (&mut map, &mut config, KEYS[key as usize]);
            match key {
                Key::Ratio => value(map, name, config, |c, ratio| c.ratio = Some(ratio)),
                Key::Burst => value(map, name, config, |c, burst| c.burst = Some(burst)),
                Key::MaxOutstanding => value(map, name, config, |c, n| c.max_outstanding = Some(n)),
                Key::MinPerSecond => value(map, name, config, |c, n| c.min_per_second = Some(n)),
                Key::MaxTokens => value(map, name, config, |c, tokens| c.max_tokens = Some(tokens)),
                Key::TokenRatio => value(map, name, config, |c, ratio| c.token_ratio = Some(ratio)),
            }?;
        }
        // What only the whole section tells: which kind of budget it is.
        config.validate().map_err(de::Error::custom)?;
        Ok(config)
    }
}

/// The next value of `map`, given to `config` by `set` and checked against the settings
/// read before it, inside the format's visit of it (so an error says where).
fn value<'de, A: MapAccess<'de>, T: Scalar>(
    map: &mut A,
    key: &'static str,
    config: &mut BudgetConfig,
    set: impl FnOnce(&mut BudgetConfig, T),
) -> Result<(), A::Error> {
    let checked = Checked::new(key, |value| {
        set(config, value);
        config.check(Whole::NotYet)
    });
    map.next_value_seed(checked.in_section("budget"))
}

/// Whether a section was read to its end, so that a missing key is missing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Whole {
    Read,
    NotYet,
}

impl BudgetConfig {
    /// A new budget with these settings.
    ///
    /// Throttling if `max_tokens` or `token_ratio` is set (a missing one counts as
    /// `0.001`, the most cautious), else a token bucket of `ratio` (0 if unset). A section
    /// read from a file passed [`validate`](Self::validate); values set in code that did
    /// not are clamped as the [`Budget`] methods clamp them.
    ///
    /// Each call makes a new budget: to share one between policies, make it once and
    /// give it to each builder (see [`PolicyConfig::to_builder`](super::PolicyConfig::to_builder)).
    pub fn to_budget(&self) -> Budget {
        let budget = if self.is_throttling() {
            let lowest = 0.001;
            Budget::throttling(
                self.max_tokens.unwrap_or(lowest),
                self.token_ratio.unwrap_or(lowest),
            )
        } else {
            let budget = Budget::new(self.ratio.unwrap_or(0.0));
            match self.burst {
                Some(burst) => budget.burst(burst),
                None => budget,
            }
        };
        let budget = match self.max_outstanding {
            Some(copies) => budget.max_outstanding(copies),
            None => budget,
        };
        match self.min_per_second {
            Some(copies) => budget.min_per_second(copies),
            None => budget,
        }
    }

    /// Checks what deserializing checks: one kind of budget, every value in the range its
    /// [`Budget`] method accepts without clamping. The error names the key (`budget.ratio`),
    /// the value and the range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check(Whole::Read)
    }

    /// The checks of [`validate`](Self::validate); those of keys a section lacks only
    /// once it was read whole.
    fn check(&self, read: Whole) -> Result<(), ConfigError> {
        let bucket = self.ratio.is_some() || self.burst.is_some();
        let whole = read == Whole::Read;
        match (bucket, self.is_throttling()) {
            (true, true) => {
                return Err(ConfigError::new(
                    "budget",
                    "budget mixes two kinds: expected a token bucket (`ratio`, optionally \
                     `burst`) or throttling (`max_tokens` and `token_ratio`), not both",
                ))
            }
            (false, false) if whole => {
                return Err(ConfigError::new(
                    "budget",
                    "budget sets no kind: expected a token bucket (`ratio`, optionally \
                     `burst`) or throttling (`max_tokens` and `token_ratio`)",
                ))
            }
            (true, false) if whole && self.ratio.is_none() => {
                return Err(ConfigError::new(
                    "budget.burst",
                    "budget.burst needs the `ratio` of its token bucket",
                ))
            }
            (false, true) if whole && (self.max_tokens.is_none() || self.token_ratio.is_none()) => {
                return Err(ConfigError::new(
                    "budget",
                    "budget throttling needs both `max_tokens` and `token_ratio`",
                ))
            }
            _ => {}
        }
        let at_least = |key, value: Option<f64>, lowest: f64| match value {
            Some(value) if value.is_nan() || value < lowest => Err(ConfigError::out_of_range(
                key,
                value,
                format_args!("at least {lowest}"),
            )),
            _ => Ok(()),
        };
        at_least("budget.ratio", self.ratio, 0.0)?;
        at_least("budget.burst", self.burst, 1.0)?;
        at_least("budget.token_ratio", self.token_ratio, 0.001)?;
        match self.max_tokens {
            Some(tokens) if !(0.001..=1000.0).contains(&tokens) => {
                return Err(ConfigError::out_of_range(
                    "budget.max_tokens",
                    tokens,
                    "0.001..=1000",
                ))
            }
            _ => {}
        }
        if self.max_outstanding == Some(0) {
            return Err(ConfigError::out_of_range(
                "budget.max_outstanding",
                0,
                "at least 1",
            ));
        }
        Ok(())
    }

    fn is_throttling(&self) -> bool {
        self.max_tokens.is_some() || self.token_ratio.is_some()
    }
}
