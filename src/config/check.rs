//! What a [`PolicyConfig`] may hold: every value in the range its builder method accepts
//! without clamping, and no two settings contradicting each other.

use alloc::format;
use core::fmt;
use core::time::Duration;

use super::duration::{self, LONGEST};
use super::{ConfigError, PolicyConfig};
use crate::builder::PolicyBuilder;

/// Whether a setting not given takes its default, or may still be given by a later key.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Defaults {
    Apply,
    Later,
}

/// The default of [`PolicyBuilder::min_delay`], which bounds a file's adaptive `delay`.
const DEFAULT_MIN_DELAY: Duration = Duration::from_millis(1);

impl PolicyConfig {
    /// Checks what deserializing checks (see the [module docs](crate::config#validation)), for a
    /// config put together in code: every value within the range its builder method
    /// accepts without clamping, no two settings contradicting each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check(Defaults::Apply)
    }

    /// What [`validate`](Self::validate) refuses whatever a later key says: the checks of
    /// the values set so far among themselves, no default taken for one not set yet.
    pub(super) fn check_read(&self) -> Result<(), ConfigError> {
        self.check(Defaults::Later)
    }

    fn check(&self, defaults: Defaults) -> Result<(), ConfigError> {
        let max_copies = PolicyBuilder::<()>::MAX_COPIES;
        if let Some(copies) = self.max_copies.filter(|n| !(1..=max_copies).contains(n)) {
            return Err(ConfigError::out_of_range(
                "max_copies",
                copies,
                format_args!("1..={max_copies}"),
            ));
        }
        fraction(
            "adaptive_delay",
            self.adaptive_delay,
            "a quantile in 0.0..=1.0",
        )?;
        fraction(
            "optimal_delay",
            self.optimal_delay,
            "a quantile in 0.0..=1.0",
        )?;
        fraction("hedge_probability", self.hedge_probability, "0.0..=1.0")?;
        fraction("min_win_rate", self.min_win_rate, "0.0..=1.0")?;
        let max_keys = PolicyBuilder::<()>::MAX_KEYS;
        if let Some(keys) = self.adaptive_keys.filter(|n| *n > max_keys) {
            return Err(ConfigError::out_of_range(
                "adaptive_keys",
                keys,
                format_args!("0..={max_keys}"),
            ));
        }
        if self.adaptive_min_samples == Some(0) {
            return Err(ConfigError::out_of_range(
                "adaptive_min_samples",
                0,
                "at least 1",
            ));
        }
        let durations = [
            ("delay", self.delay),
            ("max_delay", self.max_delay),
            ("min_delay", self.min_delay),
            ("adaptive_window", self.adaptive_window),
        ];
        for (key, value) in durations {
            if let Some(value) = value.filter(|value| *value > LONGEST) {
                return Err(too_long(key, duration::format(value)));
            }
        }
        if let Some(window) = self.adaptive_window {
            let shortest = Duration::from_millis(100);
            if window < shortest {
                return Err(ConfigError::out_of_range(
                    "adaptive_window",
                    duration::format(window),
                    "at least 100ms",
                ));
            }
        }
        self.check_modes()?;
        self.check_bounds(defaults)?;
        if self.catch_unwind && cfg!(not(feature = "std")) {
            return Err(ConfigError::new(
                "catch_unwind",
                "catch_unwind = true needs the `std` feature of hedging",
            ));
        }
        match &self.budget {
            Some(budget) if defaults == Defaults::Apply => budget.validate(),
            _ => Ok(()), // a section read from a file was checked where it was read
        }
    }

    /// One mode at most, and `adaptive_delay` or `optimal_delay` only in the `delay` mode.
    fn check_modes(&self) -> Result<(), ConfigError> {
        let modes = [
            ("parallel", self.parallel),
            ("fallback", self.fallback),
            ("delay", self.delay.is_some()),
            ("adaptive_delay", self.adaptive_delay.is_some()),
            ("optimal_delay", self.optimal_delay.is_some()),
        ];
        let mut set = modes.iter().filter(|(_, set)| *set).map(|(key, _)| *key);
        let (Some(first), Some(second)) = (set.next(), set.next()) else {
            return Ok(());
        };
        // `delay` with one of `adaptive_delay` and `optimal_delay` is one mode.
        let (first, second) = match (first, set.next()) {
            ("delay", None) => return Ok(()),
            ("delay", Some(third)) => (second, third),
            _ => (first, second),
        };
        Err(ConfigError::new(
            first,
            format!(
                "{first} and {second} are both set: expected one mode, `delay` (optionally \
                 with `adaptive_delay` or `optimal_delay`), `parallel` or `fallback`"
            ),
        ))
    }

    /// `min_delay <= max_delay` (the default `min_delay` too, with `adaptive_delay`), and a
    /// `delay` within the bounds that apply to it.
    fn check_bounds(&self, defaults: Defaults) -> Result<(), ConfigError> {
        let adaptive = self.adaptive_delay.is_some() || self.optimal_delay.is_some();
        let min = match self.min_delay {
            Some(min) => Some(min),
            None if adaptive && defaults == Defaults::Apply => Some(DEFAULT_MIN_DELAY),
            None => None,
        };
        let outside = |key, value: Duration, bound: &str, bound_key: &str, limit: Duration| {
            ConfigError::out_of_range(
                key,
                duration::format(value),
                format_args!("{bound} {bound_key} = {}", duration::format(limit)),
            )
        };
        if let (Some(min), Some(max)) = (min, self.max_delay) {
            if max < min {
                return Err(outside("max_delay", max, "at least", "min_delay", min));
            }
        }
        let Some(delay) = self.delay else {
            return Ok(());
        };
        if let Some(max) = self.max_delay.filter(|max| delay > *max) {
            return Err(outside("delay", delay, "at most", "max_delay", max));
        }
        match min {
            Some(min) if adaptive && delay < min => {
                Err(outside("delay", delay, "at least", "min_delay", min))
            }
            _ => Ok(()),
        }
    }
}

/// `value`, if set, within `0.0..=1.0` (NaN is not).
fn fraction(key: &'static str, value: Option<f64>, range: &str) -> Result<(), ConfigError> {
    match value {
        Some(value) if !(0.0..=1.0).contains(&value) => {
            Err(ConfigError::out_of_range(key, value, range))
        }
        _ => Ok(()),
    }
}

pub(super) fn too_long(key: &'static str, value: impl fmt::Display) -> ConfigError {
    ConfigError::out_of_range(
        key,
        value,
        format_args!("at most {} (u64::MAX - 1 ns)", duration::format(LONGEST)),
    )
}
