//! When a call was made, as CSV files write it: a number of seconds (`1733356800.125`, or
//! with a unit: `1733356800125ms`), or an RFC 3339 date and time
//! (`2024-12-05T00:00:00.125Z`, `2024-12-05 00:00:00+01:00`).

use crate::unit::{parse_nanos, Unit};

/// The nanoseconds since the Unix epoch (or since any origin, for a number) `text` says;
/// `None` if it is neither a number nor an RFC 3339 time at or after 1970.
pub fn parse_timestamp(text: &str) -> Option<u64> {
    let text = text.trim();
    parse_nanos(text, Unit::Seconds)
        .ok()
        .or_else(|| rfc3339(text))
}

/// An RFC 3339 date and time, `T` or a space between them, `Z` or an offset.
fn rfc3339(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = text.get(range)?;
        digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse().ok())?
    };
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
    {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos: i64 = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (place, digit) in fraction[..digits.min(9)].bytes().enumerate() {
            nanos += i64::from(digit - b'0') * 10i64.pow(8 - place as u32);
        }
        rest = &fraction[digits..];
    }
    let offset_seconds = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            let (hours, minutes) = (number_of(&rest[1..3])?, number_of(&rest[4..6])?);
            sign * (hours * 3_600 + minutes * 60)
        }
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second
        - offset_seconds;
    let total = i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    u64::try_from(total).ok()
}

fn number_of(digits: &str) -> Option<i64> {
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())?
}

/// Days from 1970-01-01 to `year-month-day` in the proleptic Gregorian calendar (Howard
/// Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_seconds_unless_suffixed() {
        assert_eq!(parse_timestamp("12.5"), Some(12_500_000_000));
        assert_eq!(
            parse_timestamp("1733356800125ms"),
            Some(1_733_356_800_125_000_000)
        );
    }

    #[test]
    fn rfc3339_times_are_nanoseconds_since_the_epoch() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_timestamp("2024-12-05T00:00:00.125Z"),
            Some(1_733_356_800_125_000_000)
        );
        assert_eq!(
            parse_timestamp("2024-12-05 01:00:00+01:00"),
            Some(1_733_356_800_000_000_000)
        );
        assert_eq!(
            parse_timestamp("2000-02-29T12:00:00-00:30"),
            Some(951_827_400_000_000_000)
        );
    }

    #[test]
    fn anything_else_is_no_timestamp() {
        for text in [
            "",
            "soon",
            "2024-13-05T00:00:00Z",
            "2024-12-05",
            "2024-12-05T00:00:00",
            "1969-12-31T23:59:59Z",
            "2024-12-05T00:00:00.Z",
            "2024-12-05T00:00:00+0100",
        ] {
            assert_eq!(parse_timestamp(text), None, "{text:?}");
        }
    }
}
