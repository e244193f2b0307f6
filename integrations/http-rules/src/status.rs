//! [`status_verdict`]: what a response's status (and its `Retry-After`) means for the
//! race.

use std::time::{Duration, SystemTime};

use hedging::Verdict;
use http::{HeaderMap, StatusCode};

use crate::retry_after;

/// The verdict on a response with `status` and `headers`, the table every integration
/// shares:
///
/// | response | verdict |
/// |---|---|
/// | `429` or `503` with a `Retry-After` of at most `max_retry_after` | [`RetryAfter`](Verdict::RetryAfter): the next copy is due that long from now |
/// | `429` or `503` with a longer `Retry-After` | [`Stop`](Verdict::Stop): no further copy starts; copies in flight keep racing |
/// | `502`, `504`, and `503` without `Retry-After` | [`Retry`](Verdict::Retry): that copy failed, the race goes on |
/// | anything else, `429` without `Retry-After` included | [`Win`](Verdict::Win) |
///
/// `Retry-After` is read by [`retry_after`](crate::retry_after) at the present time and
/// means pushback on `429` and `503` only. `Duration::MAX` holds every wait a server asks
/// for. Errors (no response at all) are each integration's to judge.
///
/// ```
/// use std::time::Duration;
/// use hedging::Verdict;
/// use http::{HeaderMap, StatusCode};
/// use hedging_http_rules::status_verdict;
///
/// let none = HeaderMap::new();
/// assert_eq!(status_verdict(StatusCode::BAD_GATEWAY, &none, Duration::MAX), Verdict::Retry);
/// assert_eq!(status_verdict(StatusCode::NOT_FOUND, &none, Duration::MAX), Verdict::Win);
/// ```
pub fn status_verdict(
    status: StatusCode,
    headers: &HeaderMap,
    max_retry_after: Duration,
) -> Verdict {
    let pushback = match status {
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
            retry_after(headers, SystemTime::now())
        }
        _ => None,
    };
    match pushback {
        Some(wait) if wait <= max_retry_after => Verdict::RetryAfter(wait),
        Some(_) => Verdict::Stop,
        None => match status {
            StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT => Verdict::Retry,
            _ => Verdict::Win,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::RETRY_AFTER;

    fn verdict(status: u16, retry_after: Option<&str>, max_retry_after: Duration) -> Verdict {
        let mut headers = HeaderMap::new();
        if let Some(value) = retry_after {
            headers.insert(RETRY_AFTER, value.parse().unwrap());
        }
        let status = StatusCode::from_u16(status).unwrap();
        status_verdict(status, &headers, max_retry_after)
    }

    #[test]
    fn statuses_follow_the_table() {
        let any = Duration::MAX;
        let secs = |s| Verdict::RetryAfter(Duration::from_secs(s));
        for status in [200, 204, 301, 400, 404, 409, 429, 500, 501] {
            assert_eq!(verdict(status, None, any), Verdict::Win, "{status}");
        }
        for status in [502, 503, 504] {
            assert_eq!(verdict(status, None, any), Verdict::Retry, "{status}");
        }
        assert_eq!(verdict(503, Some("3"), any), secs(3));
        assert_eq!(verdict(429, Some("1"), any), secs(1));
        assert_eq!(verdict(429, Some("0"), any), secs(0));
    }

    #[test]
    fn retry_after_is_pushback_on_429_and_503_only() {
        assert_eq!(verdict(200, Some("1"), Duration::MAX), Verdict::Win);
        assert_eq!(verdict(502, Some("1"), Duration::MAX), Verdict::Retry);
    }

    #[test]
    fn a_retry_after_beyond_the_cap_stops_further_copies() {
        let second = Duration::from_secs(1);
        assert_eq!(verdict(503, Some("2"), second), Verdict::Stop);
        assert_eq!(
            verdict(429, Some("99999999999999999999999"), second),
            Verdict::Stop
        );
        let saturated = verdict(429, Some("99999999999999999999999"), Duration::MAX);
        assert_eq!(
            saturated,
            Verdict::RetryAfter(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn a_malformed_retry_after_is_ignored() {
        for malformed in ["soon", "-1", "1.5", "+1", ""] {
            let verdicts = (
                verdict(503, Some(malformed), Duration::MAX),
                verdict(429, Some(malformed), Duration::MAX),
            );
            assert_eq!(verdicts, (Verdict::Retry, Verdict::Win), "{malformed:?}");
        }
    }
}
