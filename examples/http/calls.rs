//! The calls of `examples/http`, shared with `tests/http.rs`: GETs through a hyper-util
//! client, a hedged one sending its original to a primary and every hedge to a replica.
#![allow(dead_code)]

use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::{Attempt, Hedgeable, Policy};
use hedging_test_server::report::latencies;
use hedging_test_server::{Answer, Error, Reply};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;

pub type Client = hyper_util::client::legacy::Client<HttpConnector, Empty<Bytes>>;

/// What both servers answer: `ok`.
pub fn ok() -> Answer {
    Answer::ok().reply(Reply::Bytes(Bytes::from_static(b"ok")))
}

/// One GET, its body read to the end and checked.
pub async fn get(client: &Client, uri: Uri) -> Result<(), Error> {
    let response = client.get(uri).await?;
    let body = response.into_body().collect().await?.to_bytes();
    assert_eq!(&body[..], b"ok");
    Ok(())
}

/// One GET hedged by `policy`: the original to `primary`, hedges to `replica`.
pub async fn primary_or_replica(
    client: &Client,
    primary: &Uri,
    replica: &Uri,
    policy: &Policy<TokioTimer>,
) -> Result<(), Error> {
    (|a: Attempt| get(client, if a.is_hedge() { replica } else { primary }.clone()))
        .hedged(policy)
        .await
}

/// Sends `requests` GETs one after another and returns each one's latency, sorted.
/// Without a policy every request goes to `primary` with a plain `.await`; with one,
/// copy 0 goes to `primary` and hedges go to `replica`.
pub async fn run(
    client: &Client,
    primary: &Uri,
    replica: &Uri,
    requests: usize,
    policy: Option<&Policy<TokioTimer>>,
) -> Result<Vec<Duration>, Error> {
    latencies(requests, || async move {
        match policy {
            None => get(client, primary.clone()).await,
            Some(policy) => primary_or_replica(client, primary, replica, policy).await,
        }
    })
    .await
}
