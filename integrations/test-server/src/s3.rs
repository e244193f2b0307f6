//! [`S3`]: a real S3 server on loopback (`s3s-fs`, its objects files in a temporary
//! directory, requests checked against their SigV4 signatures) behind a proxy that logs
//! and holds requests as a behaviour says, as a stalling network or a slow replica
//! would; and `object_store`'s `AmazonS3` for it.
//!
//! The proxy is a [`Server`]: its log counts what reached it, the connections it
//! accepted and saw closed, and the held requests its clients dropped. It forwards each
//! request unchanged (the `Host` header too, which the signature covers) once its hold
//! is over; a dropped request is never forwarded.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::client::legacy::connect::HttpConnector;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::{ClientOptions, RetryConfig};
use tokio::net::TcpListener;

use crate::answer::{Answer, Behavior};
use crate::log::Hold;
use crate::log::{Arrival, Clock, Log};
use crate::object::HyperConnector;
use crate::pace::{paced, Pace};
use crate::resume::assert_asks_the_rest;
use crate::server::{read_whole, serve, Server};
use crate::Error;

/// The bucket every [`S3`] server has.
pub const BUCKET: &str = "hedging";
const ACCESS_KEY: &str = "hedging-access-key";
const SECRET_KEY: &str = "hedging-secret-key";

/// The object the S3 tests read: 64 KiB, byte i is `i % 251`.
pub fn object() -> Bytes {
    (0..64 * 1024)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<_>>()
        .into()
}

/// The first request of `method` to each object is held until released, or until its
/// client drops it; every other request passes at once.
pub fn first_held(method: Method) -> Behavior {
    Arc::new(
        move |arrival| match arrival.method == method && arrival.copy == 0 {
            true => Answer::ok().hold(Hold::Released),
            false => Answer::ok(),
        },
    )
}

/// The access key id and secret every [`S3`] server accepts: for clients of its own (the
/// AWS SDK's), which sign their requests with them.
pub fn credentials() -> (&'static str, &'static str) {
    (ACCESS_KEY, SECRET_KEY)
}

/// A running S3 server (`s3s-fs`) and the stalling proxy in front of it; removes its
/// directory when dropped.
#[derive(Debug)]
pub struct S3 {
    /// The proxy clients talk to, and its log.
    pub proxy: Server,
    /// The S3 server itself, for setting up objects with no proxy in between.
    pub direct: SocketAddr,
    root: PathBuf,
}

impl S3 {
    /// An S3 server with one empty bucket, [`BUCKET`], and a proxy in front of it that
    /// holds each request as `behavior` says (keyed by path: `/hedging/KEY`), stamping
    /// arrivals with `clock`.
    pub async fn start(behavior: Behavior, clock: Clock) -> Result<S3, Error> {
        static SERVERS: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "hedging-s3-{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Relaxed)
        );
        let root = std::env::temp_dir().join(name);
        std::fs::create_dir_all(root.join(BUCKET))?;
        let files = s3s_fs::FileSystem::new(&root).map_err(|e| format!("s3s-fs: {e:?}"))?;
        let mut s3 = s3s::service::S3ServiceBuilder::new(files);
        s3.set_auth(s3s::auth::SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        let s3 = s3.build();
        let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let direct = listener.local_addr()?;
        // The server's own log is not read: the proxy's is the one tests count on.
        let unread = Log::new(clock.clone());
        tokio::spawn(serve(listener, unread, move |_| s3.clone()));

        let log = Log::new(clock);
        let (listener, proxy) = Server::bind(log.clone()).await?;
        let upstream = crate::http::client::<Full<Bytes>>();
        tokio::spawn(serve(listener, log, move |log| {
            let (behavior, upstream) = (Arc::clone(&behavior), upstream.clone());
            service_fn(move |request| {
                let forwarding = (Arc::clone(&behavior), log.clone(), upstream.clone());
                forward(forwarding, direct, request)
            })
        }));
        Ok(S3 {
            proxy,
            direct,
            root,
        })
    }

    /// An `AmazonS3` for [`BUCKET`] through the proxy, without retries of its own (the
    /// hedge is what retries), its requests signed with SigV4 and sent by hyper-util.
    pub fn store(&self) -> object_store::Result<AmazonS3> {
        store_at(self.proxy.addr)
    }

    /// An `AmazonS3` for [`BUCKET`] straight to the S3 server, for putting objects.
    pub fn direct_store(&self) -> object_store::Result<AmazonS3> {
        store_at(self.direct)
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn store_at(addr: SocketAddr) -> object_store::Result<AmazonS3> {
    AmazonS3Builder::new()
        .with_endpoint(format!("http://{addr}"))
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .with_region("us-east-1")
        .with_bucket_name(BUCKET)
        .with_access_key_id(ACCESS_KEY)
        .with_secret_access_key(SECRET_KEY)
        .with_http_connector(HyperConnector)
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        })
        .build()
}

type Upstream = hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>;
type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// Logs `request`, holds it as the behaviour says, then forwards it to the S3 server at
/// `s3` and hands back its answer; counted answered once the answer's head is back.
async fn forward(
    (behavior, log, upstream): (Behavior, Log, Upstream),
    s3: SocketAddr,
    request: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let (mut parts, body) = read_whole(request).await;
    let path = parts.uri.path().to_owned();
    let arrival = log.arrive(
        path.clone(),
        parts.method.clone(),
        path,
        parts.headers.clone(),
        body.clone(),
    );
    let answering = log.answering();
    let answer = behavior(&arrival);
    log.hold(&arrival.key, answer.hold).await;
    let (pace, key) = (answer.pace, arrival.key.clone());
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = format!("http://{s3}{path_and_query}")
        .parse()
        .expect("a valid uri");
    let response = upstream.request(Request::from_parts(parts, Full::new(body)));
    match response.await {
        Ok(response) => {
            answering.done();
            Ok(response.map(|body| match pace {
                Pace::Whole => body.boxed(),
                pace => {
                    let paced = paced(body.into_data_stream().boxed(), pace, log, key);
                    BodyExt::boxed(StreamBody::new(paced.map(|bytes| bytes.map(Frame::data))))
                }
            }))
        }
        Err(error) => {
            let mut failed = Response::new(Full::new(Bytes::from(error.to_string())));
            *failed.status_mut() = StatusCode::BAD_GATEWAY;
            Ok(failed.map(|body| body.map_err(|never| match never {}).boxed()))
        }
    }
}

/// Asserts that `seen`, the requests for one object, are a first GET and its resume: the
/// resume asked for the rest of a `size`-byte object from `offset` at `at`, of the version
/// the first answer's ETag names.
pub fn assert_resumed_by_e_tag(seen: &[Arrival], offset: u64, size: u64, at: Duration) {
    assert_eq!(seen.len(), 2, "the first GET and its resume");
    assert_eq!(seen[0].header("if-match"), None);
    let e_tag = assert_asks_the_rest(&seen[1], offset, size, at);
    assert!(
        e_tag.is_some_and(|tag| tag.starts_with('"')),
        "the first answer's ETag"
    );
}

/// Asserts that each of `copies` was signed with SigV4.
pub fn assert_each_signed(copies: &[Arrival]) {
    assert!(
        copies.iter().all(|copy| copy
            .header("authorization")
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256"))),
        "each copy signed with SigV4"
    );
}

/// Waits until `proxy` saw the loser of a hedged read dropped and its connection closed,
/// and asserts it: the held original dropped unanswered, the hedge answered, two
/// connections, the loser's closed.
pub async fn assert_the_loser_was_closed(proxy: &Server) {
    proxy.until_dropped(1).await;
    proxy.until_closed(1).await;
    assert_eq!(proxy.dropped(), 1, "the held original, dropped unanswered");
    assert_eq!(proxy.answered(), 1, "the hedge, answered by the S3 server");
    assert_eq!(
        proxy.closed_connections(),
        1,
        "the loser's connection, closed"
    );
    assert_eq!(proxy.connections(), 2, "the original's and the hedge's");
}
