//! Latencies as people write them: `12.5`, `12.5ms`, `250us`, `1.2e-3s`, in a default unit
//! when no suffix is given.

use std::fmt;
use std::str::FromStr;

/// The unit of a latency written without a suffix (`--unit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds (`ns`).
    Nanos,
    /// Microseconds (`us`, also `µs`).
    Micros,
    /// Milliseconds (`ms`).
    Millis,
    /// Seconds (`s`).
    Seconds,
}

impl Unit {
    /// Nanoseconds in one of this unit.
    pub const fn nanos(self) -> u64 {
        match self {
            Unit::Nanos => 1,
            Unit::Micros => 1_000,
            Unit::Millis => 1_000_000,
            Unit::Seconds => 1_000_000_000,
        }
    }

    /// The suffix this unit is written with.
    pub const fn suffix(self) -> &'static str {
        match self {
            Unit::Nanos => "ns",
            Unit::Micros => "us",
            Unit::Millis => "ms",
            Unit::Seconds => "s",
        }
    }

    /// The unit a suffix names, if any.
    fn of_suffix(suffix: &str) -> Option<Unit> {
        Some(match suffix {
            "ns" => Unit::Nanos,
            "us" | "µs" | "μs" => Unit::Micros,
            "ms" => Unit::Millis,
            "s" => Unit::Seconds,
            _ => return None,
        })
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.suffix())
    }
}

impl FromStr for Unit {
    type Err = String;

    fn from_str(text: &str) -> Result<Unit, String> {
        Unit::of_suffix(text).ok_or_else(|| format!("expected ns, us, ms or s, found {text:?}"))
    }
}

/// Why a text is not a latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreadable {
    /// Not a number, with or without a unit suffix.
    NotANumber,
    /// A number below zero.
    Negative,
    /// Longer than a latency can be (over about 584 years).
    TooLong,
}

impl Unreadable {
    /// What was expected, for an error message about `found`.
    pub fn explain(self, found: &str) -> String {
        match self {
            Unreadable::NotANumber => format!(
                "expected a latency such as 12.5 or 12.5ms (units ns, us, ms, s), found {found:?}"
            ),
            Unreadable::Negative => {
                format!("expected a latency of zero or more, found the negative {found:?}")
            }
            Unreadable::TooLong => format!("expected a latency under 584 years, found {found:?}"),
        }
    }
}

/// The nanoseconds `text` says, in `unit` unless it ends with a unit suffix
/// (`ns`, `us`/`µs`, `ms`, `s`), which wins. Decimal digits are read exactly; an exponent
/// (`1.5e-3`) through a float. Digits below a nanosecond are rounded.
pub fn parse_nanos(text: &str, unit: Unit) -> Result<u64, Unreadable> {
    let text = text.trim();
    let split = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphabetic())
        .last()
        .map_or(text.len(), |(at, _)| at);
    let (number, suffix) = text.split_at(split);
    let unit = match suffix {
        "" => unit,
        // `1e3` ends in no unit; `1.5e` is no number.
        _ => Unit::of_suffix(suffix).ok_or(Unreadable::NotANumber)?,
    };
    let number = number.trim_end();
    if let Some(rest) = number.strip_prefix('-') {
        return match parse_number(rest, unit) {
            Ok(0) => Ok(0),
            Ok(_) | Err(Unreadable::TooLong) => Err(Unreadable::Negative),
            Err(other) => Err(other),
        };
    }
    parse_number(number.strip_prefix('+').unwrap_or(number), unit)
}

/// A non-negative decimal number of `unit`, in nanoseconds.
fn parse_number(number: &str, unit: Unit) -> Result<u64, Unreadable> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return parse_float(number, unit);
    }
    let scale = u128::from(unit.nanos());
    let mut nanos: u128 = 0;
    for digit in whole.bytes() {
        nanos = nanos
            .checked_mul(10)
            .and_then(|n| n.checked_add(u128::from(digit - b'0')))
            .ok_or(Unreadable::TooLong)?;
    }
    nanos = nanos.checked_mul(scale).ok_or(Unreadable::TooLong)?;
    // The fraction, to the nanosecond: digits past the unit's nanoseconds round.
    let mut place = scale;
    let mut rest: u128 = 0;
    for digit in fraction.bytes() {
        let digit = u128::from(digit - b'0');
        if place >= 10 {
            place /= 10;
            nanos = nanos
                .checked_add(digit * place)
                .ok_or(Unreadable::TooLong)?;
        } else {
            rest = digit;
            break;
        }
    }
    if rest >= 5 {
        nanos = nanos.checked_add(1).ok_or(Unreadable::TooLong)?;
    }
    u64::try_from(nanos)
        .ok()
        .filter(|&nanos| nanos < u64::MAX)
        .ok_or(Unreadable::TooLong)
}

/// A number in scientific notation (`1.5e-3`), through a float.
fn parse_float(number: &str, unit: Unit) -> Result<u64, Unreadable> {
    if !number.contains(['e', 'E']) {
        return Err(Unreadable::NotANumber);
    }
    let value: f64 = number.parse().map_err(|_| Unreadable::NotANumber)?;
    if !value.is_finite() {
        return Err(Unreadable::NotANumber);
    }
    if value < 0.0 {
        return Err(Unreadable::Negative);
    }
    let nanos = (value * unit.nanos() as f64).round();
    if nanos >= u64::MAX as f64 {
        return Err(Unreadable::TooLong);
    }
    Ok(nanos as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_wins_over_the_default_unit() {
        assert_eq!(parse_nanos("12.5ms", Unit::Seconds), Ok(12_500_000));
        assert_eq!(parse_nanos("250us", Unit::Millis), Ok(250_000));
        assert_eq!(parse_nanos("250µs", Unit::Millis), Ok(250_000));
        assert_eq!(parse_nanos("3 s", Unit::Millis), Ok(3_000_000_000));
        assert_eq!(parse_nanos("7ns", Unit::Millis), Ok(7));
    }

    #[test]
    fn bare_numbers_take_the_default_unit() {
        assert_eq!(parse_nanos("12.5", Unit::Millis), Ok(12_500_000));
        assert_eq!(parse_nanos("0.0000015", Unit::Millis), Ok(2));
        assert_eq!(parse_nanos(".5", Unit::Seconds), Ok(500_000_000));
        assert_eq!(parse_nanos("1.5e-3", Unit::Seconds), Ok(1_500_000));
        assert_eq!(parse_nanos("+4", Unit::Micros), Ok(4_000));
    }

    #[test]
    fn negative_and_malformed_latencies_are_told_apart() {
        assert_eq!(parse_nanos("-3", Unit::Millis), Err(Unreadable::Negative));
        assert_eq!(
            parse_nanos("-2.5ms", Unit::Millis),
            Err(Unreadable::Negative)
        );
        assert_eq!(parse_nanos("-1e3", Unit::Millis), Err(Unreadable::Negative));
        assert_eq!(parse_nanos("-0", Unit::Millis), Ok(0));
        for text in [
            "",
            "abc",
            "12.5 parsecs",
            "1.2.3",
            "ms",
            "NaN",
            "inf",
            "1e999",
            ".",
        ] {
            assert_eq!(
                parse_nanos(text, Unit::Millis),
                Err(Unreadable::NotANumber),
                "{text:?}"
            );
        }
        assert_eq!(
            parse_nanos("99999999999999999999s", Unit::Millis),
            Err(Unreadable::TooLong)
        );
    }
}
