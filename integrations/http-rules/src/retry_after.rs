//! [`retry_after`]: how long a response's `Retry-After` header asks to wait.

use std::time::{Duration, SystemTime};

use http::header::RETRY_AFTER;
use http::HeaderMap;

/// How long a response's `Retry-After` header asks to wait, counted from `now`, in
/// either of its RFC 9110 forms: `delay-seconds` (`120`) or an HTTP date
/// (`Fri, 31 Dec 1999 23:59:59 GMT`, and the two obsolete date formats). A date in the
/// past is zero; more seconds than a `u64` holds saturate; a missing or malformed header
/// is `None`.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use http::header::{HeaderMap, HeaderValue, RETRY_AFTER};
///
/// let mut headers = HeaderMap::new();
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("120"));
/// let now = SystemTime::now();
/// assert_eq!(hedging_http_rules::retry_after(&headers, now), Some(Duration::from_secs(120)));
///
/// headers.insert(RETRY_AFTER, HeaderValue::from_static("Fri, 31 Dec 1999 23:59:59 GMT"));
/// assert_eq!(hedging_http_rules::retry_after(&headers, now), Some(Duration::ZERO));
/// ```
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    parse(headers.get(RETRY_AFTER)?.as_bytes(), now)
}

/// A `Retry-After` value read at `now`.
fn parse(value: &[u8], now: SystemTime) -> Option<Duration> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if text.is_empty() {
        return None;
    }
    if text.bytes().all(|byte| byte.is_ascii_digit()) {
        // `delay-seconds = 1*DIGIT`; a value past u64 saturates rather than failing.
        return Some(Duration::from_secs(text.parse().unwrap_or(u64::MAX)));
    }
    let date = httpdate::parse_http_date(text).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// 1999-12-31T23:59:59Z, the date in RFC 9110's examples.
    const NEW_YEARS_EVE: u64 = 946_684_799;

    #[test]
    fn retry_after_reads_delay_seconds() {
        assert_eq!(parse(b"120", at(0)), Some(Duration::from_secs(120)));
        assert_eq!(parse(b"0", at(0)), Some(Duration::ZERO));
        assert_eq!(parse(b" 7 ", at(0)), Some(Duration::from_secs(7)));
    }

    #[test]
    fn retry_after_saturates_a_huge_delay() {
        let huge = b"99999999999999999999999999";
        assert_eq!(parse(huge, at(0)), Some(Duration::from_secs(u64::MAX)));
    }

    #[test]
    fn retry_after_reads_an_imf_fixdate() {
        let date = b"Fri, 31 Dec 1999 23:59:59 GMT";
        let now = at(NEW_YEARS_EVE - 30);
        assert_eq!(parse(date, now), Some(Duration::from_secs(30)));
    }

    #[test]
    fn retry_after_reads_the_obsolete_date_forms() {
        let now = at(NEW_YEARS_EVE - 5);
        let rfc850 = b"Friday, 31-Dec-99 23:59:59 GMT";
        let asctime = b"Fri Dec 31 23:59:59 1999";
        assert_eq!(parse(rfc850, now), Some(Duration::from_secs(5)));
        assert_eq!(parse(asctime, now), Some(Duration::from_secs(5)));
    }

    #[test]
    fn retry_after_a_date_in_the_past_is_zero() {
        let date = b"Fri, 31 Dec 1999 23:59:59 GMT";
        assert_eq!(parse(date, at(NEW_YEARS_EVE + 60)), Some(Duration::ZERO));
    }

    #[test]
    fn retry_after_malformed_is_none() {
        let ignored = |value: &[u8]| assert_eq!(parse(value, at(0)), None, "{value:?}");
        [&b""[..], b"soon"].into_iter().for_each(ignored);
        // Seconds are digits only.
        [&b"-5"[..], b"1.5", b"+1"].into_iter().for_each(ignored);
        ignored(b"Fri, 32 Dec 1999 23:59:59 GMT");
    }

    #[test]
    fn retry_after_reads_the_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, at(0)), None, "no header");
        headers.insert(RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers, at(0)), Some(Duration::from_secs(3)));
    }
}
