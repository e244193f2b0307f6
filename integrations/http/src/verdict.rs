//! The default verdicts of [`HttpHedgeLayer`](crate::HttpHedgeLayer) and the
//! `Retry-After` header they read.

use std::time::{Duration, SystemTime};

use hedging::{Classify, Verdict};
use http::header::RETRY_AFTER;
use http::{HeaderMap, Response, StatusCode};

/// The verdicts [`HttpHedgeLayer`](crate::HttpHedgeLayer) gives when no
/// [`classify`](crate::HttpHedgeLayer::classify) replaces them: see [`default_verdict`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultVerdict;

impl<B, E> Classify<Response<B>, E> for DefaultVerdict {
    #[inline]
    fn verdict(&mut self, result: &Result<Response<B>, E>) -> Verdict {
        default_verdict(result)
    }
}

/// The default verdict on one copy's result.
///
/// | Result | Verdict |
/// |---|---|
/// | an error from the inner service (connect refused, reset, timed out) | [`Retry`](Verdict::Retry) |
/// | `502`, `504`, and `503` without `Retry-After` | [`Retry`](Verdict::Retry) |
/// | `429` or `503` with a `Retry-After` header | [`RetryAfter`](Verdict::RetryAfter) that long |
/// | anything else, `429` without `Retry-After` included | [`Win`](Verdict::Win) |
///
/// A custom classifier can fall back to it:
///
/// ```
/// use hedging::Verdict;
/// use http::{Response, StatusCode};
///
/// let classify = |result: &Result<Response<()>, std::io::Error>| match result {
///     Ok(response) if response.status() == StatusCode::CONFLICT => Verdict::Retry,
///     other => hedging_http::default_verdict(other),
/// };
/// let busy = Response::builder().status(503).header("retry-after", "2").body(()).unwrap();
/// assert_eq!(classify(&Ok(busy)), Verdict::RetryAfter(std::time::Duration::from_secs(2)));
/// ```
pub fn default_verdict<B, E>(result: &Result<Response<B>, E>) -> Verdict {
    let response = match result {
        Ok(response) => response,
        Err(_) => return Verdict::Retry,
    };
    match response.status() {
        StatusCode::TOO_MANY_REQUESTS => {
            retry_after(response.headers()).map_or(Verdict::Win, Verdict::RetryAfter)
        }
        StatusCode::SERVICE_UNAVAILABLE => {
            retry_after(response.headers()).map_or(Verdict::Retry, Verdict::RetryAfter)
        }
        StatusCode::BAD_GATEWAY | StatusCode::GATEWAY_TIMEOUT => Verdict::Retry,
        _ => Verdict::Win,
    }
}

/// How long a response's `Retry-After` header asks the client to wait, in either of its
/// RFC 9110 forms: `delay-seconds` (`120`) or an HTTP date
/// (`Fri, 31 Dec 1999 23:59:59 GMT`, and the two obsolete date formats). A date in the
/// past is zero; a missing or malformed header is `None`.
///
/// ```
/// use std::time::Duration;
/// let mut headers = http::HeaderMap::new();
/// headers.insert("retry-after", "120".parse().unwrap());
/// assert_eq!(hedging_http::retry_after(&headers), Some(Duration::from_secs(120)));
/// ```
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    parse_retry_after(headers.get(RETRY_AFTER)?.as_bytes(), SystemTime::now())
}

/// `Retry-After` read at `now`.
pub(crate) fn parse_retry_after(value: &[u8], now: SystemTime) -> Option<Duration> {
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
        assert_eq!(
            parse_retry_after(b"120", at(0)),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(b"0", at(0)), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after(b" 7 ", at(0)),
            Some(Duration::from_secs(7))
        );
    }

    #[test]
    fn retry_after_saturates_a_huge_delay() {
        let huge = b"99999999999999999999999999";
        assert_eq!(
            parse_retry_after(huge, at(0)),
            Some(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn retry_after_reads_an_imf_fixdate() {
        let date = b"Fri, 31 Dec 1999 23:59:59 GMT";
        let now = at(NEW_YEARS_EVE - 30);
        assert_eq!(parse_retry_after(date, now), Some(Duration::from_secs(30)));
    }

    #[test]
    fn retry_after_reads_the_obsolete_date_forms() {
        let now = at(NEW_YEARS_EVE - 5);
        let rfc850 = b"Friday, 31-Dec-99 23:59:59 GMT";
        let asctime = b"Fri Dec 31 23:59:59 1999";
        assert_eq!(parse_retry_after(rfc850, now), Some(Duration::from_secs(5)));
        assert_eq!(
            parse_retry_after(asctime, now),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn retry_after_a_date_in_the_past_is_zero() {
        let date = b"Fri, 31 Dec 1999 23:59:59 GMT";
        assert_eq!(
            parse_retry_after(date, at(NEW_YEARS_EVE + 60)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn retry_after_malformed_is_none() {
        for value in [
            &b""[..],
            b"soon",
            b"-5",
            b"1.5",
            b"Fri, 32 Dec 1999 23:59:59 GMT",
        ] {
            assert_eq!(parse_retry_after(value, at(0)), None, "{value:?}");
        }
    }

    fn response(status: u16, retry_after: Option<&str>) -> Result<Response<()>, ()> {
        let mut builder = Response::builder().status(status);
        if let Some(value) = retry_after {
            builder = builder.header(RETRY_AFTER, value);
        }
        Ok(builder.body(()).unwrap())
    }

    #[test]
    fn default_verdicts_follow_the_table() {
        let secs = |s| Verdict::RetryAfter(Duration::from_secs(s));
        assert_eq!(default_verdict(&response(200, None)), Verdict::Win);
        assert_eq!(default_verdict(&response(404, None)), Verdict::Win);
        assert_eq!(default_verdict(&response(500, None)), Verdict::Win);
        assert_eq!(default_verdict(&response(502, None)), Verdict::Retry);
        assert_eq!(default_verdict(&response(503, None)), Verdict::Retry);
        assert_eq!(default_verdict(&response(504, None)), Verdict::Retry);
        assert_eq!(default_verdict(&response(503, Some("3"))), secs(3));
        assert_eq!(default_verdict(&response(429, Some("1"))), secs(1));
        assert_eq!(default_verdict(&response(429, None)), Verdict::Win);
        assert_eq!(
            default_verdict(&response(503, Some("later"))),
            Verdict::Retry
        );
        assert_eq!(default_verdict::<(), _>(&Err(())), Verdict::Retry);
    }
}
