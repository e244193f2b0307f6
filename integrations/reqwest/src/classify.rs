//! What a finished copy means: [`ClassifyResponse`] and its default, [`DefaultClassify`]
//! (the shared status table, and reqwest's errors).

use std::time::Duration;

use hedging::Verdict;
use hedging_http_rules::status_verdict;
use reqwest::Response;

/// Decides the [`Verdict`] on one copy's answer: a response, or the error of the
/// middleware below.
///
/// Implemented for every `Fn(&reqwest_middleware::Result<Response>) -> Verdict` that is
/// `Send + Sync + 'static`, so a closure can wrap the default:
///
/// ```
/// use hedging::Verdict;
/// use reqwest_hedging::{ClassifyResponse, DefaultClassify};
///
/// // A 409 from this backend means "not replicated yet": ask another copy.
/// let classify = |result: &reqwest_middleware::Result<reqwest::Response>| match result {
///     Ok(response) if response.status() == reqwest::StatusCode::CONFLICT => Verdict::Retry,
///     other => DefaultClassify::new().verdict(other),
/// };
/// # let _ = reqwest_hedging::HedgeMiddleware::new(
/// #     hedging::Policy::builder().timer(hedging::timer::TokioTimer::new()).build(),
/// # ).classify(classify);
/// ```
pub trait ClassifyResponse: Send + Sync + 'static {
    /// The verdict on one copy's answer.
    fn verdict(&self, result: &reqwest_middleware::Result<Response>) -> Verdict;
}

impl<F> ClassifyResponse for F
where
    F: Fn(&reqwest_middleware::Result<Response>) -> Verdict + Send + Sync + 'static,
{
    fn verdict(&self, result: &reqwest_middleware::Result<Response>) -> Verdict {
        self(result)
    }
}

/// The verdicts [`HedgeMiddleware`](crate::HedgeMiddleware) uses unless
/// [`classify`](crate::HedgeMiddleware::classify) replaces them.
///
/// | answer | verdict |
/// |---|---|
/// | 429 or 503 with a `Retry-After` of at most [`max_retry_after`](Self::max_retry_after) | [`RetryAfter`](Verdict::RetryAfter): that copy failed, the next is due that long from now |
/// | 429 or 503 with a longer `Retry-After` | [`Stop`](Verdict::Stop): no further copy starts; copies in flight keep racing |
/// | 502, 503, 504 | [`Retry`](Verdict::Retry): that copy failed, the race goes on |
/// | any other response | [`Win`](Verdict::Win) |
/// | a connect or timeout error | [`Retry`](Verdict::Retry) |
/// | any other error | [`Fatal`](Verdict::Fatal): returned at once |
///
/// The table of responses is the one every integration shares
/// ([`hedging_http_rules::status_verdict`]). `Retry-After` is read in both of its
/// RFC 9110 forms: seconds, or an HTTP date (a date in the past means now). If every copy fails, the first copy's answer is returned, so
/// a caller still sees the 503 and its headers.
///
/// # Default
///
/// `max_retry_after`: 1 s. A server asking for a longer wait is better answered by a
/// retry layer around the hedge (see the crate docs) than by a call held open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultClassify {
    max_retry_after: Duration,
}

impl DefaultClassify {
    /// The verdicts in the table above, with a `max_retry_after` of 1 s.
    pub const fn new() -> Self {
        DefaultClassify {
            max_retry_after: Duration::from_secs(1),
        }
    }

    /// The longest `Retry-After` a call waits for before its next copy; a longer one
    /// stops further copies instead.
    pub const fn max_retry_after(mut self, max_retry_after: Duration) -> Self {
        self.max_retry_after = max_retry_after;
        self
    }
}

impl Default for DefaultClassify {
    fn default() -> Self {
        Self::new()
    }
}

impl ClassifyResponse for DefaultClassify {
    fn verdict(&self, result: &reqwest_middleware::Result<Response>) -> Verdict {
        match result {
            Ok(response) => {
                status_verdict(response.status(), response.headers(), self.max_retry_after)
            }
            Err(reqwest_middleware::Error::Reqwest(error))
                if error.is_connect() || error.is_timeout() =>
            {
                Verdict::Retry
            }
            Err(_) => Verdict::Fatal,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::retry_after;
    use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

    fn response(status: u16, retry_after: Option<&str>) -> reqwest_middleware::Result<Response> {
        let mut response = http::Response::builder().status(status);
        if let Some(value) = retry_after {
            response = response.header(RETRY_AFTER, value);
        }
        Ok(Response::from(response.body("").unwrap()))
    }

    fn verdict(status: u16, retry_after: Option<&str>) -> Verdict {
        DefaultClassify::new().verdict(&response(status, retry_after))
    }

    #[test]
    fn gateway_errors_retry() {
        assert_eq!(verdict(502, None), Verdict::Retry);
        assert_eq!(verdict(503, None), Verdict::Retry);
        assert_eq!(verdict(504, None), Verdict::Retry);
    }

    #[test]
    fn other_responses_win() {
        for status in [200, 204, 301, 400, 404, 409, 429, 500, 501] {
            assert_eq!(verdict(status, None), Verdict::Win, "{status}");
        }
        // Retry-After only means pushback on 429 and 503.
        assert_eq!(verdict(200, Some("1")), Verdict::Win);
        assert_eq!(verdict(502, Some("1")), Verdict::Retry);
    }

    #[test]
    fn retry_after_in_seconds_holds_the_next_copy() {
        assert_eq!(
            verdict(503, Some("1")),
            Verdict::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(verdict(429, Some("0")), Verdict::RetryAfter(Duration::ZERO));
    }

    #[test]
    fn retry_after_as_an_http_date_holds_the_next_copy() {
        let in_a_second_and_a_half = SystemTime::now() + Duration::from_millis(1500);
        let date = httpdate::fmt_http_date(in_a_second_and_a_half);
        // HTTP dates have whole seconds: the wait is within a second of 1.5 s, past the
        // default cap of 1 s half of the time, so raise it.
        let patient = DefaultClassify::new().max_retry_after(Duration::from_secs(5));
        let Verdict::RetryAfter(wait) = patient.verdict(&response(429, Some(&date))) else {
            panic!("{date} is pushback");
        };
        assert!(wait <= Duration::from_millis(1500), "{wait:?}");
        assert!(wait >= Duration::from_millis(400), "{wait:?}");
    }

    #[test]
    fn a_date_in_the_past_means_now() {
        let verdict = verdict(503, Some("Sun, 06 Nov 1994 08:49:37 GMT"));
        assert_eq!(verdict, Verdict::RetryAfter(Duration::ZERO));
        // The two obsolete forms recipients must accept (RFC 9110 §5.6.7).
        let now = SystemTime::now();
        for obsolete in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, HeaderValue::from_static(obsolete));
            assert_eq!(
                retry_after(&headers, now),
                Some(Duration::ZERO),
                "{obsolete}"
            );
        }
    }

    #[test]
    fn a_retry_after_beyond_the_cap_stops_further_copies() {
        assert_eq!(verdict(503, Some("2")), Verdict::Stop);
        assert_eq!(verdict(429, Some("99999999999999999999999")), Verdict::Stop);
        let patient = DefaultClassify::new().max_retry_after(Duration::from_secs(5));
        assert_eq!(
            patient.verdict(&response(503, Some("2"))),
            Verdict::RetryAfter(Duration::from_secs(2))
        );
    }

    #[test]
    fn a_malformed_retry_after_is_ignored() {
        for malformed in ["soon", "-1", "1.5", "+1", ""] {
            assert_eq!(
                verdict(503, Some(malformed)),
                Verdict::Retry,
                "{malformed:?}"
            );
            assert_eq!(verdict(429, Some(malformed)), Verdict::Win, "{malformed:?}");
        }
    }
}
