//! [`ConfigError`]: what a configuration refuses, and why.

use alloc::format;
use alloc::string::String;
use core::fmt;

/// A setting a configuration refuses: a value out of the range its builder method
/// accepts, a value that is not of its kind (a duration that does not read as one), or
/// settings that contradict each other.
///
/// Its message names the key, the value and what is accepted, as in
/// `max_copies = 0 is out of range: expected 1..=64`. Deserializing a [`PolicyConfig`](super::PolicyConfig)
/// reports it as the format's own error, which adds where in the file (the line and
/// column of the value at fault, in TOML, YAML and JSON), and
/// [`PolicyConfig::validate`](super::PolicyConfig::validate) returns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    key: &'static str,
    message: String,
}

impl ConfigError {
    pub(super) fn new(key: &'static str, message: impl Into<String>) -> Self {
        ConfigError {
            key,
            message: message.into(),
        }
    }

    pub(super) fn out_of_range(
        key: &'static str,
        value: impl fmt::Display,
        expected: impl fmt::Display,
    ) -> Self {
        ConfigError::new(
            key,
            format!("{key} = {value} is out of range: expected {expected}"),
        )
    }

    /// The key at fault, as a file spells it: `max_copies`, `budget.ratio`.
    pub fn key(&self) -> &str {
        self.key
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl std::error::Error for ConfigError {}
