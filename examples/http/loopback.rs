//! Two loopback HTTP/1 servers (a primary that stalls one request in `stall_every` and a
//! replica that never stalls) and a hyper client, shared by `examples/http` and
//! `tests/http.rs`.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use hedging::timer::TokioTimer;
use hedging::{Attempt, Hedgeable, Policy};

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Client = hyper_util::client::legacy::Client<HttpConnector, Empty<Bytes>>;

/// A loopback server: answers every GET with `ok`, stalling request n for `stall` when
/// `n % stall_every == stall_every - 1`.
pub struct Server {
    pub uri: Uri,
    pub requests: Arc<AtomicU64>,
    pub stalled: Arc<AtomicU64>,
}

impl Server {
    /// Binds 127.0.0.1 on a free port and serves on the current tokio runtime.
    pub async fn start(stall_every: Option<u64>, stall: Duration) -> std::io::Result<Server> {
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let uri = format!("http://{}/", listener.local_addr()?)
            .parse()
            .expect("a valid uri");
        let requests = Arc::new(AtomicU64::new(0));
        let stalled = Arc::new(AtomicU64::new(0));
        let (count, stalls) = (Arc::clone(&requests), Arc::clone(&stalled));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                let (count, stalls) = (Arc::clone(&count), Arc::clone(&stalls));
                let answer = service_fn(move |_: Request<Incoming>| {
                    let n = count.fetch_add(1, Relaxed);
                    let stall_now = stall_every.is_some_and(|every| n % every == every - 1);
                    if stall_now {
                        stalls.fetch_add(1, Relaxed);
                    }
                    async move {
                        if stall_now {
                            tokio::time::sleep(stall).await;
                        }
                        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                    }
                });
                tokio::spawn(http1::Builder::new().serve_connection(TokioIo::new(stream), answer));
            }
        });
        Ok(Server {
            uri,
            requests,
            stalled,
        })
    }
}

/// A pooled HTTP/1 client (keep-alive, no TLS).
pub fn client() -> Client {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector)
}

/// One GET, body read to the end.
pub async fn get(client: &Client, uri: Uri) -> Result<Bytes, Error> {
    let response = client.get(uri).await?;
    Ok(response.into_body().collect().await?.to_bytes())
}

/// Sends `requests` GETs one after another and returns each one's latency. Without a
/// policy every request goes to `primary` with a plain `.await`; with one, copy 0 goes to
/// `primary` and hedges go to `replica`.
pub async fn run(
    client: &Client,
    primary: &Uri,
    replica: &Uri,
    requests: usize,
    policy: Option<&Policy<TokioTimer>>,
) -> Result<Vec<Duration>, Error> {
    let mut latencies = Vec::with_capacity(requests);
    for _ in 0..requests {
        let started = Instant::now();
        let body = match policy {
            None => get(client, primary.clone()).await?,
            Some(policy) => {
                (|a: Attempt| get(client, if a.is_hedge() { replica } else { primary }.clone()))
                    .hedged(policy)
                    .await?
            }
        };
        latencies.push(started.elapsed());
        assert_eq!(&body[..], b"ok");
    }
    latencies.sort();
    Ok(latencies)
}

/// The nearest-rank quantile of sorted latencies.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `p50 … max` of sorted latencies, in milliseconds.
pub fn summary(sorted: &[Duration]) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "p50 {:7.3} ms   p90 {:7.3} ms   p99 {:7.3} ms   p99.9 {:7.3} ms   max {:7.3} ms",
        ms(quantile(sorted, 0.50)),
        ms(quantile(sorted, 0.90)),
        ms(quantile(sorted, 0.99)),
        ms(quantile(sorted, 0.999)),
        ms(*sorted.last().expect("at least one request")),
    )
}
