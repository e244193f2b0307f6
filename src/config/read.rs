//! Reading a configuration from a file: each value checked inside the format's own visit
//! of it, against the settings read before it, so that an error carries the value's
//! position (line and column) wherever the format gives one, in sections too.
//!
//! What only the whole table can tell (a section that sets no kind of budget, a bound
//! that holds against a default) is checked at its end, where the format places its
//! table.

use alloc::borrow::ToOwned;
use alloc::string::String;
use core::fmt;
use core::marker::PhantomData;

use serde::de::{self, DeserializeSeed, Deserializer, Unexpected, Visitor};

use super::duration::Text;
use super::ConfigError;

/// A value as a file wrote it.
#[derive(Clone, Copy)]
pub(super) enum Written<'a> {
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Text(&'a str),
}

impl Written<'_> {
    fn unexpected(&self) -> Unexpected<'_> {
        match *self {
            Written::Bool(value) => Unexpected::Bool(value),
            Written::Unsigned(value) => Unexpected::Unsigned(value),
            Written::Signed(value) => Unexpected::Signed(value),
            Written::Float(value) => Unexpected::Float(value),
            Written::Text(value) => Unexpected::Str(value),
        }
    }

    fn is_number(&self) -> bool {
        matches!(
            self,
            Written::Unsigned(_) | Written::Signed(_) | Written::Float(_)
        )
    }
}

/// A kind of value a setting takes: how to ask a format for it, and what it makes of
/// what was written.
pub(super) trait Scalar: Sized {
    /// What the setting expects, as an error says it.
    const EXPECTED: &'static str;
    /// Whether it is a number (a number of the wrong range is an invalid value, anything
    /// else of the wrong kind).
    const NUMBER: bool = false;

    /// Asks `deserializer` for this kind of value, as serde's own impl does.
    fn ask<'de, D: Deserializer<'de>, V: Visitor<'de>>(
        deserializer: D,
        visitor: V,
    ) -> Result<V::Value, D::Error>;

    /// The value, if `written` is one.
    fn read(written: Written<'_>) -> Option<Self>;
}

/// Each kind a file's value may be read as: what it is called in an error, whether it
/// is a number, what serde is asked for, and which written values it takes.
macro_rules! scalars {
    ($($kind:ty: $name:literal, $number:literal, $ask:ident, |$w:ident| $read:expr;)*) => {$(
        impl Scalar for $kind {
            const EXPECTED: &'static str = $name;
            const NUMBER: bool = $number;
            fn ask<'de, D: Deserializer<'de>, V: Visitor<'de>>(
                d: D,
                v: V,
            ) -> Result<V::Value, D::Error> {
                d.$ask(v)
            }
            fn read($w: Written<'_>) -> Option<Self> {
                $read
            }
        }
    )*};
}

scalars! {
    bool: "a boolean", false, deserialize_bool, |written| match written {
        Written::Bool(value) => Some(value),
        _ => None,
    };
    String: "a string", false, deserialize_string, |written| match written {
        Written::Text(text) => Some(text.to_owned()),
        _ => None,
    };
    f64: "f64", true, deserialize_f64, |written| match written {
        Written::Float(value) => Some(value),
        Written::Unsigned(value) => Some(value as f64),
        Written::Signed(value) => Some(value as f64),
        _ => None,
    };
    // Whole numbers: from either sign, if in range.
    usize: "usize", true, deserialize_u64, |written| match written {
        Written::Unsigned(value) => usize::try_from(value).ok(),
        Written::Signed(value) => usize::try_from(value).ok(),
        _ => None,
    };
    u32: "u32", true, deserialize_u32, |written| match written {
        Written::Unsigned(value) => u32::try_from(value).ok(),
        Written::Signed(value) => u32::try_from(value).ok(),
        _ => None,
    };
}

impl Scalar for Text {
    const EXPECTED: &'static str = "a duration as a string, such as \"20ms\" or \"1.5s\"";
    fn ask<'de, D: Deserializer<'de>, V: Visitor<'de>>(d: D, v: V) -> Result<V::Value, D::Error> {
        d.deserialize_str(v)
    }
    fn read(written: Written<'_>) -> Option<Self> {
        String::read(written).map(Text)
    }
}

/// One value of a table, of kind `T`, handed to `accept` inside the format's visit of it:
/// an error `accept` returns carries the value's position. `null` (YAML's `~`) is an
/// absent key, and never reaches `accept`.
pub(super) struct Checked<T, F> {
    /// The key the value is for, and the section it is in, if any (`budget`): an error
    /// names them as `max_copies`, `budget.ratio`.
    key: &'static str,
    section: Option<&'static str>,
    accept: F,
    kind: PhantomData<fn() -> T>,
}

impl<T, F> Checked<T, F>
where
    T: Scalar,
    F: FnOnce(T) -> Result<(), ConfigError>,
{
    pub(super) fn new(key: &'static str, accept: F) -> Self {
        Checked {
            key,
            section: None,
            accept,
            kind: PhantomData,
        }
    }

    /// The same, for a key of `section`.
    pub(super) fn in_section(self, section: &'static str) -> Self {
        Checked {
            section: Some(section),
            ..self
        }
    }

    fn take<E: de::Error>(self, written: Written<'_>) -> Result<(), E> {
        let Some(value) = T::read(written) else {
            return Err(match T::NUMBER && written.is_number() {
                true => E::invalid_value(written.unexpected(), &self),
                false => E::invalid_type(written.unexpected(), &self),
            });
        };
        (self.accept)(value).map_err(E::custom)
    }
}

impl<'de, T, F> DeserializeSeed<'de> for Checked<T, F>
where
    T: Scalar,
    F: FnOnce(T) -> Result<(), ConfigError>,
{
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de, T, F> Visitor<'de> for Checked<T, F>
where
    T: Scalar,
    F: FnOnce(T) -> Result<(), ConfigError>,
{
    type Value = ();

    /// What the key takes, and the key: a format that meets a value of another kind
    /// (JSON's `"3"` for a number) says so with these words, and not every format names
    /// the key (JSON does not).
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.section {
            Some(section) => write!(f, "{} for {section}.{}", T::EXPECTED, self.key),
            None => write!(f, "{} for {}", T::EXPECTED, self.key),
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        T::ask(deserializer, self)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<(), E> {
        self.take(Written::Bool(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.take(Written::Unsigned(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.take(Written::Signed(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        self.take(Written::Float(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        self.take(Written::Text(value))
    }
}

/// The keys of a table read so far, to refuse one given twice as serde's derive does.
#[derive(Default)]
pub(super) struct Seen(u64);

impl Seen {
    /// Marks key `index` of `keys`; an error if it was marked before.
    pub(super) fn mark<E: de::Error>(
        &mut self,
        index: usize,
        keys: &[&'static str],
    ) -> Result<(), E> {
        let bit = 1 << index;
        if self.0 & bit != 0 {
            return Err(E::duplicate_field(keys[index]));
        }
        self.0 |= bit;
        Ok(())
    }
}
