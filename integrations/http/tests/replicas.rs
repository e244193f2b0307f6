//! Copies sent to replicas: three real servers on loopback behind one layer, with a
//! `hedging::tower::Replicas` set (one tonic `Channel` per server; one `Origin` of a
//! hyper-util client per address). Copy k of a call reaches replica `(first + k) mod 3`,
//! `first` moving on per call; a stalled replica is rescued by the next; a refusing one is
//! skipped at once. Time is virtual; which copy reached which server is the servers' own
//! log.

mod grpc_scene;

use std::time::Duration;

use grpc_scene::echo;
use hedging::tower::Replicas;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::{HttpHedgeLayer, Origin};
use hedging_test_server::grpc::{attempt, say, SAY};
use hedging_test_server::http::{client, full, scripted, RequestBody};
use hedging_test_server::{always, refusing_address, Answer, Hold, Server, VirtualClock};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use tower::{Layer, ServiceExt};

const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// A GET for `path` to a host no replica is; `Origin` sends it to its own.
fn get(path: &str) -> Request<RequestBody> {
    Request::get(format!("http://replicated{path}"))
        .body(full(""))
        .unwrap()
}

/// When each server saw `path`, on the virtual clock: one entry per copy it was sent.
fn seen_at(servers: &[&Server], path: &str) -> Vec<Vec<Duration>> {
    servers
        .iter()
        .map(|server| server.arrived_at(path))
        .collect()
}

#[tokio::test]
async fn hyper_copy_k_reaches_origin_first_plus_k_and_the_next_call_starts_one_on() {
    let clock = VirtualClock::new();
    let mut servers = Vec::new();
    for _ in 0..3 {
        let holding = always(Answer::ok().hold(Hold::Released));
        servers.push(Server::http(holding, clock.clock()).await.unwrap());
    }
    let origins = servers.iter().map(|s| s.origin());
    let hedged = HttpHedgeLayer::new(clock.policy(3, HEDGE_DELAY))
        .layer(Origin::replicas(client(), origins).unwrap());

    // Call 1 starts on server 0, call 2 on server 1; each is answered by its third copy.
    for (call, path) in ["/first", "/second"].into_iter().enumerate() {
        let order: Vec<&Server> = (0..3).map(|k| &servers[(call + k) % 3]).collect();
        let response = tokio::spawn(hedged.clone().oneshot(get(path)));
        clock.hedge(order[0], path, 1, HEDGE_DELAY).await;
        clock.hedge(order[1], path, 1, HEDGE_DELAY).await;
        order[2].until_arrived(path, 1).await;
        order[2].release(path);
        let response = response.await.unwrap().unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.into_body().collect().await.unwrap();

        let start = clock.now() - 2 * HEDGE_DELAY;
        let expected = vec![
            vec![start],
            vec![start + HEDGE_DELAY],
            vec![start + 2 * HEDGE_DELAY],
        ];
        assert_eq!(
            seen_at(&order, path),
            expected,
            "call {call}: copy k on server first + k"
        );
    }
}

#[tokio::test]
async fn hyper_a_stalled_replica_is_rescued_by_the_next() {
    let clock = VirtualClock::new();
    let stalled = Server::http(always(Answer::ok().hold(Hold::Released)), clock.clock())
        .await
        .unwrap();
    let quick = Server::http(scripted(), clock.clock()).await.unwrap();
    let origins = [stalled.origin(), quick.origin()];
    let policy = clock.policy(2, HEDGE_DELAY);
    let hedged =
        HttpHedgeLayer::new(policy.clone()).layer(Origin::replicas(client(), origins).unwrap());

    let response = tokio::spawn(hedged.oneshot(get("/item")));
    clock.hedge(&stalled, "/item", 1, HEDGE_DELAY).await;
    let response = response.await.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();

    assert_eq!(
        body, "copy 0 of /item",
        "the only copy the quick replica saw"
    );
    assert_eq!(
        seen_at(&[&stalled, &quick], "/item"),
        [[Duration::ZERO], [HEDGE_DELAY]]
    );
    stalled.until_dropped(1).await;
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn hyper_a_refusing_replica_is_skipped_at_once() {
    let clock = VirtualClock::new();
    let quick = Server::http(scripted(), clock.clock()).await.unwrap();
    let other = Server::http(scripted(), clock.clock()).await.unwrap();
    let origins = [
        format!("http://{}", refusing_address()),
        quick.origin(),
        other.origin(),
    ];
    let policy = clock.policy(3, HEDGE_DELAY);
    let hedged =
        HttpHedgeLayer::new(policy.clone()).layer(Origin::replicas(client(), origins).unwrap());

    // No time passes: the refused copy fails, and the next starts at once.
    let response = hedged.oneshot(get("/item")).await.unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(clock.now(), Duration::ZERO);
    assert_eq!(
        seen_at(&[&quick, &other], "/item"),
        [vec![Duration::ZERO], vec![]]
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.hedge_wins), (1, 1, 1));
}

/// Three gRPC servers on one virtual clock, and a channel to each.
async fn grpc_servers(clock: &VirtualClock) -> (Vec<Server>, Replicas<tonic::transport::Channel>) {
    let mut servers = Vec::new();
    let mut channels = Vec::new();
    for _ in 0..3 {
        let server = Server::grpc(hedging_test_server::grpc::scripted(), clock.clock())
            .await
            .unwrap();
        channels.push(server.channel().await.unwrap());
        servers.push(server);
    }
    (servers, Replicas::new(channels))
}

/// The attempts of the call with `script` that reached each server.
fn attempts(servers: &[&Server], script: &str) -> Vec<Vec<usize>> {
    servers
        .iter()
        .map(|server| server.arrivals(script).iter().map(attempt).collect())
        .collect()
}

#[tokio::test]
async fn grpc_copy_k_reaches_channel_first_plus_k_and_the_next_call_starts_one_on() {
    let clock = VirtualClock::new();
    let (servers, replicas) = grpc_servers(&clock).await;
    let layer = GrpcHedgeLayer::new(clock.policy(3, HEDGE_DELAY)).all_methods();
    let stack = layer.for_tonic().layer(replicas);

    for (call, script) in ["hold | hold | ok", "hold | hold | ok;"]
        .into_iter()
        .enumerate()
    {
        let order: Vec<&Server> = (0..3).map(|k| &servers[(call + k) % 3]).collect();
        let reply = tokio::spawn(say(stack.clone(), echo(script), SAY));
        clock.hedge(order[0], script, 1, HEDGE_DELAY).await;
        clock.hedge(order[1], script, 1, HEDGE_DELAY).await;

        assert_eq!(
            reply.await.unwrap().unwrap().attempt,
            2,
            "the third copy won"
        );
        assert_eq!(
            attempts(&order, script),
            [[0], [1], [2]],
            "call {call}: attempt k on server first + k"
        );
    }
}

#[tokio::test]
async fn grpc_a_stalled_replica_is_rescued_by_the_next() {
    let clock = VirtualClock::new();
    let (servers, replicas) = grpc_servers(&clock).await;
    let layer = GrpcHedgeLayer::new(clock.policy(2, HEDGE_DELAY)).all_methods();

    let reply = tokio::spawn(say(
        layer.for_tonic().layer(replicas),
        echo("hold | ok"),
        SAY,
    ));
    clock.hedge(&servers[0], "hold | ok", 1, HEDGE_DELAY).await;

    assert_eq!(reply.await.unwrap().unwrap().attempt, 1, "the hedge won");
    let all: Vec<&Server> = servers.iter().collect();
    assert_eq!(attempts(&all, "hold | ok"), [vec![0], vec![1], vec![]]);
    servers[0].until_dropped(1).await;
}

#[tokio::test]
async fn grpc_a_refusing_replica_is_skipped_at_once() {
    let clock = VirtualClock::new();
    let quick = Server::grpc(hedging_test_server::grpc::scripted(), clock.clock())
        .await
        .unwrap();
    let refusing =
        tonic::transport::Endpoint::from_shared(format!("http://{}", refusing_address()))
            .unwrap()
            .connect_lazy();
    let replicas = Replicas::new([refusing, quick.channel().await.unwrap()]);
    let policy = clock.policy(2, HEDGE_DELAY);
    let layer = GrpcHedgeLayer::new(policy.clone()).all_methods();

    // No time passes: the refused copy fails as UNAVAILABLE, and the next starts at once.
    let reply = say(layer.for_tonic().layer(replicas), echo("ok"), SAY)
        .await
        .unwrap();

    assert_eq!(reply.attempt, 1, "the second copy answered");
    assert_eq!(clock.now(), Duration::ZERO);
    assert_eq!(attempts(&[&quick], "ok"), [[1]]);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_layer_over_replicas_of_one_origin_sends_every_copy_there() {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    let hedged = HttpHedgeLayer::new(clock.policy(2, HEDGE_DELAY))
        .layer(Origin::replicas(client(), [server.origin()]).unwrap());

    let request = server.request(Method::GET, "/one", "hold | ok", full(""));
    let mut request = request;
    *request.uri_mut() = "http://elsewhere/one".parse().unwrap();
    let response = tokio::spawn(hedged.oneshot(request));
    clock.hedge(&server, "/one", 1, HEDGE_DELAY).await;
    let body = response.await.unwrap().unwrap().into_body().collect().await;

    assert_eq!(body.unwrap().to_bytes(), "copy 1 of /one");
    assert_eq!(seen_at(&[&server], "/one"), [[Duration::ZERO, HEDGE_DELAY]]);
}
