//! `GrpcHedgeLayer` in front of a tonic `Channel`, against a real tonic server on
//! loopback. Every scenario is counted from the server's side: the copies it saw, in
//! order, on the policy's virtual clock, which moves only when a test advances it; no
//! test waits for time, and one smoke test runs on the real clock.

mod grpc_scene;

use std::time::Duration;

use grpc_scene::{echo, hedged, Scene, HEDGE_DELAY};
use hedging::Policy;
use hedging_http::grpc::{GrpcHedgeLayer, MethodNameFault};
use hedging_http::NoHedge;
use hedging_test_server::grpc::{request, say, scripted, OTHER, SAY};
use hedging_test_server::{overtakes_the_stall, real_clock, tokio_policy};
use hedging_test_server::{Arrival, Probe, Server, NEVER};
use tonic::Code;
use tower::{Service, ServiceExt};

#[tokio::test]
async fn hedged_unary_call_returns_in_about_the_hedge_delay() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let Scene { clock, server, .. } = &scene;
    let script = "hold | ok";

    let layer = GrpcHedgeLayer::new(scene.policy.clone()).methods(["test.Echo"]);
    let reply = scene.call(layer, echo(script), SAY);
    clock.hedge(server, script, 1, HEDGE_DELAY).await;
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 1, "the hedge answered");
    assert_eq!(reply.payload_len, 7, "the hedge carried the whole message");
    assert_eq!(scene.attempts(script), [0, 1]);
    assert_eq!(server.arrivals(script)[1].at, HEDGE_DELAY, "at its delay");
    server.until_dropped(1).await; // the held original, reset
    let stats = scene.policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_hedge_overtakes_a_stall_on_the_real_clock() {
    let server = Server::grpc(scripted(), real_clock()).await.unwrap();
    let policy = tokio_policy(HEDGE_DELAY);

    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();
    let service = hedged(layer, server.channel().await.unwrap());
    let reply = overtakes_the_stall(say(service, echo("sleep=10000 | ok"), SAY)).await;

    assert_eq!(reply.unwrap().attempt, 1, "the hedge answered");
    assert_eq!(policy.stats().hedge_wins, 1);
}

/// Asserts `scene`'s policy counted `out_of_scope` calls it passed through and no call.
fn assert_out_of_scope(scene: &Scene, out_of_scope: u64) {
    let stats = scene.policy.stats();
    let counted = (stats.calls, stats.hedges, stats.out_of_scope);
    assert_eq!(counted, (0, 0, out_of_scope), "not calls: out of scope");
}

#[tokio::test]
async fn unnamed_methods_are_sent_once_and_counted_out_of_scope() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = GrpcHedgeLayer::new(scene.policy.clone()).methods(["test.Echo/Say"]);

    scene
        .assert_sent_once(layer, echo("hold | ok"), OTHER)
        .await;

    assert_out_of_scope(&scene, 1);
}

#[tokio::test]
async fn a_layer_without_methods_hedges_nothing_and_counts_out_of_scope() {
    let scene = Scene::new(2, HEDGE_DELAY).await;

    let layer = GrpcHedgeLayer::new(scene.policy.clone());
    scene.assert_sent_once(layer, echo("hold | ok"), SAY).await;

    assert_out_of_scope(&scene, 1);
}

#[tokio::test]
async fn a_name_in_the_wrong_case_matches_nothing_and_counts_out_of_scope() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    // The method is `Say`, and the service `test.Echo`: A6 names are case-sensitive.
    let layer = GrpcHedgeLayer::new(scene.policy.clone()).methods(["test.Echo/say", "test.echo"]);

    scene.assert_sent_once(layer, echo("hold | ok"), SAY).await;

    assert_out_of_scope(&scene, 1);
}

#[tokio::test]
async fn an_out_of_scope_call_is_the_inner_services_own_future() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = GrpcHedgeLayer::new(scene.policy.clone()).methods(["test.Echo/Say"]);
    let mut service = hedged(layer, scene.channel.clone());
    let call = |path: &str| {
        let body = tonic::body::Body::empty();
        http::Request::post(path).body(body).unwrap()
    };

    let direct = service.ready().await.unwrap().call(call(OTHER));
    let raced = service.ready().await.unwrap().call(call(SAY));

    assert_eq!(format!("{direct:?}"), "ResponseFuture::Direct", "no race");
    assert!(format!("{raced:?}").starts_with("ResponseFuture::Hedged"));
    let stats = scene.policy.stats();
    assert_eq!(
        (stats.out_of_scope, stats.calls),
        (1, 0),
        "raced is not done"
    );
}

#[test]
fn each_malformed_name_is_refused_with_its_message() {
    let refused = |name: &str| {
        let policy = Policy::builder()
            .timer(hedging::timer::ManualTimer::new())
            .build();
        let layer = GrpcHedgeLayer::new(policy).try_methods(["test.Echo", name]);
        let error = layer.expect_err(name);
        assert_eq!(error.name(), name);
        (error.fault(), error.to_string())
    };
    let message = |fault: MethodNameFault, text: &str| (fault, text.to_owned());

    assert_eq!(
        refused("/kv.Store/Get"),
        message(
            MethodNameFault::LeadingSlash,
            r#"gRPC method name "/kv.Store/Get" starts with '/': A6 names have none, as in "kv.Store/Get""#
        )
    );
    assert_eq!(
        refused("kv.Store/"),
        message(
            MethodNameFault::EmptyMethod,
            r#"gRPC method name "kv.Store/" has no method after its '/': name the service alone, "kv.Store", for every method of it"#
        )
    );
    assert_eq!(
        refused("kv/Store/Get"),
        message(
            MethodNameFault::TooManySlashes,
            r#"gRPC method name "kv/Store/Get" has more than one '/': A6 names are "package.Service" or "package.Service/Method""#
        )
    );
    assert_eq!(
        refused(""),
        message(
            MethodNameFault::Empty,
            r#"gRPC method name "" is empty: name a service ("package.Service") or one of its methods ("package.Service/Method")"#
        )
    );
    assert_eq!(
        refused("kv.Store "),
        message(
            MethodNameFault::Whitespace,
            r#"gRPC method name "kv.Store " holds whitespace or a control character, which no request path carries"#
        )
    );
}

#[test]
#[should_panic(expected = r#"gRPC method name "/kv.Store/Get" starts with '/'"#)]
fn a_malformed_name_in_code_panics_with_its_message() {
    let policy = Policy::builder()
        .timer(hedging::timer::ManualTimer::new())
        .build();
    let _ = GrpcHedgeLayer::new(policy).methods(["/kv.Store/Get"]);
}

#[tokio::test]
async fn all_methods_hedges_every_method() {
    let scene = Scene::new(2, HEDGE_DELAY).await;

    let reply = scene.call(scene.every_method(), echo("hold | ok"), OTHER);
    scene
        .clock
        .hedge(&scene.server, "hold | ok", 1, HEDGE_DELAY)
        .await;

    assert_eq!(reply.await.unwrap().unwrap().attempt, 1);
    assert_eq!(scene.attempts("hold | ok"), [0, 1]);
}

#[tokio::test]
async fn no_hedge_extension_sends_the_call_once_and_counts_it_out_of_scope() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let mut request = echo("hold | ok");
    request.extensions_mut().insert(NoHedge);

    scene
        .assert_sent_once(scene.every_method(), request, SAY)
        .await;

    assert_out_of_scope(&scene, 1);
}

#[tokio::test]
async fn trailers_only_unavailable_starts_the_next_copy_at_once() {
    let scene = Scene::new(2, NEVER).await;

    let reply = scene.say("status=14 | ok").await.unwrap().unwrap();

    assert_eq!(reply.attempt, 1, "the retry answered");
    assert_eq!(scene.attempts("status=14 | ok"), [0, 1]);
    let seen = scene.server.arrivals("status=14 | ok");
    assert_eq!(
        seen[1].at,
        Duration::ZERO,
        "no time passed: the failure started it"
    );
    assert_eq!(scene.policy.stats().hedges, 1);
}

#[tokio::test]
async fn unavailable_starts_the_next_copy_at_once_while_others_run() {
    // Copy 1 fails while copy 0 stalls: copy 2 starts at once, not a delay later,
    // whatever the policy's `replace_failed` (false here).
    let delay = Duration::from_millis(300);
    let scene = Scene::new(3, delay).await;
    let script = "hold | status=14 | ok";

    let reply = scene.say(script);
    scene.clock.hedge(&scene.server, script, 1, delay).await;

    assert_eq!(reply.await.unwrap().unwrap().attempt, 2);
    assert_eq!(scene.attempts(script), [0, 1, 2]);
    let seen = scene.server.arrivals(script);
    assert_eq!(
        seen[2].at, seen[1].at,
        "copy 2 followed the failure at once"
    );
}

#[tokio::test]
async fn pushback_holds_the_next_copy() {
    let scene = Scene::new(2, NEVER).await;
    let Scene { clock, server, .. } = &scene;
    let script = "status=14;pushback=300 | ok";

    let reply = scene.say(script);
    let pushback = clock.held_for(NEVER).await;
    assert_eq!(pushback, Duration::from_millis(300));
    clock.advance(pushback - Duration::from_millis(1));
    assert_eq!(server.requests(), 1, "held for the pushback");
    clock.advance(Duration::from_millis(1));

    assert_eq!(reply.await.unwrap().unwrap().attempt, 1);
    assert_eq!(scene.attempts(script), [0, 1]);
    let seen = server.arrivals(script);
    assert_eq!(seen[1].at - seen[0].at, pushback, "not the hedge delay");
}

#[tokio::test]
async fn negative_pushback_stops_further_copies() {
    let scene = Scene::new(3, HEDGE_DELAY).await;
    let Scene { clock, server, .. } = &scene;
    // Copy 1 asks for no more copies; copy 0, in flight, still answers.
    let script = "hold | status=14;pushback=-1 | ok";
    let probe = Probe::new(scene.channel.clone());
    let answers = probe.handle();

    let reply = tokio::spawn(say(hedged(scene.every_method(), probe), echo(script), SAY));
    clock.hedge(server, script, 1, HEDGE_DELAY).await;
    answers.until_answered(1).await; // the race has read copy 1's pushback
    clock.advance(NEVER); // copy 2 was due at 40 ms
    server.release(script);

    let reply = reply.await.unwrap().unwrap();
    assert_eq!(reply.attempt, 0, "the copy in flight kept racing");
    assert_eq!(scene.policy.stats().hedges, 1);
    assert_eq!(scene.attempts(script), [0, 1]);
}

#[tokio::test]
async fn malformed_pushback_stops_further_copies() {
    let scene = Scene::new(3, NEVER).await;

    let status = scene
        .say("status=14;pushback=soon | ok")
        .await
        .unwrap()
        .unwrap_err();

    assert_eq!(status.code(), Code::Unavailable, "the only copy's failure");
    assert_eq!(scene.attempts("status=14;pushback=soon | ok"), [0]);
}

#[tokio::test]
async fn a_fatal_code_ends_the_call_without_a_hedge() {
    let scene = Scene::new(3, HEDGE_DELAY).await;
    let script = "status=3 | ok"; // INVALID_ARGUMENT

    let status = scene.say(script).await.unwrap().unwrap_err();

    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(scene.policy.stats().hedges, 0);
    assert_eq!(scene.attempts(script), [0]);
}

#[tokio::test]
async fn a_fatal_code_from_a_hedge_ends_the_call_at_once() {
    let scene = Scene::new(3, HEDGE_DELAY).await;
    let script = "hold | status=9 | ok"; // FAILED_PRECONDITION

    let status = scene.say(script);
    scene
        .clock
        .hedge(&scene.server, script, 1, HEDGE_DELAY)
        .await;

    let status = status.await.unwrap().unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    scene.server.until_dropped(1).await; // the stalled original, never released
    assert_eq!(scene.attempts(script), [0, 1]);
}

#[tokio::test]
async fn non_fatal_codes_replace_the_default() {
    let scene = Scene::new(2, NEVER).await;
    let layer = scene
        .every_method()
        .non_fatal_codes([Code::Internal as i32]);

    let reply = scene.call(layer, echo("status=13 | ok"), SAY);

    assert_eq!(reply.await.unwrap().unwrap().attempt, 1);
    assert_eq!(scene.attempts("status=13 | ok"), [0, 1]);
}

#[tokio::test]
async fn a_body_over_the_cap_is_sent_once() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let layer = scene.every_method().max_replay_bytes(1024);

    let reply = scene.assert_sent_once(layer, request("hold | ok", &[7; 4096]), SAY);

    assert_eq!(reply.await.payload_len, 4096, "every byte, once");
    let stats = scene.policy.stats();
    assert_eq!((stats.calls, stats.hedges), (1, 0), "counted, not hedged");
}

#[tokio::test]
async fn every_copy_after_the_first_carries_previous_attempts() {
    let scene = Scene::new(4, HEDGE_DELAY).await;
    let script = "hold | hold | hold | ok";

    let reply = scene.say(script);
    for copies in 1..=3 {
        scene
            .clock
            .hedge(&scene.server, script, copies, HEDGE_DELAY)
            .await;
    }

    // The server reads `grpc-previous-rpc-attempts` for the attempt: absent, 1, 2, 3.
    assert_eq!(reply.await.unwrap().unwrap().attempt, 3);
    assert_eq!(scene.attempts(script), [0, 1, 2, 3]);
}

#[tokio::test]
async fn grpc_timeout_is_reduced_by_each_copy_start() {
    let delay = Duration::from_millis(100);
    let scene = Scene::new(2, delay).await;
    let mut request = echo("hold | ok");
    request.set_timeout(Duration::from_secs(10));

    let reply = scene.call(scene.every_method(), request, SAY);
    scene
        .clock
        .hedge(&scene.server, "hold | ok", 1, delay)
        .await;
    reply.await.unwrap().unwrap();

    let seen = scene.server.arrivals("hold | ok");
    let timeout = |s: &Arrival| parse_grpc_timeout(s.header("grpc-timeout").expect("a timeout"));
    let (original, hedge) = (timeout(&seen[0]), timeout(&seen[1]));
    assert_eq!(original, Duration::from_secs(10));
    assert_eq!(hedge, original - delay, "reduced by the copy's start");
}

#[tokio::test]
async fn at_most_five_copies() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let policy = Policy::builder()
        .max_copies(8)
        .parallel()
        .timer(scene.clock.timer())
        .build();
    let script = "hold | hold | hold | hold | hold | ok";

    let reply = scene.call(
        GrpcHedgeLayer::new(policy.clone()).all_methods(),
        echo(script),
        SAY,
    );
    scene.server.until_arrived(script, 5).await;
    scene.clock.release(&scene.server, script).await;

    assert!(
        reply.await.unwrap().unwrap().attempt < 5,
        "copy 5 never started"
    );
    assert_eq!(scene.attempts(script), [0, 1, 2, 3, 4]);
    assert_eq!(policy.stats().hedges, 4);
}

#[tokio::test]
async fn a_pushback_on_the_fifth_attempt_of_a_policy_above_the_cap_returns_at_once() {
    // A6's cap, not the policy's 8, is the last copy: its pushback has nothing to hold.
    let scene = Scene::new(8, NEVER).await;
    let script = "status=14 | status=14 | status=14 | status=14 | status=14;pushback=2147483647";

    let status = scene.say(script).await.unwrap().unwrap_err();

    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(scene.clock.now(), Duration::ZERO, "nothing was waited out");
    assert_eq!(scene.attempts(script), [0, 1, 2, 3, 4]);
    let stats = scene.policy.stats();
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
