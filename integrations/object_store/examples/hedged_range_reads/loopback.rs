//! A loopback HTTP object server that `object_store::http::HttpStore` can read (GET with
//! byte ranges, HEAD), stalling chosen requests, answering every read under
//! `unavailable/` with a 503 and a long `Retry-After`, and the latency summary the
//! example prints. Shared by `examples/hedged_range_reads` and `tests/http_store.rs`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{self, StreamExt};
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_RANGE, RANGE, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody,
    HttpResponse, HttpResponseBody, HttpService,
};
use object_store::http::{HttpBuilder, HttpStore};
use object_store::{ClientOptions, RetryConfig};
use tokio::net::TcpListener;

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Which requests stall.
#[derive(Clone, Copy, Debug)]
pub enum StallWhen {
    /// The first request to each path.
    FirstPerPath,
    /// Request n (counted over every path) when `n % every == every - 1`.
    OneIn(u64),
    /// None.
    Never,
}

/// Where a stalled request stalls.
#[derive(Clone, Copy, Debug)]
pub enum StallWhere {
    /// Before the response headers.
    Answer,
    /// After the headers and the first half of the body.
    Body,
    /// The answer for even-numbered stalls, the body for odd ones.
    Alternate,
}

/// A loopback object server over a fixed set of objects.
pub struct ObjectServer {
    /// `http://127.0.0.1:port/`
    pub url: String,
    /// Every request served, stalled or not.
    pub requests: Arc<AtomicU64>,
    /// Requests that stalled.
    pub stalled: Arc<AtomicU64>,
    per_path: Arc<Mutex<HashMap<String, u64>>>,
}

type Body = BoxBody<Bytes, Infallible>;

impl ObjectServer {
    /// Binds 127.0.0.1 on a free port and serves `objects` (path → bytes, paths without
    /// a leading slash) on the current tokio runtime.
    pub async fn start(
        objects: HashMap<String, Bytes>,
        when: StallWhen,
        place: StallWhere,
        stall: Duration,
    ) -> std::io::Result<ObjectServer> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let url = format!("http://{}/", listener.local_addr()?);
        let server = ObjectServer {
            url,
            requests: Arc::new(AtomicU64::new(0)),
            stalled: Arc::new(AtomicU64::new(0)),
            per_path: Arc::new(Mutex::new(HashMap::new())),
        };
        let objects = Arc::new(objects);
        let (requests, stalled, per_path) = (
            Arc::clone(&server.requests),
            Arc::clone(&server.stalled),
            Arc::clone(&server.per_path),
        );
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let (objects, requests, stalled, per_path) = (
                    Arc::clone(&objects),
                    Arc::clone(&requests),
                    Arc::clone(&stalled),
                    Arc::clone(&per_path),
                );
                let answer = service_fn(move |request: Request<Incoming>| {
                    let path = request.uri().path().trim_start_matches('/').to_owned();
                    let n = requests.fetch_add(1, Relaxed);
                    let seen = {
                        let mut per_path = per_path.lock().unwrap();
                        let count = per_path.entry(path.clone()).or_insert(0);
                        *count += 1;
                        *count - 1
                    };
                    let stall_now = match when {
                        StallWhen::FirstPerPath => seen == 0,
                        StallWhen::OneIn(every) => n % every == every - 1,
                        StallWhen::Never => false,
                    };
                    let stall_place = stall_now.then(|| {
                        let stall_number = stalled.fetch_add(1, Relaxed);
                        match place {
                            StallWhere::Alternate if stall_number % 2 == 1 => StallWhere::Body,
                            StallWhere::Alternate => StallWhere::Answer,
                            other => other,
                        }
                    });
                    let object = objects.get(&path).cloned();
                    async move {
                        if let Some(StallWhere::Answer) = stall_place {
                            tokio::time::sleep(stall).await;
                        }
                        let body_stall = matches!(stall_place, Some(StallWhere::Body));
                        Ok::<_, Infallible>(respond(&request, object, body_stall.then_some(stall)))
                    }
                });
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), answer));
            }
        });
        Ok(server)
    }

    /// How many requests `path` received.
    pub fn requests_to(&self, path: &str) -> u64 {
        self.per_path
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    /// An `HttpStore` on this server, without its own retries (the hedge is what retries).
    pub fn store(&self) -> object_store::Result<HttpStore> {
        HttpBuilder::new()
            .with_url(self.url.clone())
            .with_client_options(ClientOptions::new().with_allow_http(true))
            .with_http_connector(HyperConnector)
            .with_retry(RetryConfig {
                max_retries: 0,
                ..RetryConfig::default()
            })
            .build()
    }
}

/// Answers a GET (whole or one byte range) or a HEAD for `object`; any read under
/// `unavailable/` gets a 503 with `Retry-After: 1000`.
fn respond(
    request: &Request<Incoming>,
    object: Option<Bytes>,
    body_stall: Option<Duration>,
) -> Response<Body> {
    if request.uri().path().starts_with("/unavailable/") {
        let mut response = status(StatusCode::SERVICE_UNAVAILABLE);
        let pushback = HeaderValue::from_static("1000");
        response.headers_mut().insert(RETRY_AFTER, pushback);
        return response;
    }
    let Some(object) = object else {
        return status(StatusCode::NOT_FOUND);
    };
    let size = object.len() as u64;
    let range = match request
        .headers()
        .get(RANGE)
        .map(|r| parse_range(r.as_bytes(), size))
    {
        None => None,
        Some(Some(range)) => Some(range),
        Some(None) => return status(StatusCode::RANGE_NOT_SATISFIABLE),
    };
    let (code, start, end) = match &range {
        Some((start, end)) => (StatusCode::PARTIAL_CONTENT, *start, *end),
        None => (StatusCode::OK, 0, size),
    };
    let mut response = Response::builder()
        .status(code)
        .header(CONTENT_LENGTH, end - start);
    if range.is_some() {
        response = response.header(CONTENT_RANGE, format!("bytes {start}-{}/{size}", end - 1));
    }
    let body = object.slice(start as usize..end as usize);
    let body: Body = match (request.method(), body_stall) {
        (&Method::HEAD, _) => Empty::new().boxed(),
        (_, None) => Full::new(body).boxed(),
        (_, Some(stall)) => {
            let half = body.len() / 2;
            let (first, rest) = (body.slice(..half), body.slice(half..));
            let frames = stream::once(async move { Ok(Frame::data(first)) }).chain(stream::once(
                async move {
                    tokio::time::sleep(stall).await;
                    Ok(Frame::data(rest))
                },
            ));
            BodyExt::boxed(StreamBody::new(frames))
        }
    };
    response.body(body).expect("a valid response")
}

fn status(code: StatusCode) -> Response<Body> {
    let mut response = Response::new(Empty::new().boxed());
    *response.status_mut() = code;
    response
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` as a half-open range within `size`.
fn parse_range(header: &[u8], size: u64) -> Option<(u64, u64)> {
    let spec = std::str::from_utf8(header).ok()?.strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    let (start, end) = match (first, last) {
        ("", suffix) => (size.saturating_sub(suffix.parse().ok()?), size),
        (first, "") => (first.parse().ok()?, size),
        (first, last) => (
            first.parse().ok()?,
            last.parse::<u64>().ok()?.saturating_add(1),
        ),
    };
    (start < end.min(size)).then_some((start, end.min(size)))
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
        ms(*sorted.last().expect("at least one read")),
    )
}

/// The header of the latency table.
pub fn header() -> &'static str {
    "| | p50 | p99 | p99.9 | max | extra requests |\n|---|---|---|---|---|---|"
}

/// Sends `HttpStore`'s requests with a pooled hyper-util HTTP/1 client: object_store's
/// own reqwest transport needs a TLS backend even for plain HTTP.
#[derive(Debug)]
pub struct HyperConnector;

impl HttpConnector for HyperConnector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
        connector.set_nodelay(true);
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(connector);
        Ok(HttpClient::new(HyperService(client)))
    }
}

#[derive(Debug)]
struct HyperService(
    hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        HttpRequestBody,
    >,
);

#[async_trait::async_trait]
impl HttpService for HyperService {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let response = self.0.request(request).await.map_err(|error| {
            let kind = if error.is_connect() {
                HttpErrorKind::Connect
            } else {
                HttpErrorKind::Request
            };
            HttpError::new(kind, error)
        })?;
        Ok(response.map(|body| {
            HttpResponseBody::new(
                body.map_err(|error| HttpError::new(HttpErrorKind::Request, error)),
            )
        }))
    }
}
