//! Durations as people write them in configuration files: `"20ms"`, `"1.5s"`, `"250us"`,
//! `"1m30s"`; parsed exactly (no floating point), and written back in the same form.

use alloc::string::String;
use core::fmt::Write as _;
use core::time::Duration;

use serde::Serializer;

/// The longest duration a file may give: what the adaptive delay's bounds can hold
/// exactly (`u64::MAX - 1` nanoseconds, about 584 years).
pub(super) const LONGEST: Duration = Duration::from_nanos(u64::MAX - 1);

/// The units a duration may be written in, with their length in nanoseconds.
const UNITS: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Why a text is not a duration a file may give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unreadable {
    /// Not numbers with units.
    Malformed,
    /// A duration with a minus sign.
    Negative,
    /// Longer than [`LONGEST`].
    TooLong,
}

/// Parses one or more numbers, each followed by a unit (`ns`, `us` or `µs`, `ms`, `s`,
/// `m`, `h`), optionally separated by spaces: `"20ms"`, `"1.5s"`, `"1m 30s"`. A bare `"0"`
/// is zero. Digits below a nanosecond are dropped.
pub(super) fn parse(text: &str) -> Result<Duration, Unreadable> {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix('-') {
        // Say "negative" only of what would otherwise be a duration.
        return Err(match parse(rest) {
            Ok(_) | Err(Unreadable::Negative) => Unreadable::Negative,
            Err(other) => other,
        });
    }
    match text {
        "" => return Err(Unreadable::Malformed),
        "0" => return Ok(Duration::ZERO),
        _ => {}
    }
    let mut rest = text;
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let (nanos, after) = term(rest).ok_or(Unreadable::Malformed)?;
        total = total.checked_add(nanos).ok_or(Unreadable::TooLong)?;
        rest = after.trim_start();
    }
    match u64::try_from(total) {
        Ok(nanos) if nanos < u64::MAX => Ok(Duration::from_nanos(nanos)),
        _ => Err(Unreadable::TooLong),
    }
}

/// One number and its unit at the start of `text`, in nanoseconds (saturating at
/// `u128::MAX`, which is too long either way), and the text after it.
fn term(text: &str) -> Option<(u128, &str)> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let whole_len = digits(text);
    if whole_len == 0 {
        return None;
    }
    let (whole, mut rest) = text.split_at(whole_len);
    let mut fraction = "";
    if let Some(after_point) = rest.strip_prefix('.') {
        let len = digits(after_point);
        if len == 0 {
            return None;
        }
        (fraction, rest) = after_point.split_at(len);
    }
    let unit_len = rest
        .char_indices()
        .find(|(_, c)| c.is_ascii_digit() || c.is_whitespace())
        .map_or(rest.len(), |(at, _)| at);
    let (unit, rest) = rest.split_at(unit_len);
    let &(_, unit) = UNITS.iter().find(|(name, _)| *name == unit)?;
    let whole = whole.bytes().try_fold(0u128, |value, digit| {
        value.checked_mul(10)?.checked_add(u128::from(digit - b'0'))
    });
    let whole = whole.and_then(|whole| whole.checked_mul(unit));
    // Eighteen digits are finer than a nanosecond of any unit; the rest are dropped.
    let (kept, scale) = fraction
        .bytes()
        .take(18)
        .fold((0u128, 1u128), |(value, scale), digit| {
            (value * 10 + u128::from(digit - b'0'), scale * 10)
        });
    let nanos = whole
        .and_then(|whole| whole.checked_add(kept * unit / scale))
        .unwrap_or(u128::MAX);
    Some((nanos, rest))
}

/// `duration` in the form [`parse`] reads back exactly: in the largest of `s`, `ms`, `us`
/// and `ns` it reaches, with as many decimals as it needs (`"1.5s"`, `"20ms"`, `"0s"`).
pub(super) fn format(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    let (unit, name) = match nanos {
        0 => return String::from("0s"),
        1_000_000_000.. => (1_000_000_000, "s"),
        1_000_000.. => (1_000_000, "ms"),
        1_000.. => (1_000, "us"),
        _ => (1, "ns"),
    };
    let mut text = String::new();
    let _ = write!(text, "{}", nanos / unit);
    let fraction = nanos % unit;
    if fraction > 0 {
        let width = unit.ilog10() as usize;
        let mut digits = String::new();
        let _ = write!(digits, "{fraction:0width$}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    text.push_str(name);
    text
}

/// The text of a duration in a file, as the file gave it: checked by the field it is for,
/// so that an error names the key (read as a `read::Scalar`).
pub(super) struct Text(pub(super) String);

/// Writes an optional duration as [`format`] does (a `None` is skipped by the field).
pub(super) fn serialize<S: Serializer>(
    duration: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match duration {
        Some(duration) => serializer.serialize_str(&format(*duration)),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_forms_parse_exactly() {
        let cases = [
            ("20ms", Duration::from_millis(20)),
            ("1.5s", Duration::from_millis(1500)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("100ns", Duration::from_nanos(100)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("1m30s", Duration::from_secs(90)),
            ("1m 30s", Duration::from_secs(90)),
            (" 0.001s ", Duration::from_millis(1)),
            ("0", Duration::ZERO),
            ("0ms", Duration::ZERO),
            ("1.0000000009s", Duration::from_nanos(1_000_000_000)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn what_is_not_a_duration_is_refused() {
        for text in [
            "", "abc", "20", "ms", "1.s", ".5s", "5 ms", "5sec", "1e3ms", "+5ms",
        ] {
            assert_eq!(parse(text), Err(Unreadable::Malformed), "{text:?}");
        }
        assert_eq!(parse("-5ms"), Err(Unreadable::Negative));
        assert_eq!(parse("-0"), Err(Unreadable::Negative));
        assert_eq!(parse("-abc"), Err(Unreadable::Malformed));
        assert_eq!(parse("600000000h"), Err(Unreadable::TooLong));
        assert_eq!(
            parse("99999999999999999999999999999999999999999h"),
            Err(Unreadable::TooLong)
        );
    }

    #[test]
    fn the_longest_duration_a_file_may_give_is_exact() {
        assert_eq!(parse(&format(LONGEST)), Ok(LONGEST));
        let one_more = LONGEST + Duration::from_nanos(1);
        assert_eq!(parse(&format(one_more)), Err(Unreadable::TooLong));
    }

    #[test]
    fn formatted_durations_read_back_the_same() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::from_micros(250), "250us"),
            (Duration::from_nanos(1_500), "1.5us"),
            (Duration::from_millis(20), "20ms"),
            (Duration::from_micros(1_250), "1.25ms"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(90), "90s"),
            (Duration::new(3, 1), "3.000000001s"),
        ];
        for (duration, text) in cases {
            assert_eq!(format(duration), text);
            assert_eq!(parse(text), Ok(duration), "{text}");
        }
    }
}
