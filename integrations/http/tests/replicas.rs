//! Copies sent to replicas: three real servers on loopback behind one layer, with a
//! `hedging::tower::Replicas` set (one tonic `Channel` per server; one `Origin` of a
//! hyper-util client per address). Copy k of a call reaches replica `(first + k) mod 3`,
//! `first` moving on per call; a stalled replica is rescued by the next; a refusing one is
//! skipped at once. Time is virtual; which copy reached which server is the servers' own
//! log.

mod common;
mod grpc_scene;

use std::time::Duration;

use common::{send, Response};
use grpc_scene::echo;
use hedging::tower::Replicas;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::{HttpHedgeLayer, Origin};
use hedging_test_server::grpc::{attempt, say, SAY};
use hedging_test_server::http::{client, full, scripted, RequestBody};
use hedging_test_server::replicas::{
    self, behind_a_refusing_replica, holding_servers, seen_at, stalled_and_quick, GetReplicated,
    DELAY,
};
use hedging_test_server::{refusing_address, Server, VirtualClock};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use tokio::task::JoinHandle;
use tower::{Layer, Service, ServiceExt};

/// The shared scenarios' delay.
const HEDGE_DELAY: Duration = DELAY;

/// A GET for `path` to a host no replica is; `Origin` sends it to its own.
fn get(path: &str) -> Request<RequestBody> {
    Request::get(format!("http://replicated{path}"))
        .body(full(""))
        .unwrap()
}

/// The layer over `Origin::replicas`, as the shared scenarios send through it.
struct Replicated<S>(S);

impl<S> GetReplicated for Replicated<S>
where
    S: Service<Request<RequestBody>, Response = Response> + Clone + Send + 'static,
    S::Error: std::fmt::Debug,
    S::Future: Send + 'static,
{
    fn get(&self, path_and_query: &str) -> JoinHandle<(StatusCode, String)> {
        let call = send(self.0.clone(), get(path_and_query));
        tokio::spawn(async move {
            let (status, body) = call.await.unwrap();
            (status, String::from_utf8(body.to_vec()).unwrap())
        })
    }
}

#[tokio::test]
async fn hyper_copy_k_reaches_origin_first_plus_k_and_the_next_call_starts_one_on() {
    let clock = VirtualClock::new();
    let servers = holding_servers(&clock).await;
    let origins = servers.iter().map(|s| s.origin());
    let hedged = HttpHedgeLayer::new(clock.policy(3, HEDGE_DELAY))
        .layer(Origin::replicas(client(), origins).unwrap());
    replicas::copy_k_reaches_first_plus_k(&clock, &servers, &Replicated(hedged), "", |_, _| {})
        .await;
}

#[tokio::test]
async fn hyper_a_stalled_replica_is_rescued_by_the_next() {
    let clock = VirtualClock::new();
    let (stalled, quick) = stalled_and_quick(&clock).await;
    let origins = [stalled.origin(), quick.origin()];
    let policy = clock.policy(2, HEDGE_DELAY);
    let hedged =
        HttpHedgeLayer::new(policy.clone()).layer(Origin::replicas(client(), origins).unwrap());
    let via = Replicated(hedged);
    replicas::a_stalled_replica_is_rescued(&clock, (&stalled, &quick), &policy, &via).await;
}

#[tokio::test]
async fn hyper_a_refusing_replica_is_skipped_at_once() {
    let clock = VirtualClock::new();
    let (quick, origins) = behind_a_refusing_replica(&clock).await;
    let policy = clock.policy(3, HEDGE_DELAY);
    let hedged =
        HttpHedgeLayer::new(policy.clone()).layer(Origin::replicas(client(), origins).unwrap());
    replicas::a_refusing_replica_is_skipped(&clock, &quick, &policy, &Replicated(hedged)).await;
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
