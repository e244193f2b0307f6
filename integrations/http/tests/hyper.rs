//! `HttpHedgeLayer` in front of a hyper-util client, against a real hyper server on
//! loopback. Every scenario is counted from the server's side: the requests it read, in
//! order, on the policy's virtual clock, which moves only when a test advances it; no
//! test waits for time, and one smoke test runs on the real clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::channel::mpsc;
use futures::SinkExt;
use hedging::timer::{ManualTimer, TokioTimer};
use hedging::Policy;
use hedging_http::{HttpHedgeLayer, NoHedge, ReplayBody};
use hedging_test_server::http::{client, full, scripted, RequestBody, Server};
use hedging_test_server::{until, Arrival, Error, HANG_GUARD};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::client::legacy::connect::HttpConnector;
use tower::{Service, ServiceBuilder, ServiceExt};

/// A pooled HTTP/1 client taking the hedging layer's body.
type Client = hyper_util::client::legacy::Client<HttpConnector, ReplayBody<RequestBody>>;

const HEDGE_DELAY: Duration = Duration::from_millis(20);
/// A delay no test advances to: only a failure or a pushback can start the next copy.
const NEVER: Duration = Duration::from_secs(3600);

fn policy(clock: &ManualTimer, max_copies: usize, delay: Duration) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(delay)
        .timer(clock.clone())
        .build()
}

/// A scripted server stamping arrivals with `clock`, and a client for it.
async fn server_and_client(clock: &ManualTimer) -> (Server, Client) {
    let now = clock.clone();
    let server = Server::start_with_clock(scripted(), Arc::new(move || now.now()))
        .await
        .unwrap();
    (server, client())
}

/// Sends `request` through `service` on a task of its own: its status and body.
fn send<S>(service: S, request: http::Request<RequestBody>) -> Call
where
    S: Service<http::Request<RequestBody>, Response = http::Response<hyper::body::Incoming>>
        + Send
        + 'static,
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

type Call = tokio::task::JoinHandle<(StatusCode, Bytes)>;

fn bodies(seen: &[Arrival]) -> Vec<Bytes> {
    seen.iter().map(|s| s.body.clone()).collect()
}

#[tokio::test]
async fn get_is_hedged_past_a_stall() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let get = server.request(Method::GET, "/item", "hold | ok", full(""));
    let call = send(service, get);
    server.until_arrived("/item", 1).await;
    clock.advance(HEDGE_DELAY);
    let (status, body) = call.await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "copy 1 of /item", "the hedge answered, not the stall");
    let seen = server.arrivals("/item");
    assert_eq!(seen.len(), 2, "the original and one hedge");
    assert_eq!(seen[1].at, HEDGE_DELAY, "the hedge went out at its delay");
    server.until_dropped(1).await; // the held original: its connection closed
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_hedge_overtakes_a_stall_on_the_real_clock() {
    let server = Server::start(scripted()).await.unwrap();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(HEDGE_DELAY)
        .timer(TokioTimer::new())
        .build();
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client::<ReplayBody<RequestBody>>());

    let get = server.request(Method::GET, "/smoke", "sleep=10000 | ok", full(""));
    let started = Instant::now();
    let (status, body) = send(service, get).await.unwrap();
    let took = started.elapsed();

    assert_eq!(
        (status, body),
        (StatusCode::OK, Bytes::from("copy 1 of /smoke"))
    );
    assert!(
        took < Duration::from_secs(5),
        "not the 10 s stall: {took:?}"
    );
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn a_replayed_get_body_keeps_its_length() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(&clock, 2, HEDGE_DELAY)))
        .service(client);

    let get = server.request(Method::GET, "/search", "hold | echo", full("query=hedging"));
    let call = send(service, get);
    server.until_arrived("/search", 1).await;
    clock.advance(HEDGE_DELAY);
    let (status, echoed) = call.await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(echoed, "query=hedging");
    // A lost size hint would make hyper send the hedge's GET body as empty.
    assert_eq!(
        bodies(&server.arrivals("/search")),
        ["query=hedging", "query=hedging"]
    );
}

#[tokio::test]
async fn post_is_not_hedged() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let post = server.request(Method::POST, "/orders", "hold;echo", full("one order"));
    let call = send(service, post);
    server.until_arrived("/orders", 1).await;
    clock.advance(NEVER);
    server.release("/orders");
    let (status, echoed) = call.await.unwrap();

    assert_eq!((status, echoed), (StatusCode::OK, Bytes::from("one order")));
    assert_eq!(bodies(&server.arrivals("/orders")), ["one order"]);
    assert_eq!(
        clock.sleeps_created(),
        0,
        "the stall was waited out: no hedge could go"
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn methods_replace_the_default_list() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let layer = HttpHedgeLayer::new(policy(&clock, 2, HEDGE_DELAY)).methods([Method::PUT]);
    let service = ServiceBuilder::new().layer(layer).service(client);

    let put = server.request(Method::PUT, "/put", "hold | ok", full("v1"));
    let call = send(service.clone(), put);
    server.until_arrived("/put", 1).await;
    clock.advance(HEDGE_DELAY);
    call.await.unwrap();
    let get = server.request(Method::GET, "/get", "hold", full(""));
    let call = send(service, get);
    server.until_arrived("/get", 1).await;
    clock.advance(NEVER);
    server.release("/get");
    call.await.unwrap();

    assert_eq!(bodies(&server.arrivals("/put")), ["v1", "v1"], "PUT hedged");
    assert_eq!(server.arrivals("/get").len(), 1, "GET no longer hedged");
}

#[tokio::test]
async fn no_hedge_extension_sends_the_request_once() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let mut get = server.request(Method::GET, "/once", "hold | ok", full(""));
    get.extensions_mut().insert(NoHedge);
    let call = send(service, get);
    server.until_arrived("/once", 1).await;
    clock.advance(NEVER);
    server.release("/once");
    let (status, _) = call.await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.arrivals("/once").len(), 1);
    assert_eq!(
        clock.sleeps_created(),
        0,
        "the stall was waited out: no hedge could go"
    );
    assert_eq!(policy.stats().hedges, 0);
}

#[tokio::test]
async fn a_503_is_retried() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let policy = policy(&clock, 2, NEVER);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    let get = server.request(Method::GET, "/flaky", "status=503 | ok", full(""));
    let (status, _) = send(service, get).await.unwrap();

    assert_eq!(status, StatusCode::OK, "the retry answered");
    let seen = server.arrivals("/flaky");
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1].at,
        Duration::ZERO,
        "no time passed: the failure started it"
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_503_with_retry_after_holds_the_next_copy() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(&clock, 2, NEVER)))
        .service(client);
    let retry_after = Duration::from_secs(1);

    let script = "status=503;retry-after=1 | ok";
    let call = send(
        service,
        server.request(Method::GET, "/busy", script, full("")),
    );
    let next_due = || clock.next_deadline() == Some(retry_after);
    until(next_due, "holding the next copy for the Retry-After").await;
    clock.advance(retry_after - Duration::from_millis(1));
    assert_eq!(server.requests(), 1, "held for Retry-After");
    clock.advance(Duration::from_millis(1));
    let (status, _) = call.await.unwrap();

    assert_eq!(status, StatusCode::OK);
    let seen = server.arrivals("/busy");
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].at - seen[0].at, retry_after, "not the hedge delay");
}

#[tokio::test]
async fn a_404_wins() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(&clock, 3, NEVER)))
        .service(client);

    let get = server.request(Method::GET, "/missing", "status=404 | ok", full(""));
    let (status, _) = send(service, get).await.unwrap();

    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(server.arrivals("/missing").len(), 1);
}

#[tokio::test]
async fn classify_overrides_the_default_verdicts() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    type Result = std::result::Result<
        http::Response<hyper::body::Incoming>,
        hyper_util::client::legacy::Error,
    >;
    let layer =
        HttpHedgeLayer::new(policy(&clock, 2, NEVER)).classify(|result: &Result| match result {
            Ok(response) if response.status() == StatusCode::CONFLICT => hedging::Verdict::Retry,
            other => hedging_http::default_verdict(other),
        });
    let service = ServiceBuilder::new().layer(layer).service(client);

    let get = server.request(Method::GET, "/conflict", "status=409 | ok", full(""));
    let (status, _) = send(service, get).await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.arrivals("/conflict").len(), 2);
}

#[tokio::test]
async fn a_connection_error_is_retried() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
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
    let policy = policy(&clock, 2, NEVER);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(router);

    let get = server.request(Method::GET, "/fallback", "", full(""));
    let (status, _) = send(service, get).await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(sent.load(Relaxed), 2);
    let seen = server.arrivals("/fallback");
    assert_eq!(seen.len(), 1, "only the second copy connected");
    assert_eq!(
        seen[0].at,
        Duration::ZERO,
        "no time passed: the failure started it"
    );
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn a_streaming_body_is_sent_once_with_every_byte() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let layer = HttpHedgeLayer::new(policy.clone()).methods([Method::POST]);
    let service = ServiceBuilder::new().layer(layer).service(client);

    // Pending when the call is made: its frames arrive while the request is in flight.
    let (mut frames, receiver) = mpsc::channel::<Result<Frame<Bytes>, Error>>(4);
    let body = BodyExt::boxed(StreamBody::new(receiver));
    let post = server.request(Method::POST, "/upload", "echo", body);
    let call = send(service, post);
    for chunk in ["streamed ", "in ", "three parts"] {
        tokio::task::yield_now().await;
        frames
            .send(Ok(Frame::data(Bytes::from(chunk))))
            .await
            .unwrap();
    }
    drop(frames);
    let (status, echoed) = call.await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(echoed, "streamed in three parts");
    assert_eq!(
        bodies(&server.arrivals("/upload")),
        ["streamed in three parts"]
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn a_retry_after_on_a_get_with_a_streaming_body_returns_at_once() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let policy = policy(&clock, 3, NEVER);
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy.clone()))
        .service(client);

    // Pending when the call is made: the request cannot be copied, so nothing can
    // follow the 503's Retry-After.
    let (mut frames, receiver) = mpsc::channel::<Result<Frame<Bytes>, Error>>(4);
    let body = BodyExt::boxed(StreamBody::new(receiver));
    let script = "status=503;retry-after=1000";
    let call = send(
        service,
        server.request(Method::GET, "/busy-stream", script, body),
    );
    tokio::task::yield_now().await;
    frames
        .send(Ok(Frame::data(Bytes::from("query"))))
        .await
        .unwrap();
    drop(frames);
    let (status, _) = tokio::time::timeout(HANG_GUARD, call)
        .await
        .expect("the call waited out a Retry-After no copy can follow")
        .unwrap();

    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.arrivals("/busy-stream").len(), 1);
    assert_eq!(clock.now(), Duration::ZERO, "nothing was waited out");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 0));
}

#[tokio::test]
async fn a_body_over_the_cap_is_sent_once() {
    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let layer = HttpHedgeLayer::new(policy(&clock, 2, HEDGE_DELAY))
        .methods([Method::PUT])
        .max_replay_bytes(8);
    let service = ServiceBuilder::new().layer(layer).service(client);

    let body = full("more than eight bytes");
    let call = send(
        service,
        server.request(Method::PUT, "/big", "hold;echo", body),
    );
    server.until_arrived("/big", 1).await;
    clock.advance(NEVER);
    server.release("/big");
    let (status, echoed) = call.await.unwrap();

    assert_eq!(
        (status, echoed),
        (StatusCode::OK, Bytes::from("more than eight bytes"))
    );
    assert_eq!(server.arrivals("/big").len(), 1);
}

#[tokio::test]
async fn each_copy_gets_the_request_extensions() {
    #[derive(Clone, Debug, PartialEq)]
    struct Tenant(&'static str);

    let clock = ManualTimer::new();
    let (server, client) = server_and_client(&clock).await;
    let tenants = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&tenants);
    let recorder = tower::service_fn(move |request: http::Request<ReplayBody<RequestBody>>| {
        log.lock()
            .unwrap()
            .push(request.extensions().get::<Tenant>().cloned());
        client.clone().oneshot(request)
    });
    let service = ServiceBuilder::new()
        .layer(HttpHedgeLayer::new(policy(&clock, 2, HEDGE_DELAY)))
        .service(recorder);

    let mut get = server.request(Method::GET, "/tenant", "hold | ok", full(""));
    get.extensions_mut().insert(Tenant("blue"));
    let call = send(service, get);
    server.until_arrived("/tenant", 1).await;
    clock.advance(HEDGE_DELAY);
    call.await.unwrap();

    assert_eq!(server.arrivals("/tenant").len(), 2);
    let blue = Some(Tenant("blue"));
    assert_eq!(*tenants.lock().unwrap(), [blue.clone(), blue]);
}
