//! A loopback HTTP/1 server (hyper) whose answers are up to a [`Behavior`], logging every
//! request it reads, and a hyper-util client for it. Shared by `examples/hyper.rs` and
//! `tests/hyper.rs`.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hedging_http::ReplayBody;
use http::{Method, StatusCode, Uri};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
/// The request body the tests and the example send: any body, boxed.
pub type RequestBody = BoxBody<Bytes, Error>;
/// A pooled HTTP/1 client (keep-alive, no TLS) taking the hedging layer's body.
pub type Client = hyper_util::client::legacy::Client<HttpConnector, ReplayBody<RequestBody>>;

/// How the server answers one request.
#[derive(Clone, Debug)]
pub struct Answer {
    pub stall: Duration,
    pub status: StatusCode,
    pub retry_after: Option<&'static str>,
}

impl Default for Answer {
    fn default() -> Self {
        Answer {
            stall: Duration::ZERO,
            status: StatusCode::OK,
            retry_after: None,
        }
    }
}

/// Decides the answer to request `n` (counted from 0 across the server's life) for `path`.
pub type Behavior = Arc<dyn Fn(u64, &str) -> Answer + Send + Sync>;

/// One request as the server read it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub n: u64,
    pub method: Method,
    pub path: String,
    pub body: Bytes,
    pub at: Instant,
}

pub struct Server {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Binds 127.0.0.1 on a free port and serves on the current tokio runtime; every
    /// answer's body is the request's body echoed back.
    pub async fn start(behavior: Behavior) -> std::io::Result<Server> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let (behavior, log) = (Arc::clone(&behavior), Arc::clone(&log));
                let answer = service_fn(move |request: http::Request<Incoming>| {
                    let (behavior, log) = (Arc::clone(&behavior), Arc::clone(&log));
                    async move {
                        let (parts, body) = request.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let (n, answer) = {
                            let mut log = log.lock().unwrap();
                            let n = log.len() as u64;
                            log.push(Seen {
                                n,
                                method: parts.method.clone(),
                                path: parts.uri.path().to_owned(),
                                body: body.clone(),
                                at: Instant::now(),
                            });
                            (n, behavior(n, parts.uri.path()))
                        };
                        let _ = n;
                        if !answer.stall.is_zero() {
                            tokio::time::sleep(answer.stall).await;
                        }
                        let mut response = http::Response::new(Full::new(body));
                        *response.status_mut() = answer.status;
                        if let Some(retry_after) = answer.retry_after {
                            response
                                .headers_mut()
                                .insert("retry-after", retry_after.parse().unwrap());
                        }
                        Ok::<_, Infallible>(response)
                    }
                });
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), answer));
            }
        });
        Ok(Server { addr, seen })
    }

    /// The requests for `path` the server read, in order.
    pub fn seen(&self, path: &str) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|s| s.path == path).cloned().collect()
    }

    /// `http://127.0.0.1:port/path`.
    pub fn uri(&self, path: &str) -> Uri {
        format!("http://{}{}", self.addr, path)
            .parse()
            .expect("a valid uri")
    }
}

/// A pooled HTTP/1 client (keep-alive, TCP nodelay, no TLS) for the hedging layer.
pub fn client() -> Client {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector)
}

/// The same client taking the request body as it is, for calls without the layer.
pub fn plain_client() -> hyper_util::client::legacy::Client<HttpConnector, RequestBody> {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector)
}

/// A whole body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> RequestBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A request, its body boxed.
pub fn request(method: Method, uri: Uri, body: RequestBody) -> http::Request<RequestBody> {
    let mut request = http::Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    request
}
