//! The README's snippets past its quick start (that one is
//! `examples/quick_start_object_store.rs`), each in a test that compiles and runs it with
//! what it needs around it. `.ci/packages` checks that each snippet stands here line for
//! line, so each function keeps its snippet's layout (`rustfmt::skip`).

use std::sync::Arc;
use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_object_store::HedgedStore;
use object_store::aws::AmazonS3Builder;

/// A policy named `name`, with a delay per size class of read.
fn policy(name: &'static str) -> Policy<TokioTimer> {
    Policy::builder()
        .name(name)
        .delay(Duration::from_millis(50))
        .adaptive_delay(0.95)
        .adaptive_keys(64)
        .timer(TokioTimer::new())
        .build()
}

/// The snippet: two hedged stores over one `AmazonS3`.
#[rustfmt::skip]
fn one_inner_store_two_hedged_stores() -> object_store::Result<()> {
    let s3 = Arc::new(AmazonS3Builder::from_env().build()?);
    let reads = HedgedStore::new(Arc::clone(&s3), policy("reads")); // policy with .adaptive_keys(64)
    let scans = HedgedStore::new(s3, policy("scans")).buffer_limit(0);

    assert_eq!(reads.policy().name(), Some("reads"));
    assert_eq!(scans.policy().name(), Some("scans"));
    Ok(())
}

#[test]
fn the_snippet_builds_its_stores_where_a_transport_is() {
    // What `from_env` reads in production, given here; no request is sent.
    std::env::set_var("AWS_BUCKET_NAME", "tables");
    match one_inner_store_two_hedged_stores() {
        Ok(()) => {}
        // These tests build object_store without its reqwest transport (loopback reads go
        // through hyper-util): the store cannot be built, the snippet still compiled.
        Err(object_store::Error::NotSupported { .. }) => {}
        Err(error) => panic!("{error}"),
    }
}
