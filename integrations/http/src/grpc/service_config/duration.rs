//! Durations in protobuf's JSON form (`google.protobuf.Duration`): seconds with up to nine
//! decimals and an `s`, as `"0.1s"` or `"1.000000001s"`.

use std::time::Duration;

/// The most seconds a protobuf duration holds (10,000 years).
const MAX_SECONDS: u64 = 315_576_000_000;

/// Why a text is not a duration a hedging delay can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unreadable {
    /// Not of the form `-?SECONDS(.FRACTION)?s`.
    Malformed,
    /// Below zero.
    Negative,
    /// Beyond protobuf's range.
    TooLong,
}

/// `text` as a duration: digits, optionally a point and one to nine more, then `s`; a
/// leading `-` makes it negative, which only `-0s` survives.
pub(super) fn parse(text: &str) -> Result<Duration, Unreadable> {
    let unsigned = text.strip_prefix('-');
    let negative = unsigned.is_some();
    let number = unsigned.unwrap_or(text).strip_suffix('s');
    let number = number.ok_or(Unreadable::Malformed)?;
    let (seconds, fraction) = number.split_once('.').unwrap_or((number, "0"));
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !digits(seconds) || !digits(fraction) || fraction.len() > 9 {
        return Err(Unreadable::Malformed);
    }
    let seconds: u64 = seconds.parse().map_err(|_| Unreadable::TooLong)?;
    if seconds > MAX_SECONDS {
        return Err(Unreadable::TooLong);
    }
    let scale = 10u32.pow(9 - fraction.len() as u32);
    let nanos = fraction.parse::<u32>().map_err(|_| Unreadable::Malformed)? * scale;
    let duration = Duration::new(seconds, nanos);
    match negative && !duration.is_zero() {
        true => Err(Unreadable::Negative),
        false => Ok(duration),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_durations_read_to_the_nanosecond() {
        let read = |text| parse(text).unwrap();
        assert_eq!(read("0.1s"), Duration::from_millis(100));
        assert_eq!(read("1.000000001s"), Duration::new(1, 1));
        assert_eq!(read("2.1s"), Duration::from_millis(2100));
        assert_eq!(read("0s"), Duration::ZERO);
        assert_eq!(read("-0s"), Duration::ZERO);
        assert_eq!(read("0.000000001s"), Duration::from_nanos(1));
        assert_eq!(read("315576000000s"), Duration::from_secs(MAX_SECONDS));
    }

    #[test]
    fn other_texts_are_not_durations() {
        for text in [
            "",
            "s",
            "1",
            "1ms",
            "100ms",
            "0.1",
            ".5s",
            "1.s",
            "+1s",
            "1.0000000001s",
            "1e3s",
            " 1s",
            "1 s",
            "0x1s",
            "1.-5s",
        ] {
            assert_eq!(parse(text), Err(Unreadable::Malformed), "{text:?}");
        }
        assert_eq!(parse("-0.1s"), Err(Unreadable::Negative));
        assert_eq!(parse("315576000001s"), Err(Unreadable::TooLong));
        assert_eq!(parse("99999999999999999999s"), Err(Unreadable::TooLong));
    }
}
