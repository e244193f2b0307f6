//! The default verdicts of [`HttpHedgeLayer`](crate::HttpHedgeLayer) and the
//! `Retry-After` header they read: the status table shared with every integration
//! ([`hedging_http_rules`]), and errors retried.

use std::time::{Duration, SystemTime};

use hedging::{Classify, Verdict};
use hedging_http_rules::status_verdict;
use http::{HeaderMap, Response};

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
    match result {
        Ok(response) => status_verdict(response.status(), response.headers(), Duration::MAX),
        Err(_) => Verdict::Retry,
    }
}

/// How long a response's `Retry-After` header asks the client to wait, from now, in
/// either of its RFC 9110 forms: `delay-seconds` (`120`) or an HTTP date
/// (`Fri, 31 Dec 1999 23:59:59 GMT`, and the two obsolete date formats). A date in the
/// past is zero; a missing or malformed header is `None`. The shared parser,
/// [`hedging_http_rules::retry_after`], read at [`SystemTime::now`].
///
/// ```
/// use std::time::Duration;
/// let mut headers = http::HeaderMap::new();
/// headers.insert("retry-after", "120".parse().unwrap());
/// assert_eq!(hedging_http::retry_after(&headers), Some(Duration::from_secs(120)));
/// ```
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    hedging_http_rules::retry_after(headers, SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::RETRY_AFTER;

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
