//! What the layer's test files share: sending a request through a service on a task of
//! its own, a client that records what each request's body was, and a body still
//! streaming when the call is made.
#![allow(dead_code)] // each test file uses its own part

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::channel::mpsc;
use futures::SinkExt;
use hedging_http::ReplayBody;
use hedging_test_server::http::{client, RequestBody};
use hedging_test_server::Error;
use http::StatusCode;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tower::{Service, ServiceExt};

pub type Response = http::Response<hyper::body::Incoming>;
/// A call on a task of its own: its status and body.
pub type Call = tokio::task::JoinHandle<(StatusCode, Bytes)>;

/// Sends `request` through `service` on a task of its own.
pub fn send<S>(service: S, request: http::Request<RequestBody>) -> Call
where
    S: Service<http::Request<RequestBody>, Response = Response> + Send + 'static,
    S::Error: std::fmt::Debug,
    S::Future: Send + 'static,
{
    // Boxed outside the task: its `Send` is proven here, where the types are known.
    let response: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(service.oneshot(request));
    tokio::spawn(async move {
        let response = response.await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, body)
    })
}

/// Whether each request a client was handed had a body that could be sent again: one
/// the layer read whole has; one it left alone has not.
pub type Replayable = Arc<Mutex<Vec<bool>>>;

/// A client that records in `replayable` what each request's body was.
pub fn recording_client(
    replayable: &Replayable,
) -> impl Service<
    http::Request<ReplayBody<RequestBody>>,
    Response = Response,
    Error = impl std::fmt::Debug,
    Future = impl Send,
> + Clone
       + Send
       + 'static {
    let client = client::<ReplayBody<RequestBody>>();
    let log = Arc::clone(replayable);
    tower::service_fn(move |request: http::Request<ReplayBody<RequestBody>>| {
        log.lock().unwrap().push(request.body().is_replayable());
        client.clone().oneshot(request)
    })
}

/// A body still pending when the call is made: `chunks` arrive while the request is in
/// flight, each after the runtime had a turn.
pub fn streaming(chunks: &'static [&'static str]) -> RequestBody {
    let (mut frames, receiver) = mpsc::channel::<Result<Frame<Bytes>, Error>>(4);
    tokio::spawn(async move {
        for chunk in chunks {
            tokio::task::yield_now().await;
            let _ = frames.send(Ok(Frame::data(Bytes::from(*chunk)))).await;
        }
    });
    BodyExt::boxed(StreamBody::new(receiver))
}
