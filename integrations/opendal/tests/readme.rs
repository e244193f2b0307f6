//! The README's snippets past its quick start (that one is
//! `examples/quick_start_opendal.rs`), each in a test that builds it with what it needs
//! around it. `.ci/packages` checks that each snippet stands here line for line, so each
//! function keeps its snippet's layout (`rustfmt::skip`).

use std::time::Duration;

use hedging_opendal::hedging::timer::ManualTimer;
use hedging_opendal::hedging::Policy;
use hedging_opendal::HedgeLayer;
use opendal::layers::{RetryLayer, TimeoutLayer};
use opendal::{services::S3, Operator};

/// The snippet: the hedge outermost, a timeout and retries inside each copy.
#[rustfmt::skip]
fn stacked(policy: Policy<ManualTimer>) -> opendal::Result<Operator> {
    let s3 = S3::default().bucket("tables").region("us-east-1").endpoint("http://127.0.0.1:9");
let op = Operator::new(s3)?
    .layer(TimeoutLayer::new().with_io_timeout(Duration::from_secs(10))) // each request
    .layer(RetryLayer::new()) // inside each copy: a failed request retried
    .layer(HedgeLayer::new(policy)); // outermost: copies of the retried request race
    Ok(op)
}

#[test]
fn the_stacking_snippet_builds_an_operator_without_a_request() {
    let policy = Policy::builder().timer(ManualTimer::new()).build();
    let op = stacked(policy.clone()).expect("an operator, built without a request");
    assert_eq!(op.info().name().to_string(), "tables");
    assert_eq!(policy.stats().calls, 0, "building sends nothing");
}
