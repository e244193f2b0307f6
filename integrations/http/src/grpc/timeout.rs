//! The `grpc-timeout` header: parsed, reduced by a copy's start, and written back.

use std::time::Duration;

use http::HeaderValue;

/// The most digits a `grpc-timeout` value may have.
const MAX_DIGITS: usize = 8;
/// The largest value that fits in those digits.
const MAX_VALUE: u64 = 99_999_999;

/// Parses a `grpc-timeout` value (`TimeoutValue TimeoutUnit`: 1 to 8 ASCII digits and
/// one of `H`, `M`, `S`, `m`, `u`, `n`); `None` if malformed.
pub(crate) fn parse(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > MAX_DIGITS || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let count: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(count * 3600),
        b'M' => Duration::from_secs(count * 60),
        b'S' => Duration::from_secs(count),
        b'm' => Duration::from_millis(count),
        b'u' => Duration::from_micros(count),
        b'n' => Duration::from_nanos(count),
        _ => return None,
    })
}

/// Writes `timeout` in the finest unit that fits in 8 digits, rounded up so a copy never
/// gets less time than it has left; past 99,999,999 hours it saturates.
pub(crate) fn format(timeout: Duration) -> HeaderValue {
    const UNITS: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    let nanos = timeout.as_nanos();
    let (count, unit) = UNITS
        .iter()
        .map(|&(per_unit, unit)| (nanos.div_ceil(per_unit), unit))
        .find(|&(count, _)| count <= u128::from(MAX_VALUE))
        .unwrap_or((u128::from(MAX_VALUE), 'H'));
    HeaderValue::from_str(&format!("{count}{unit}")).expect("digits and a unit are a valid header")
}

/// The timeout a copy started `elapsed` after the original may have: what is left of the
/// original's; `None` once nothing is left (a copy sent then could only time out).
pub(crate) fn reduce(timeout: Duration, elapsed: Duration) -> Option<Duration> {
    timeout.checked_sub(elapsed).filter(|left| !left.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeout_parses_every_unit() {
        assert_eq!(parse(b"2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse(b"3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse(b"10S"), Some(Duration::from_secs(10)));
        assert_eq!(parse(b"250m"), Some(Duration::from_millis(250)));
        assert_eq!(parse(b"7u"), Some(Duration::from_micros(7)));
        assert_eq!(parse(b"99999999n"), Some(Duration::from_nanos(99_999_999)));
    }

    #[test]
    fn grpc_timeout_rejects_malformed_values() {
        let rejected = |value: &[u8]| assert_eq!(parse(value), None, "{value:?}");
        // A number and one of the six units, both.
        [&b""[..], b"S", b"10", b"10s"]
            .into_iter()
            .for_each(rejected);
        // One to eight ASCII digits, nothing else.
        [&b"-1S"[..], b"1.5S", b"123456789m", b" 1S"]
            .into_iter()
            .for_each(rejected);
    }

    #[test]
    fn grpc_timeout_formats_in_the_finest_unit_that_fits() {
        let written = |d| format(d).to_str().unwrap().to_owned();
        assert_eq!(written(Duration::from_nanos(1)), "1n");
        assert_eq!(written(Duration::from_millis(50)), "50000000n");
        assert_eq!(written(Duration::from_millis(250)), "250000u");
        assert_eq!(written(Duration::from_secs(10)), "10000000u");
        assert_eq!(written(Duration::from_secs(1000)), "1000000m");
        assert_eq!(written(Duration::ZERO), "0n");
    }

    #[test]
    fn grpc_timeout_format_rounds_up() {
        // 100,000,000.5 µs does not fit in 8 digits of µs: 100,001 ms, rounded up.
        let awkward = Duration::from_nanos(100_000_000_500);
        assert_eq!(format(awkward).to_str().unwrap(), "100001m");
    }

    #[test]
    fn grpc_timeout_format_saturates() {
        assert_eq!(format(Duration::MAX).to_str().unwrap(), "99999999H");
    }

    #[test]
    fn grpc_timeout_format_round_trips() {
        for timeout in [
            Duration::from_nanos(3),
            Duration::from_millis(1234),
            Duration::from_secs(86_400),
        ] {
            assert_eq!(parse(format(timeout).as_bytes()), Some(timeout));
        }
    }

    #[test]
    fn grpc_timeout_is_reduced_by_the_copy_start() {
        let second = Duration::from_secs(1);
        let reduced = reduce(second, Duration::from_millis(300));
        assert_eq!(reduced, Some(Duration::from_millis(700)));
        assert_eq!(reduce(second, Duration::ZERO), Some(second));
        assert_eq!(reduce(second, second), None);
        assert_eq!(reduce(second, Duration::from_secs(5)), None);
    }
}
