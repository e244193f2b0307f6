//! A loopback HTTP/1 server that misbehaves on purpose, counting every request it sees,
//! and the latency table the example prints. Shared by `examples/hedged_gets` and
//! `tests/middleware.rs`.
//!
//! The first request to each path misbehaves by the path's first segment:
//! `/stall/..` answers after the server's stall; `/unavailable/..` answers 503 at once,
//! with a `Retry-After` copied from the request's `x-retry-after` header if it has one;
//! `/unavailable-twice/..` answers so to its first two requests.
//! Later requests, and every request to other paths, answer 200 at once, unless the
//! server stalls one request in N. Every 200 says which copy it was: `copy 1 of /path`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::RETRY_AFTER;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct Arrival {
    pub method: Method,
    pub body: Bytes,
    pub at: Instant,
}

/// A loopback server; see the module docs for how it answers.
pub struct Server {
    /// `http://127.0.0.1:port`, no trailing slash.
    pub base: String,
    /// Every request received.
    pub requests: Arc<AtomicU64>,
    /// Requests that stalled.
    pub stalled: Arc<AtomicU64>,
    arrivals: Arc<Mutex<HashMap<String, Vec<Arrival>>>>,
}

impl Server {
    /// Binds 127.0.0.1 on a free port and serves on the current tokio runtime; stalled
    /// requests wait `stall`, and with `one_in`, request n stalls when
    /// `n % one_in == one_in - 1`.
    pub async fn start(stall: Duration, one_in: Option<u64>) -> std::io::Result<Server> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let server = Server {
            base: format!("http://{}", listener.local_addr()?),
            requests: Arc::new(AtomicU64::new(0)),
            stalled: Arc::new(AtomicU64::new(0)),
            arrivals: Arc::new(Mutex::new(HashMap::new())),
        };
        let (requests, stalled, arrivals) = (
            Arc::clone(&server.requests),
            Arc::clone(&server.stalled),
            Arc::clone(&server.arrivals),
        );
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let (requests, stalled, arrivals) = (
                    Arc::clone(&requests),
                    Arc::clone(&stalled),
                    Arc::clone(&arrivals),
                );
                let answer = service_fn(move |request: Request<Incoming>| {
                    let (requests, stalled, arrivals) = (
                        Arc::clone(&requests),
                        Arc::clone(&stalled),
                        Arc::clone(&arrivals),
                    );
                    async move {
                        let at = Instant::now();
                        let n = requests.fetch_add(1, Relaxed);
                        let path = request.uri().path().to_owned();
                        let method = request.method().clone();
                        let retry_after = request.headers().get("x-retry-after").cloned();
                        let body = request.into_body().collect().await.map(|b| b.to_bytes());
                        let body = body.unwrap_or_default();
                        let copy = {
                            let mut arrivals = arrivals.lock().unwrap();
                            let seen = arrivals.entry(path.clone()).or_default();
                            seen.push(Arrival { method, body, at });
                            seen.len() - 1
                        };
                        let misbehaves = |segment: &str| copy == 0 && path.starts_with(segment);
                        let unavailable = misbehaves("/unavailable/")
                            || (copy < 2 && path.starts_with("/unavailable-twice/"));
                        if unavailable {
                            let mut response = Response::new(Full::new(Bytes::new()));
                            *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                            if let Some(value) = retry_after {
                                response.headers_mut().insert(RETRY_AFTER, value);
                            }
                            return Ok::<_, Infallible>(response);
                        }
                        let stalls_one_in = one_in.is_some_and(|every| n % every == every - 1);
                        if misbehaves("/stall/") || stalls_one_in {
                            stalled.fetch_add(1, Relaxed);
                            tokio::time::sleep(stall).await;
                        }
                        let text = format!("copy {copy} of {path}");
                        Ok(Response::new(Full::new(Bytes::from(text))))
                    }
                });
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), answer));
            }
        });
        Ok(server)
    }

    /// The URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Every request `path` received, in order of arrival.
    pub fn arrivals(&self, path: &str) -> Vec<Arrival> {
        self.arrivals
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .unwrap_or_default()
    }
}

/// The nearest-rank quantile of sorted latencies.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One row of the latency table: p50, p99, p99.9, max, and the extra requests sent.
pub fn row(label: &str, sorted: &[Duration], extra: Option<f64>) -> String {
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    let extra = extra.map_or("—".to_owned(), |extra| format!("{:.1}%", extra * 100.0));
    format!(
        "| {label} | {} | {} | {} | {} | {extra} |",
        ms(quantile(sorted, 0.50)),
        ms(quantile(sorted, 0.99)),
        ms(quantile(sorted, 0.999)),
        ms(*sorted.last().expect("at least one request")),
    )
}

/// The header of the latency table.
pub fn header() -> &'static str {
    "| | p50 | p99 | p99.9 | max | extra requests |\n|---|---|---|---|---|---|"
}
