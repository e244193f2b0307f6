//! `HttpHedgeLayer` in front of a hyper-util client, against a real hyper server on
//! loopback. Every scenario is counted from the server's side: the requests it read, in
//! order, on the policy's virtual clock, which moves only when a test advances it; no
//! test waits for time, and one smoke test runs on the real clock.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hedging_http::{HttpHedgeLayer, ReplayBody};
use hedging_test_server::http::{client, full, scripted, RequestBody};
use hedging_test_server::{overtakes_the_stall, real_clock, tokio_policy};
use hedging_test_server::{Arrival, Server, VirtualClock, HANG_GUARD, NEVER};
use http::{Method, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use tower::{Layer, ServiceExt};

use common::{send, streaming, Response};

/// A pooled HTTP/1 client taking the hedging layer's body.
type Client = hyper_util::client::legacy::Client<HttpConnector, ReplayBody<RequestBody>>;
const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// A virtual clock, a scripted server stamping arrivals with it, and a client.
async fn stack() -> (VirtualClock, Server, Client) {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    (clock, server, client())
}

/// A GET of `path` with an empty body, answered as `script` says.
fn get(server: &Server, path: &str, script: &str) -> http::Request<RequestBody> {
    server.request(Method::GET, path, script, full(""))
}

fn bodies(seen: &[Arrival]) -> Vec<Bytes> {
    seen.iter().map(|s| s.body.clone()).collect()
}

#[tokio::test]
async fn get_is_hedged_past_a_stall() {
    let (clock, server, client) = stack().await;
    let policy = clock.policy(2, HEDGE_DELAY);
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(client);

    let call = send(hedged, get(&server, "/item", "hold | ok"));
    clock.hedge(&server, "/item", 1, HEDGE_DELAY).await;
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
    let server = Server::http(scripted(), real_clock()).await.unwrap();
    let policy = tokio_policy(HEDGE_DELAY);
    let hedged = HttpHedgeLayer::new(policy.clone()).layer(client());

    let call = send(hedged, get(&server, "/smoke", "sleep=10000 | ok"));
    let (_, body) = overtakes_the_stall(call).await.unwrap();

    assert_eq!(body, "copy 1 of /smoke", "the hedge answered");
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn a_replayed_get_body_keeps_its_length() {
    let (clock, server, client) = stack().await;
    let hedged = HttpHedgeLayer::new(clock.policy(2, HEDGE_DELAY)).layer(client);

    let search = full("query=hedging");
    let call = send(
        hedged,
        server.request(Method::GET, "/search", "hold | echo", search),
    );
    clock.hedge(&server, "/search", 1, HEDGE_DELAY).await;
    let (status, echoed) = call.await.unwrap();

    assert_eq!(
        (status, echoed),
        (StatusCode::OK, Bytes::from("query=hedging"))
    );
    // A lost size hint would make hyper send the hedge's GET body as empty.
    assert_eq!(
        bodies(&server.arrivals("/search")),
        ["query=hedging", "query=hedging"]
    );
}

#[tokio::test]
async fn methods_replace_the_default_list() {
    let (clock, server, client) = stack().await;
    let layer = HttpHedgeLayer::new(clock.policy(2, HEDGE_DELAY)).methods([Method::PUT]);
    let hedged = layer.layer(client);

    let put = send(
        hedged.clone(),
        server.request(Method::PUT, "/put", "hold | ok", full("v1")),
    );
    clock.hedge(&server, "/put", 1, HEDGE_DELAY).await;
    put.await.unwrap();
    let get = send(hedged, get(&server, "/get", "hold"));
    clock.release(&server, "/get").await;
    get.await.unwrap();

    assert_eq!(bodies(&server.arrivals("/put")), ["v1", "v1"], "PUT hedged");
    assert_eq!(server.arrivals("/get").len(), 1, "GET no longer hedged");
}

#[tokio::test]
async fn a_503_is_retried() {
    let (clock, server, client) = stack().await;
    let policy = clock.policy(2, NEVER);

    let hedged = HttpHedgeLayer::new(policy.clone()).layer(client);
    let (status, _) = send(hedged, get(&server, "/flaky", "status=503 | ok"))
        .await
        .unwrap();

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
    let (clock, server, client) = stack().await;
    let hedged = HttpHedgeLayer::new(clock.policy(2, NEVER)).layer(client);

    let call = send(
        hedged,
        get(&server, "/busy", "status=503;retry-after=1 | ok"),
    );
    let retry_after = clock.held_for(NEVER).await;
    assert_eq!(retry_after, Duration::from_secs(1));
    clock.advance(retry_after - Duration::from_millis(1));
    assert_eq!(server.requests(), 1, "held for Retry-After");
    clock.advance(Duration::from_millis(1));

    assert_eq!(call.await.unwrap().0, StatusCode::OK);
    let seen = server.arrivals("/busy");
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].at - seen[0].at, retry_after, "not the hedge delay");
}

#[tokio::test]
async fn a_404_wins() {
    let (clock, server, client) = stack().await;

    let hedged = HttpHedgeLayer::new(clock.policy(3, NEVER)).layer(client);
    let (status, _) = send(hedged, get(&server, "/missing", "status=404 | ok"))
        .await
        .unwrap();

    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(server.arrivals("/missing").len(), 1);
}

#[tokio::test]
async fn classify_overrides_the_default_verdicts() {
    let (clock, server, client) = stack().await;
    type Result = std::result::Result<Response, hyper_util::client::legacy::Error>;
    let layer =
        HttpHedgeLayer::new(clock.policy(2, NEVER)).classify(|result: &Result| match result {
            Ok(response) if response.status() == StatusCode::CONFLICT => hedging::Verdict::Retry,
            other => hedging_http::default_verdict(other),
        });

    let call = send(
        layer.layer(client),
        get(&server, "/conflict", "status=409 | ok"),
    );

    assert_eq!(call.await.unwrap().0, StatusCode::OK);
    assert_eq!(server.arrivals("/conflict").len(), 2);
}

#[tokio::test]
async fn a_connection_error_is_retried() {
    let (clock, server, client) = stack().await;
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
    let policy = clock.policy(2, NEVER);

    let call = send(
        HttpHedgeLayer::new(policy.clone()).layer(router),
        get(&server, "/fallback", ""),
    );

    assert_eq!(call.await.unwrap().0, StatusCode::OK);
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
async fn a_retry_after_on_a_get_with_a_streaming_body_returns_at_once() {
    let (clock, server, client) = stack().await;
    let policy = clock.policy(3, NEVER);

    // The request cannot be copied, so nothing can follow the 503's Retry-After.
    let script = "status=503;retry-after=1000";
    let request = server.request(Method::GET, "/busy-stream", script, streaming(&["query"]));
    let call = send(HttpHedgeLayer::new(policy.clone()).layer(client), request);
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
async fn each_copy_gets_the_request_extensions() {
    #[derive(Clone, Debug, PartialEq)]
    struct Tenant(&'static str);

    let (clock, server, client) = stack().await;
    let tenants = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&tenants);
    let recorder = tower::service_fn(move |request: http::Request<ReplayBody<RequestBody>>| {
        log.lock()
            .unwrap()
            .push(request.extensions().get::<Tenant>().cloned());
        client.clone().oneshot(request)
    });
    let hedged = HttpHedgeLayer::new(clock.policy(2, HEDGE_DELAY)).layer(recorder);

    let mut request = get(&server, "/tenant", "hold | ok");
    request.extensions_mut().insert(Tenant("blue"));
    let call = send(hedged, request);
    clock.hedge(&server, "/tenant", 1, HEDGE_DELAY).await;
    call.await.unwrap();

    assert_eq!(server.arrivals("/tenant").len(), 2);
    let blue = Some(Tenant("blue"));
    assert_eq!(*tenants.lock().unwrap(), [blue.clone(), blue]);
}
