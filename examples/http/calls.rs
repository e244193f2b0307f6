//! The hedged GETs of `examples/http`, shared with `tests/http.rs`: a hyper-util client,
//! the original sent to a primary and every hedge to a replica.
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

/// One GET, body read to the end.
pub async fn get(client: &Client, uri: Uri) -> Result<Bytes, Error> {
    let response = client.get(uri).await?;
    Ok(response.into_body().collect().await?.to_bytes())
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
        let body = match policy {
            None => get(client, primary.clone()).await?,
            Some(policy) => {
                (|a: Attempt| get(client, if a.is_hedge() { replica } else { primary }.clone()))
                    .hedged(policy)
                    .await?
            }
        };
        assert_eq!(&body[..], b"ok");
        Ok(())
    })
    .await
}
