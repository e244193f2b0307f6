//! `HttpHedgeLayer` in front of a hyper-util client, against a real hyper server on
//! loopback. Every scenario is counted from the server's side: the requests it read, in
//! order. Wall-clock bounds are generous; the machine may be busy.

#[path = "../examples/loopback/hyper.rs"]
mod loopback;

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::channel::mpsc;
use futures::SinkExt;
use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::{HttpHedgeLayer, NoHedge, ReplayBody};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use loopback::{client, full, request, Answer, Client, RequestBody, Server};
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

const STALL: Duration = Duration::from_millis(200);
const HEDGE_DELAY: Duration = Duration::from_millis(20);

fn policy(max_copies: usize, delay: Duration) -> Policy<TokioTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(delay)
        .timer(TokioTimer::new())
        .build()
}

/// A server whose answers `behavior` decides, and a client whose pool holds a
/// connection to it (warmed by one request).
async fn server_and_client(behavior: loopback::Behavior) -> (Server, Client) {
    let server = Server::start(behavior).await.unwrap();
    let client = client();
    let warm = request(Method::GET, server.uri("/warm-up"), full(""));
    let unhedged = HttpHedgeLayer::new(policy(1, HEDGE_DELAY));
    unhedged.layer(client.clone()).oneshot(warm).await.unwrap();
    (server, client)
}

/// Stalls the first request to each path; answers every later one at once.
fn first_of_each_path_stalls() -> loopback::Behavior {
    let stalled = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    Arc::new(move |_, path| {
        let first = stalled.lock().unwrap().insert(path.to_owned());
        Answer {
            stall: if first && path != "/warm-up" {
                STALL
            } else {
                Duration::ZERO
            },
            ..Answer::default()
        }
    })
}

async fn send<S>(
    mut service: S,
    request: http::Request<loopback::RequestBody>,
) -> (StatusCode, Bytes, Duration)
where
    S: Service<
        http::Request<loopback::RequestBody>,
        Response = http::Response<hyper::body::Incoming>,
    >,
    S::Error: std::fmt::Debug,
{
    let started = Instant::now();
    let response = service.ready().await.unwrap().call(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, body, started.elapsed())
}

fn bodies(seen: &[loopback::Seen]) -> Vec<Bytes> {
    seen.iter().map(|s| s.body.clone()).collect()
}

#[tokio::test]
async fn get_is_hedged_past_a_stall() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let policy = policy(2, HEDGE_DELAY);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let get = request(Method::GET, server.uri("/item"), full(""));
    let (status, _, took) = send(service, get).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.seen("/item").len(), 2, "the original and one hedge");
    assert!(took < Duration::from_millis(150), "not the stall: {took:?}");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_replayed_get_body_keeps_its_length() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(2, HEDGE_DELAY)))
        .service(client);

    let get = request(Method::GET, server.uri("/search"), full("query=hedging"));
    let (status, echoed, _) = send(service, get).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(echoed, "query=hedging");
    // A lost size hint would make hyper send the hedge's GET body as empty.
    assert_eq!(
        bodies(&server.seen("/search")),
        ["query=hedging", "query=hedging"]
    );
}

#[tokio::test]
async fn post_is_not_hedged() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let policy = policy(2, HEDGE_DELAY);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let post = request(Method::POST, server.uri("/orders"), full("one order"));
    let (status, echoed, took) = send(service, post).await;

    assert_eq!((status, echoed), (StatusCode::OK, Bytes::from("one order")));
    assert_eq!(bodies(&server.seen("/orders")), ["one order"]);
    assert!(took >= STALL, "the stall was waited out: {took:?}");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn methods_replace_the_default_list() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let layer = HttpHedgeLayer::new(policy(2, HEDGE_DELAY)).methods([Method::PUT]);
    let service = ServiceBuilder::new().layer(layer).service(client);

    let put = request(Method::PUT, server.uri("/put"), full("v1"));
    send(service.clone(), put).await;
    let get = request(Method::GET, server.uri("/get"), full(""));
    send(service, get).await;

    assert_eq!(bodies(&server.seen("/put")), ["v1", "v1"], "PUT hedged");
    assert_eq!(server.seen("/get").len(), 1, "GET no longer hedged");
}

#[tokio::test]
async fn no_hedge_extension_sends_the_request_once() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let policy = policy(2, HEDGE_DELAY);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let mut get = request(Method::GET, server.uri("/once"), full(""));
    get.extensions_mut().insert(NoHedge);
    let (status, _, took) = send(service, get).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.seen("/once").len(), 1);
    assert!(took >= STALL, "the stall was waited out: {took:?}");
    assert_eq!(policy.stats().hedges, 0);
}

#[tokio::test]
async fn a_503_is_retried() {
    let behavior: loopback::Behavior = Arc::new(|n, path| Answer {
        status: match path {
            "/flaky" if n == 1 => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::OK,
        },
        ..Answer::default()
    });
    let (server, client) = server_and_client(behavior).await;
    // A delay no test waits out: only the failure can start the second copy.
    let policy = policy(2, Duration::from_secs(30));
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let get = request(Method::GET, server.uri("/flaky"), full(""));
    let (status, _, took) = send(service, get).await;

    assert_eq!(status, StatusCode::OK, "the retry answered");
    assert_eq!(server.seen("/flaky").len(), 2);
    assert!(took < Duration::from_secs(5), "{took:?}");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_503_with_retry_after_holds_the_next_copy() {
    let behavior: loopback::Behavior = Arc::new(|n, _| Answer {
        status: if n == 1 {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        },
        retry_after: (n == 1).then_some("1"),
        ..Answer::default()
    });
    let (server, client) = server_and_client(behavior).await;
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(2, Duration::from_secs(30))))
        .service(client);

    let get = request(Method::GET, server.uri("/busy"), full(""));
    let (status, _, _) = send(service, get).await;

    assert_eq!(status, StatusCode::OK);
    let seen = server.seen("/busy");
    assert_eq!(seen.len(), 2);
    let gap = seen[1].at - seen[0].at;
    assert!(
        gap >= Duration::from_millis(900),
        "held for Retry-After: {gap:?}"
    );
    assert!(
        gap < Duration::from_secs(10),
        "not the 30 s hedge delay: {gap:?}"
    );
}

#[tokio::test]
async fn a_404_wins() {
    let behavior: loopback::Behavior = Arc::new(|_, path| Answer {
        status: if path == "/missing" {
            StatusCode::NOT_FOUND
        } else {
            StatusCode::OK
        },
        ..Answer::default()
    });
    let (server, client) = server_and_client(behavior).await;
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(3, Duration::from_secs(30))))
        .service(client);

    let get = request(Method::GET, server.uri("/missing"), full(""));
    let (status, _, _) = send(service, get).await;

    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(server.seen("/missing").len(), 1);
}

#[tokio::test]
async fn classify_overrides_the_default_verdicts() {
    let behavior: loopback::Behavior = Arc::new(|n, _| Answer {
        status: if n == 1 {
            StatusCode::CONFLICT
        } else {
            StatusCode::OK
        },
        ..Answer::default()
    });
    let (server, client) = server_and_client(behavior).await;
    type Result = std::result::Result<
        http::Response<hyper::body::Incoming>,
        hyper_util::client::legacy::Error,
    >;
    let layer =
        HttpHedgeLayer::new(policy(2, Duration::from_secs(30))).classify(|result: &Result| {
            match result {
                Ok(response) if response.status() == StatusCode::CONFLICT => {
                    hedging::Verdict::Retry
                }
                other => hedging_http::default_verdict(other),
            }
        });
    let service = ServiceBuilder::new().layer(layer).service(client);

    let get = request(Method::GET, server.uri("/conflict"), full(""));
    let (status, _, _) = send(service, get).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.seen("/conflict").len(), 2);
}

#[tokio::test]
async fn a_connection_error_is_retried() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    // Nothing listens on this port: a copy sent there fails to connect.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead: http::Uri = format!("http://{}/", closed.local_addr().unwrap())
        .parse()
        .unwrap();
    drop(closed);
    // The original goes to the dead port, later copies where the request says.
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&sent);
    let router = tower::service_fn(move |mut request: http::Request<ReplayBody<RequestBody>>| {
        if counter.fetch_add(1, Relaxed) == 0 {
            *request.uri_mut() = dead.clone();
        }
        client.clone().oneshot(request)
    });
    // A delay no test waits out: only the failure can start the second copy.
    let policy = policy(2, Duration::from_secs(30));
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(router);

    let get = request(Method::GET, server.uri("/fallback"), full(""));
    let (status, _, took) = send(service, get).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(sent.load(Relaxed), 2);
    assert_eq!(
        server.seen("/fallback").len(),
        1,
        "only the second copy connected"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn a_streaming_body_is_sent_once_with_every_byte() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let policy = policy(2, HEDGE_DELAY);
    let layer = HttpHedgeLayer::new(policy.clone()).methods([Method::POST]);
    let service = ServiceBuilder::new().layer(layer).service(client);

    // Pending when the call is made: its frames arrive while the request is in flight.
    let (mut frames, receiver) = mpsc::channel::<Result<Frame<Bytes>, loopback::Error>>(4);
    let body = BodyExt::boxed(StreamBody::new(receiver));
    tokio::spawn(async move {
        for chunk in ["streamed ", "in ", "three parts"] {
            tokio::time::sleep(Duration::from_millis(5)).await;
            frames
                .send(Ok(Frame::data(Bytes::from(chunk))))
                .await
                .unwrap();
        }
    });
    let post = request(Method::POST, server.uri("/upload"), body);
    let (status, echoed, _) = send(service, post).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(echoed, "streamed in three parts");
    assert_eq!(bodies(&server.seen("/upload")), ["streamed in three parts"]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn a_retry_after_on_a_get_with_a_streaming_body_returns_at_once() {
    let behavior: loopback::Behavior = Arc::new(|_, path| Answer {
        status: match path {
            "/busy-stream" => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::OK,
        },
        retry_after: (path == "/busy-stream").then_some("1000"),
        ..Answer::default()
    });
    let (server, client) = server_and_client(behavior).await;
    let policy = policy(3, Duration::from_secs(30));
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    // Pending when the call is made: the request cannot be copied, so nothing can
    // follow the 503's Retry-After.
    let (mut frames, receiver) = mpsc::channel::<Result<Frame<Bytes>, loopback::Error>>(4);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let _ = frames.send(Ok(Frame::data(Bytes::from("query")))).await;
    });
    let get = request(
        Method::GET,
        server.uri("/busy-stream"),
        BodyExt::boxed(StreamBody::new(receiver)),
    );
    let (status, _, _) = tokio::time::timeout(Duration::from_secs(10), send(service, get))
        .await
        .expect("the call waited out a Retry-After no copy can follow");

    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.seen("/busy-stream").len(), 1);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 0));
}

#[tokio::test]
async fn a_body_over_the_cap_is_sent_once() {
    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let layer = HttpHedgeLayer::new(policy(2, HEDGE_DELAY))
        .methods([Method::PUT])
        .max_replay_bytes(8);
    let service = ServiceBuilder::new().layer(layer).service(client);

    let put = request(
        Method::PUT,
        server.uri("/big"),
        full("more than eight bytes"),
    );
    let (status, echoed, _) = send(service, put).await;

    assert_eq!(
        (status, echoed),
        (StatusCode::OK, Bytes::from("more than eight bytes"))
    );
    assert_eq!(server.seen("/big").len(), 1);
}

#[tokio::test]
async fn each_copy_gets_the_request_extensions() {
    #[derive(Clone, Debug, PartialEq)]
    struct Tenant(&'static str);

    let (server, client) = server_and_client(first_of_each_path_stalls()).await;
    let tenants = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&tenants);
    let recorder = tower::service_fn(move |request: http::Request<ReplayBody<RequestBody>>| {
        log.lock()
            .unwrap()
            .push(request.extensions().get::<Tenant>().cloned());
        client.clone().oneshot(request)
    });
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(2, HEDGE_DELAY)))
        .service(recorder);

    let mut get = request(Method::GET, server.uri("/tenant"), full(""));
    get.extensions_mut().insert(Tenant("blue"));
    send(service, get).await;

    assert_eq!(server.seen("/tenant").len(), 2);
    let blue = Some(Tenant("blue"));
    assert_eq!(*tenants.lock().unwrap(), [blue.clone(), blue]);
}
