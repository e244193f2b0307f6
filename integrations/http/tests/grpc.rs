//! `GrpcHedgeLayer` in front of a tonic `Channel`, against a real tonic server on
//! loopback. Every scenario is counted from the server's side: the copies it saw, in
//! order. Wall-clock bounds are generous; the machine may be busy.

#[path = "../examples/loopback/grpc.rs"]
mod loopback;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hedging::timer::TokioTimer;
use hedging::Policy;
use hedging_http::grpc::{GrpcHedge, GrpcHedgeLayer};
use hedging_http::{NoHedge, ReplayBody};
use loopback::{into_tonic_body, say, Action, EchoRequest, Server, OTHER, SAY};
use tonic::transport::Channel;
use tonic::Code;
use tower::util::MapRequest;
use tower::ServiceBuilder;

const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// Copy n follows the n-th `|`-separated part of the script (the last part for later
/// copies): `sleep=MS`, `status=CODE`, `pushback=VALUE`, `;`-separated; no status is OK.
fn scripted() -> loopback::Behavior {
    Arc::new(|request: &EchoRequest, attempt: usize| {
        let parts: Vec<&str> = request.script.split('|').map(str::trim).collect();
        let part = parts[attempt.min(parts.len() - 1)];
        let mut action = Action::default();
        for token in part.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            let (key, value) = token.split_once('=').unwrap_or((token, ""));
            match key {
                "ok" => {}
                "sleep" => action.stall = Duration::from_millis(value.parse().unwrap()),
                "status" => action.status = Some(Code::from_i32(value.parse().unwrap())),
                "pushback" => action.pushback = Some(Box::leak(value.to_owned().into_boxed_str())),
                other => panic!("unknown script token {other}"),
            }
        }
        action
    })
}

fn policy(max_copies: usize, delay: Duration) -> Policy<TokioTimer> {
    Policy::builder()
        .max_copies(max_copies)
        .delay(delay)
        .timer(TokioTimer::new())
        .build()
}

/// A server, and a channel to it warmed by one call (the first call on a fresh
/// connection can take tens of milliseconds).
async fn server_and_channel() -> (Server, Channel) {
    let server = Server::start(scripted()).await.unwrap();
    let channel = server.channel().await.unwrap();
    say(channel.clone(), request("ok"), SAY).await.unwrap();
    (server, channel)
}

fn request(script: &str) -> tonic::Request<EchoRequest> {
    tonic::Request::new(EchoRequest {
        script: script.to_owned(),
        payload: b"payload".to_vec(),
    })
}

/// What the tests put in front of a channel: the layer, then the body map.
type Hedged = GrpcHedge<MapRequest<Channel, IntoTonicBody>, TokioTimer>;
type IntoTonicBody =
    fn(http::Request<ReplayBody<tonic::body::Body>>) -> http::Request<tonic::body::Body>;

/// The hedged stack: the layer, the body map, the channel.
fn hedged(layer: GrpcHedgeLayer<TokioTimer>, channel: &Channel) -> Hedged {
    ServiceBuilder::new()
        .layer(layer)
        .map_request(into_tonic_body as IntoTonicBody)
        .service(channel.clone())
}

fn attempts(seen: &[loopback::Seen]) -> Vec<usize> {
    seen.iter().map(|s| s.attempt).collect()
}

#[tokio::test]
async fn hedged_unary_call_returns_in_about_the_hedge_delay() {
    let (server, channel) = server_and_channel().await;
    let policy = policy(2, HEDGE_DELAY);
    let service = hedged(
        GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo"]),
        &channel,
    );

    let script = "sleep=200 | ok";
    let started = Instant::now();
    let reply = say(service, request(script), SAY).await.unwrap();
    let took = started.elapsed();

    assert_eq!(reply.attempt, 1, "the hedge answered");
    assert_eq!(reply.payload_len, 7, "the hedge carried the whole message");
    assert_eq!(attempts(&server.seen(script)), [0, 1]);
    assert!(took < Duration::from_millis(150), "not the stall: {took:?}");
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn unnamed_methods_are_sent_once() {
    let (server, channel) = server_and_channel().await;
    let policy = policy(2, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo/Say"]);
    let script = "sleep=200 | ok";

    let reply = say(hedged(layer, &channel), request(script), OTHER)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 0);
    assert_eq!(attempts(&server.seen(script)), [0]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn no_methods_named_hedges_nothing() {
    let (server, channel) = server_and_channel().await;
    let policy = policy(2, HEDGE_DELAY);
    let script = "sleep=200 | ok";

    let reply = say(
        hedged(GrpcHedgeLayer::new(policy), &channel),
        request(script),
        SAY,
    )
    .await;

    assert_eq!(reply.unwrap().attempt, 0);
    assert_eq!(attempts(&server.seen(script)), [0]);
}

#[tokio::test]
async fn all_methods_hedges_every_method() {
    let (server, channel) = server_and_channel().await;
    let layer = GrpcHedgeLayer::new(policy(2, HEDGE_DELAY)).all_methods();
    let script = "sleep=200 | ok";

    let reply = say(hedged(layer, &channel), request(script), OTHER)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 1);
    assert_eq!(attempts(&server.seen(script)), [0, 1]);
}

#[tokio::test]
async fn no_hedge_extension_sends_the_call_once() {
    let (server, channel) = server_and_channel().await;
    let layer = GrpcHedgeLayer::new(policy(2, HEDGE_DELAY)).all_methods();
    let script = "sleep=200 | ok";
    let mut call = request(script);
    call.extensions_mut().insert(NoHedge);

    let reply = say(hedged(layer, &channel), call, SAY).await.unwrap();

    assert_eq!(reply.attempt, 0);
    assert_eq!(attempts(&server.seen(script)), [0]);
}

#[tokio::test]
async fn trailers_only_unavailable_starts_the_next_copy_at_once() {
    let (server, channel) = server_and_channel().await;
    // A delay no test waits out: only the failure can start the second copy.
    let policy = policy(2, Duration::from_secs(30));
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "status=14 | ok";

    let started = Instant::now();
    let reply = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 1, "the retry answered");
    assert_eq!(attempts(&server.seen(script)), [0, 1]);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(policy.stats().hedges, 1);
}

#[tokio::test]
async fn unavailable_starts_the_next_copy_at_once_while_others_run() {
    let (server, channel) = server_and_channel().await;
    // Copy 1 fails while copy 0 stalls: copy 2 starts at once, not a delay later,
    // whatever the policy's `replace_failed` (false here).
    let delay = Duration::from_millis(300);
    let layer = GrpcHedgeLayer::new(policy(3, delay)).all_methods();
    let script = "sleep=5000 | status=14 | ok";

    let reply = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 2);
    let seen = server.seen(script);
    assert_eq!(attempts(&seen), [0, 1, 2]);
    let gap = seen[2].at - seen[1].at;
    assert!(
        gap < Duration::from_millis(200),
        "copy 2 followed the failure at once: {gap:?}"
    );
}

#[tokio::test]
async fn pushback_holds_the_next_copy() {
    let (server, channel) = server_and_channel().await;
    let policy = policy(2, Duration::from_secs(30));
    let layer = GrpcHedgeLayer::new(policy).all_methods();
    let script = "status=14;pushback=300 | ok";

    let reply = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 1);
    let seen = server.seen(script);
    assert_eq!(attempts(&seen), [0, 1]);
    let gap = seen[1].at - seen[0].at;
    assert!(
        gap >= Duration::from_millis(280),
        "held for the pushback: {gap:?}"
    );
    assert!(
        gap < Duration::from_secs(10),
        "not the 30 s hedge delay: {gap:?}"
    );
}

#[tokio::test]
async fn negative_pushback_stops_further_copies() {
    let (server, channel) = server_and_channel().await;
    let policy = policy(3, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    // Copy 1 asks for no more copies; copy 0, in flight, still answers.
    let script = "sleep=300 | status=14;pushback=-1 | ok";

    let reply = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 0, "the copy in flight kept racing");
    // The call is over and dropped every copy: no third one can start any more.
    assert_eq!(policy.stats().hedges, 1);
    assert_eq!(attempts(&server.seen(script)), [0, 1]);
}

#[tokio::test]
async fn malformed_pushback_stops_further_copies() {
    let (server, channel) = server_and_channel().await;
    let layer = GrpcHedgeLayer::new(policy(3, Duration::from_secs(30))).all_methods();
    let script = "status=14;pushback=soon | ok";

    let status = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap_err();

    assert_eq!(
        status.code(),
        Code::Unavailable,
        "the only copy's failure is returned"
    );
    assert_eq!(attempts(&server.seen(script)), [0]);
}

#[tokio::test]
async fn a_fatal_code_ends_the_call_without_a_hedge() {
    let (server, channel) = server_and_channel().await;
    let policy = policy(3, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "status=3 | ok"; // INVALID_ARGUMENT

    let status = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap_err();

    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(policy.stats().hedges, 0);
    assert_eq!(attempts(&server.seen(script)), [0]);
}

#[tokio::test]
async fn a_fatal_code_from_a_hedge_ends_the_call_at_once() {
    let (server, channel) = server_and_channel().await;
    let layer = GrpcHedgeLayer::new(policy(3, HEDGE_DELAY)).all_methods();
    let script = "sleep=2000 | status=9 | ok"; // FAILED_PRECONDITION

    let started = Instant::now();
    let status = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap_err();

    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the stalled original was dropped"
    );
    assert_eq!(attempts(&server.seen(script)), [0, 1]);
}

#[tokio::test]
async fn non_fatal_codes_replace_the_default() {
    let (server, channel) = server_and_channel().await;
    let layer = GrpcHedgeLayer::new(policy(2, Duration::from_secs(30)))
        .all_methods()
        .non_fatal_codes([Code::Internal as i32]);
    let script = "status=13 | ok";

    let reply = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 1);
    assert_eq!(attempts(&server.seen(script)), [0, 1]);
}

#[tokio::test]
async fn a_body_over_the_cap_is_sent_once() {
    let (server, channel) = server_and_channel().await;
    let policy = policy(2, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone())
        .all_methods()
        .max_replay_bytes(1024);
    let script = "sleep=200 | ok";
    let mut call = request(script);
    call.get_mut().payload = vec![7; 4096];

    let reply = say(hedged(layer, &channel), call, SAY).await.unwrap();

    assert_eq!(
        (reply.attempt, reply.payload_len),
        (0, 4096),
        "every byte, once"
    );
    assert_eq!(attempts(&server.seen(script)), [0]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn every_copy_after_the_first_carries_previous_attempts() {
    let (server, channel) = server_and_channel().await;
    let layer = GrpcHedgeLayer::new(policy(4, HEDGE_DELAY)).all_methods();
    let script = "sleep=300 | sleep=300 | sleep=300 | ok";

    let reply = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap();

    // The server reads `grpc-previous-rpc-attempts` for the attempt: absent, 1, 2, 3.
    assert_eq!(reply.attempt, 3);
    assert_eq!(attempts(&server.seen(script)), [0, 1, 2, 3]);
}

#[tokio::test]
async fn grpc_timeout_is_reduced_by_each_copy_start() {
    let (server, channel) = server_and_channel().await;
    let layer = GrpcHedgeLayer::new(policy(2, Duration::from_millis(100))).all_methods();
    let script = "sleep=300 | ok";
    let mut call = request(script);
    call.set_timeout(Duration::from_secs(10));

    say(hedged(layer, &channel), call, SAY).await.unwrap();

    let seen = server.seen(script);
    assert_eq!(attempts(&seen), [0, 1]);
    let timeout = |s: &loopback::Seen| {
        let value = s.grpc_timeout.as_deref().expect("a grpc-timeout header");
        parse_grpc_timeout(value)
    };
    let (original, hedge) = (timeout(&seen[0]), timeout(&seen[1]));
    assert_eq!(original, Duration::from_secs(10));
    assert!(
        hedge <= original - Duration::from_millis(100),
        "reduced: {hedge:?}"
    );
    assert!(
        hedge > original - Duration::from_secs(2),
        "by the copy's start only: {hedge:?}"
    );
}

#[tokio::test]
async fn at_most_five_copies() {
    let (server, channel) = server_and_channel().await;
    let policy = Policy::builder()
        .max_copies(8)
        .parallel()
        .timer(TokioTimer::new())
        .build();
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "sleep=200 | sleep=200 | sleep=200 | sleep=200 | sleep=200 | ok";

    let reply = say(hedged(layer, &channel), request(script), SAY)
        .await
        .unwrap();

    assert!(reply.attempt < 5, "copy 5 never started");
    assert_eq!(attempts(&server.seen(script)), [0, 1, 2, 3, 4]);
    assert_eq!(policy.stats().hedges, 4);
}

#[tokio::test]
async fn a_pushback_on_the_fifth_attempt_of_a_policy_above_the_cap_returns_at_once() {
    let (server, channel) = server_and_channel().await;
    // A6's cap, not the policy's 8, is the last copy: its pushback has nothing to hold.
    let policy = policy(8, Duration::from_secs(30));
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "status=14 | status=14 | status=14 | status=14 | status=14;pushback=2147483647";

    let call = say(hedged(layer, &channel), request(script), SAY);
    let status = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call waited out a pushback no copy can follow")
        .unwrap_err();

    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(attempts(&server.seen(script)), [0, 1, 2, 3, 4]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.failures), (1, 4, 1));
}

/// Test-side reading of `grpc-timeout` (the crate's own is private).
fn parse_grpc_timeout(value: &str) -> Duration {
    let (digits, unit) = value.split_at(value.len() - 1);
    let count: u64 = digits.parse().unwrap();
    match unit {
        "H" => Duration::from_secs(count * 3600),
        "M" => Duration::from_secs(count * 60),
        "S" => Duration::from_secs(count),
        "m" => Duration::from_millis(count),
        "u" => Duration::from_micros(count),
        "n" => Duration::from_nanos(count),
        other => panic!("unit {other}"),
    }
}
