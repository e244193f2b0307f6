//! The README's snippets past its quick start (that one is
//! `examples/quick_start_reqwest.rs`), each in a test that compiles and runs it with what
//! it needs around it. `.ci/packages` checks that each snippet stands here line for line,
//! so each function keeps its snippet's layout (`rustfmt::skip`).

use std::time::Duration;

use reqwest_hedging::hedging::timer::ManualTimer;
use reqwest_hedging::hedging::Policy;
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::ClientBuilder;
use reqwest_retry::policies::ExponentialBackoff;
use reqwest_retry::RetryTransientMiddleware;

fn policy() -> Policy<ManualTimer> {
    Policy::builder()
        .delay(Duration::from_millis(20))
        .timer(ManualTimer::new())
        .build()
}

#[rustfmt::skip]
#[test]
fn copies_to_replicas() -> Result<(), Box<dyn std::error::Error>> {
    let policy = policy();
    let hedge = HedgeMiddleware::new(policy)
        .replicas(["http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"])?;
    // client.get("http://catalog/items?page=2"): the original to 10.0.0.1:8080/items?page=2,
    // its hedge to 10.0.0.2, and the next call starts at 10.0.0.2.

    let _ = ClientBuilder::new(reqwest::Client::new()).with(hedge).build();
    Ok(())
}

#[rustfmt::skip]
#[test]
fn with_reqwest_retry() {
    let policy = policy();
    let retry_policy = ExponentialBackoff::builder().build_with_max_retries(2);
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryTransientMiddleware::new_with_policy(retry_policy)) // after a backoff
        .with(HedgeMiddleware::new(policy))                            // within the delay
        .build();

    let _ = client;
}
