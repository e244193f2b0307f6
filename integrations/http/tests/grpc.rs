//! `GrpcHedgeLayer` in front of a tonic `Channel`, against a real tonic server on
//! loopback. Every scenario is counted from the server's side: the copies it saw, in
//! order, on the policy's virtual clock, which moves only when a test advances it; no
//! test waits for time, and one smoke test runs on the real clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hedging::timer::{ManualTimer, TokioTimer};
use hedging::Policy;
use hedging_http::grpc::{GrpcHedge, GrpcHedgeLayer};
use hedging_http::{NoHedge, ReplayBody};
use hedging_test_server::grpc::{attempt, request, say, scripted, Server, OTHER, SAY};
use hedging_test_server::{until, Arrival, Probe};
use tonic::transport::Channel;
use tonic::Code;
use tower::util::MapRequest;
use tower::ServiceBuilder;

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

/// A scripted server stamping arrivals with `clock`, and a channel to it.
async fn server_and_channel(clock: &ManualTimer) -> (Server, Channel) {
    let now = clock.clone();
    let server = Server::start_with_clock(scripted(), Arc::new(move || now.now()))
        .await
        .unwrap();
    let channel = server.channel().await.unwrap();
    (server, channel)
}

fn call(script: &str) -> tonic::Request<hedging_test_server::grpc::EchoRequest> {
    request(script, b"payload")
}

/// The body map that puts a hedging layer in front of a tonic `Channel`.
type IntoTonicBody =
    fn(http::Request<ReplayBody<tonic::body::Body>>) -> http::Request<tonic::body::Body>;

fn into_tonic_body(
    request: http::Request<ReplayBody<tonic::body::Body>>,
) -> http::Request<tonic::body::Body> {
    request.map(tonic::body::Body::new)
}

/// What the tests put in front of a channel: the layer, then the body map.
type Hedged<T, S = Channel> = GrpcHedge<MapRequest<S, IntoTonicBody>, T>;

/// The hedged stack: the layer, the body map, the channel.
fn hedged<T, S>(layer: GrpcHedgeLayer<T>, channel: S) -> Hedged<T, S> {
    ServiceBuilder::new()
        .layer(layer)
        .map_request(into_tonic_body as IntoTonicBody)
        .service(channel)
}

fn attempts(seen: &[Arrival]) -> Vec<usize> {
    seen.iter().map(attempt).collect()
}

#[tokio::test]
async fn hedged_unary_call_returns_in_about_the_hedge_delay() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let service = hedged(
        GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo"]),
        channel,
    );

    let script = "hold | ok";
    let reply = tokio::spawn(say(service, call(script), SAY));
    server.until_arrived(script, 1).await;
    clock.advance(HEDGE_DELAY);
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 1, "the hedge answered");
    assert_eq!(reply.payload_len, 7, "the hedge carried the whole message");
    let seen = server.arrivals(script);
    assert_eq!(attempts(&seen), [0, 1]);
    assert_eq!(seen[1].at, HEDGE_DELAY, "the hedge went out at its delay");
    server.until_dropped(1).await; // the held original, reset
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_hedge_overtakes_a_stall_on_the_real_clock() {
    let server = Server::start(scripted()).await.unwrap();
    let channel = server.channel().await.unwrap();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(HEDGE_DELAY)
        .timer(TokioTimer::new())
        .build();
    let service = hedged(GrpcHedgeLayer::new(policy.clone()).all_methods(), channel);

    let script = "sleep=10000 | ok";
    let started = Instant::now();
    let reply = say(service, call(script), SAY).await.unwrap();
    let took = started.elapsed();

    assert_eq!(reply.attempt, 1, "the hedge answered");
    assert!(
        took < Duration::from_secs(5),
        "not the 10 s stall: {took:?}"
    );
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn unnamed_methods_are_sent_once() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo/Say"]);
    let script = "hold | ok";

    let reply = tokio::spawn(say(hedged(layer, channel), call(script), OTHER));
    server.until_arrived(script, 1).await;
    clock.advance(NEVER);
    server.release(script);
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 0);
    assert_eq!(attempts(&server.arrivals(script)), [0]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
    assert_eq!(clock.sleeps_created(), 0, "no hedge could go out");
}

#[tokio::test]
async fn no_methods_named_hedges_nothing() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let script = "hold | ok";

    let layer = GrpcHedgeLayer::new(policy);
    let reply = tokio::spawn(say(hedged(layer, channel), call(script), SAY));
    server.until_arrived(script, 1).await;
    clock.advance(NEVER);
    server.release(script);
    let reply = reply.await.unwrap();

    assert_eq!(reply.unwrap().attempt, 0);
    assert_eq!(attempts(&server.arrivals(script)), [0]);
    assert_eq!(clock.sleeps_created(), 0);
}

#[tokio::test]
async fn all_methods_hedges_every_method() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let layer = GrpcHedgeLayer::new(policy(&clock, 2, HEDGE_DELAY)).all_methods();
    let script = "hold | ok";

    let reply = tokio::spawn(say(hedged(layer, channel), call(script), OTHER));
    server.until_arrived(script, 1).await;
    clock.advance(HEDGE_DELAY);
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 1);
    assert_eq!(attempts(&server.arrivals(script)), [0, 1]);
}

#[tokio::test]
async fn no_hedge_extension_sends_the_call_once() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let layer = GrpcHedgeLayer::new(policy(&clock, 2, HEDGE_DELAY)).all_methods();
    let script = "hold | ok";
    let mut request = call(script);
    request.extensions_mut().insert(NoHedge);

    let reply = tokio::spawn(say(hedged(layer, channel), request, SAY));
    server.until_arrived(script, 1).await;
    clock.advance(NEVER);
    server.release(script);
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 0);
    assert_eq!(attempts(&server.arrivals(script)), [0]);
    assert_eq!(clock.sleeps_created(), 0);
}

#[tokio::test]
async fn trailers_only_unavailable_starts_the_next_copy_at_once() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = policy(&clock, 2, NEVER);
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "status=14 | ok";

    let reply = say(hedged(layer, channel), call(script), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 1, "the retry answered");
    let seen = server.arrivals(script);
    assert_eq!(attempts(&seen), [0, 1]);
    assert_eq!(
        seen[1].at,
        Duration::ZERO,
        "no time passed: the failure started it"
    );
    assert_eq!(policy.stats().hedges, 1);
}

#[tokio::test]
async fn unavailable_starts_the_next_copy_at_once_while_others_run() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    // Copy 1 fails while copy 0 stalls: copy 2 starts at once, not a delay later,
    // whatever the policy's `replace_failed` (false here).
    let delay = Duration::from_millis(300);
    let layer = GrpcHedgeLayer::new(policy(&clock, 3, delay)).all_methods();
    let script = "hold | status=14 | ok";

    let reply = tokio::spawn(say(hedged(layer, channel), call(script), SAY));
    server.until_arrived(script, 1).await;
    clock.advance(delay);
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 2);
    let seen = server.arrivals(script);
    assert_eq!(attempts(&seen), [0, 1, 2]);
    assert_eq!(
        seen[2].at, seen[1].at,
        "copy 2 followed the failure at once"
    );
}

#[tokio::test]
async fn pushback_holds_the_next_copy() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let layer = GrpcHedgeLayer::new(policy(&clock, 2, NEVER)).all_methods();
    let script = "status=14;pushback=300 | ok";
    let pushback = Duration::from_millis(300);

    let reply = tokio::spawn(say(hedged(layer, channel), call(script), SAY));
    let next_due = || clock.next_deadline() == Some(pushback);
    until(next_due, "holding the next copy for the pushback").await;
    clock.advance(pushback - Duration::from_millis(1));
    assert_eq!(server.requests(), 1, "held for the pushback");
    clock.advance(Duration::from_millis(1));
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 1);
    let seen = server.arrivals(script);
    assert_eq!(attempts(&seen), [0, 1]);
    assert_eq!(seen[1].at - seen[0].at, pushback, "not the hedge delay");
}

#[tokio::test]
async fn negative_pushback_stops_further_copies() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = policy(&clock, 3, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    // Copy 1 asks for no more copies; copy 0, in flight, still answers.
    let script = "hold | status=14;pushback=-1 | ok";
    let probe = Probe::new(channel);
    let answers = probe.handle();

    let reply = tokio::spawn(say(hedged(layer, probe), call(script), SAY));
    server.until_arrived(script, 1).await;
    clock.advance(HEDGE_DELAY);
    answers.until_answered(1).await; // the race has read copy 1's pushback
    clock.advance(NEVER); // copy 2 was due at 40 ms
    server.release(script);
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 0, "the copy in flight kept racing");
    assert_eq!(policy.stats().hedges, 1);
    assert_eq!(attempts(&server.arrivals(script)), [0, 1]);
}

#[tokio::test]
async fn malformed_pushback_stops_further_copies() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let layer = GrpcHedgeLayer::new(policy(&clock, 3, NEVER)).all_methods();
    let script = "status=14;pushback=soon | ok";

    let status = say(hedged(layer, channel), call(script), SAY)
        .await
        .unwrap_err();

    assert_eq!(
        status.code(),
        Code::Unavailable,
        "the only copy's failure is returned"
    );
    assert_eq!(attempts(&server.arrivals(script)), [0]);
}

#[tokio::test]
async fn a_fatal_code_ends_the_call_without_a_hedge() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = policy(&clock, 3, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "status=3 | ok"; // INVALID_ARGUMENT

    let status = say(hedged(layer, channel), call(script), SAY)
        .await
        .unwrap_err();

    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(policy.stats().hedges, 0);
    assert_eq!(attempts(&server.arrivals(script)), [0]);
}

#[tokio::test]
async fn a_fatal_code_from_a_hedge_ends_the_call_at_once() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let layer = GrpcHedgeLayer::new(policy(&clock, 3, HEDGE_DELAY)).all_methods();
    let script = "hold | status=9 | ok"; // FAILED_PRECONDITION

    let status = tokio::spawn(say(hedged(layer, channel), call(script), SAY));
    server.until_arrived(script, 1).await;
    clock.advance(HEDGE_DELAY);
    let status = status.await.unwrap().unwrap_err();

    assert_eq!(status.code(), Code::FailedPrecondition);
    server.until_dropped(1).await; // the stalled original, never released
    assert_eq!(attempts(&server.arrivals(script)), [0, 1]);
}

#[tokio::test]
async fn non_fatal_codes_replace_the_default() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let layer = GrpcHedgeLayer::new(policy(&clock, 2, NEVER))
        .all_methods()
        .non_fatal_codes([Code::Internal as i32]);
    let script = "status=13 | ok";

    let reply = say(hedged(layer, channel), call(script), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 1);
    assert_eq!(attempts(&server.arrivals(script)), [0, 1]);
}

#[tokio::test]
async fn a_body_over_the_cap_is_sent_once() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = policy(&clock, 2, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone())
        .all_methods()
        .max_replay_bytes(1024);
    let script = "hold | ok";

    let reply = tokio::spawn(say(
        hedged(layer, channel),
        request(script, &[7; 4096]),
        SAY,
    ));
    server.until_arrived(script, 1).await;
    clock.advance(NEVER);
    server.release(script);
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(
        (reply.attempt, reply.payload_len),
        (0, 4096),
        "every byte, once"
    );
    assert_eq!(attempts(&server.arrivals(script)), [0]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn every_copy_after_the_first_carries_previous_attempts() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let layer = GrpcHedgeLayer::new(policy(&clock, 4, HEDGE_DELAY)).all_methods();
    let script = "hold | hold | hold | ok";

    let reply = tokio::spawn(say(hedged(layer, channel), call(script), SAY));
    for copies in 1..=3 {
        server.until_arrived(script, copies).await;
        clock.advance(HEDGE_DELAY);
    }
    let reply = reply.await.unwrap().unwrap();

    // The server reads `grpc-previous-rpc-attempts` for the attempt: absent, 1, 2, 3.
    assert_eq!(reply.attempt, 3);
    assert_eq!(attempts(&server.arrivals(script)), [0, 1, 2, 3]);
}

#[tokio::test]
async fn grpc_timeout_is_reduced_by_each_copy_start() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let delay = Duration::from_millis(100);
    let layer = GrpcHedgeLayer::new(policy(&clock, 2, delay)).all_methods();
    let script = "hold | ok";
    let mut request = call(script);
    request.set_timeout(Duration::from_secs(10));

    let reply = tokio::spawn(say(hedged(layer, channel), request, SAY));
    server.until_arrived(script, 1).await;
    clock.advance(delay);
    reply.await.unwrap().unwrap();

    let seen = server.arrivals(script);
    assert_eq!(attempts(&seen), [0, 1]);
    let timeout =
        |s: &Arrival| parse_grpc_timeout(s.header("grpc-timeout").expect("a grpc-timeout"));
    let (original, hedge) = (timeout(&seen[0]), timeout(&seen[1]));
    assert_eq!(original, Duration::from_secs(10));
    assert_eq!(hedge, original - delay, "reduced by the copy's start");
}

#[tokio::test]
async fn at_most_five_copies() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    let policy = Policy::builder()
        .max_copies(8)
        .parallel()
        .timer(clock.clone())
        .build();
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "hold | hold | hold | hold | hold | ok";

    let reply = tokio::spawn(say(hedged(layer, channel), call(script), SAY));
    server.until_arrived(script, 5).await;
    clock.advance(NEVER);
    server.release(script);
    let reply = reply.await.unwrap().unwrap();

    assert!(reply.attempt < 5, "copy 5 never started");
    assert_eq!(attempts(&server.arrivals(script)), [0, 1, 2, 3, 4]);
    assert_eq!(policy.stats().hedges, 4);
}

#[tokio::test]
async fn a_pushback_on_the_fifth_attempt_of_a_policy_above_the_cap_returns_at_once() {
    let clock = ManualTimer::new();
    let (server, channel) = server_and_channel(&clock).await;
    // A6's cap, not the policy's 8, is the last copy: its pushback has nothing to hold.
    let policy = policy(&clock, 8, NEVER);
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let script = "status=14 | status=14 | status=14 | status=14 | status=14;pushback=2147483647";

    let status = say(hedged(layer, channel), call(script), SAY)
        .await
        .unwrap_err();

    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(clock.now(), Duration::ZERO, "nothing was waited out");
    assert_eq!(attempts(&server.arrivals(script)), [0, 1, 2, 3, 4]);
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
