//! The README's snippets past its quick start (that one is
//! `examples/quick_start_http_rules.rs`), each in a test that compiles and runs it.
//! `.ci/packages` checks that each snippet stands here line for line, so each function
//! keeps its snippet's layout (`rustfmt::skip`).

#[rustfmt::skip]
#[test]
fn retry_after_and_the_status() {
    use std::time::{Duration, SystemTime};
    use hedging_http_rules::hedging::Verdict;
    use hedging_http_rules::{retry_after, status_verdict};
    use http::{HeaderMap, StatusCode};

    let mut headers = HeaderMap::new();
    headers.insert("retry-after", "2".parse().unwrap());
    assert_eq!(retry_after(&headers, SystemTime::now()), Some(Duration::from_secs(2)));
    let verdict = status_verdict(StatusCode::SERVICE_UNAVAILABLE, &headers, Duration::MAX);
    assert_eq!(verdict, Verdict::RetryAfter(Duration::from_secs(2)));
}
