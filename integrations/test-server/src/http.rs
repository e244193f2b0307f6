//! [`Server::http`]: a loopback HTTP server (HTTP/1.1, and HTTP/2 with prior knowledge)
//! whose answers a behaviour decides, logging every request it reads; a hyper-util client
//! for it.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use http::{Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::answer::{Answer, Behavior, Reply, SCRIPT};
use crate::log::{Clock, Log};
use crate::pace::{paced, Pace};
use crate::server::{read_whole, serve, Server};
use crate::Error;

/// The behaviour of most tests: each request answers as its `x-script` header says
/// ([`Answer::scripted`]), copy n by the n-th part; without one, `200` at once.
pub fn scripted() -> Behavior {
    Arc::new(|arrival| Answer::scripted(arrival.header(SCRIPT).unwrap_or(""), arrival.copy))
}

impl Server {
    /// An HTTP server on 127.0.0.1 and a free port, serving on the current tokio
    /// runtime, its arrivals stamped by `clock` ([`real_clock`](crate::real_clock), or a
    /// test's [`VirtualClock`](crate::VirtualClock)).
    pub async fn http(behavior: Behavior, clock: Clock) -> std::io::Result<Server> {
        let log = Log::new(clock);
        let (listener, server) = Server::bind(log.clone()).await?;
        tokio::spawn(serve(listener, log, move |log| {
            let behavior = Arc::clone(&behavior);
            service_fn(move |request| answer(Arc::clone(&behavior), log.clone(), request))
        }));
        Ok(server)
    }
}

type ResponseBody = BoxBody<Bytes, Infallible>;

async fn answer(
    behavior: Behavior,
    log: Log,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    let (parts, body) = read_whole(request).await;
    let path = parts.uri.path().to_owned();
    let arrival = log.arrive(path.clone(), parts.method, path, parts.headers, body);
    let answering = log.answering();
    let answer = behavior(&arrival);
    log.hold(&arrival.key, answer.hold).await;
    let body = match answer.reply {
        Reply::CopyOf => Bytes::from(format!("copy {} of {}", arrival.copy, arrival.path)),
        Reply::Echo => arrival.body.clone(),
        Reply::Bytes(bytes) => bytes,
    };
    let body: ResponseBody = match answer.body_hold {
        crate::Hold::No if answer.pace != Pace::Whole => {
            let whole = stream::once(async move { Ok::<_, Infallible>(body) }).boxed();
            let paced = paced(whole, answer.pace, log, arrival.key.clone());
            BodyExt::boxed(StreamBody::new(paced.map(|bytes| bytes.map(Frame::data))))
        }
        crate::Hold::No => Full::new(body).boxed(),
        hold => {
            let (first, rest) = body.split_at(body.len() / 2);
            let (first, rest) = (Bytes::copy_from_slice(first), Bytes::copy_from_slice(rest));
            let key = arrival.key.clone();
            let frames = stream::once(async move { Ok(Frame::data(first)) }).chain(stream::once(
                async move {
                    log.hold(&key, hold).await;
                    Ok(Frame::data(rest))
                },
            ));
            BodyExt::boxed(StreamBody::new(frames))
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(answer.status.unwrap_or(200)).expect("a status");
    *response.headers_mut() = answer.headers;
    answering.done();
    Ok(response)
}

/// The request body tests and examples send: any body, boxed.
pub type RequestBody = BoxBody<Bytes, Error>;

/// A whole body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> RequestBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A pooled hyper-util client (HTTP/1.1 keep-alive, TCP nodelay, no TLS) taking body `B`.
pub fn client<B>() -> hyper_util::client::legacy::Client<HttpConnector, B>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
{
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector)
}
