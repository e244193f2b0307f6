//! Feature `tonic`: `GrpcHedgeLayer::for_tonic()` straight in front of a tonic `Channel`,
//! no `map_request` between, against a real tonic server on loopback, on the policy's
//! virtual clock.

use std::time::Duration;

use hedging_http::grpc::tonic::TonicHedge;
use hedging_http::grpc::GrpcHedgeLayer;
use hedging_http::hedging::timer::ManualTimer;
use hedging_test_server::grpc::{attempt, request, say, scripted};
use hedging_test_server::grpc::{OTHER, SAY};
use hedging_test_server::{Server, VirtualClock};
use tonic::transport::Channel;
use tower::ServiceBuilder;

const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// A virtual clock, a scripted tonic server stamping arrivals with it, and a channel.
async fn stack() -> (VirtualClock, Server, Channel) {
    let clock = VirtualClock::new();
    let server = Server::grpc(scripted(), clock.clock()).await.unwrap();
    let channel = server.channel().await.unwrap();
    (clock, server, channel)
}

/// The channel behind the layer, as a user writes it: no body map.
fn hedged(
    layer: GrpcHedgeLayer<ManualTimer>,
    channel: Channel,
) -> TonicHedge<Channel, ManualTimer> {
    ServiceBuilder::new()
        .layer(layer.for_tonic())
        .service(channel)
}

fn attempts(server: &Server, script: &str) -> Vec<usize> {
    server.arrivals(script).iter().map(attempt).collect()
}

#[tokio::test]
async fn for_tonic_hedges_a_channel_without_map_request() {
    let (clock, server, channel) = stack().await;
    let policy = clock.policy(2, HEDGE_DELAY);
    let script = "hold | ok";

    let layer = GrpcHedgeLayer::new(policy.clone()).methods(["test.Echo"]);
    let reply = tokio::spawn(say(
        hedged(layer, channel),
        request(script, b"payload"),
        SAY,
    ));
    clock.hedge(&server, script, 1, HEDGE_DELAY).await;
    let reply = reply.await.unwrap().unwrap();

    assert_eq!(reply.attempt, 1, "the hedge answered");
    assert_eq!(reply.payload_len, 7, "the hedge carried the whole message");
    assert_eq!(attempts(&server, script), [0, 1]);
    assert_eq!(server.arrivals(script)[1].at, HEDGE_DELAY, "at its delay");
    server.until_dropped(1).await; // the held original, reset
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn for_tonic_keeps_the_layers_methods() {
    let (clock, server, channel) = stack().await;
    let script = "hold | ok";

    let layer = GrpcHedgeLayer::new(clock.policy(2, HEDGE_DELAY)).methods(["test.Echo/Say"]);
    let reply = tokio::spawn(say(hedged(layer, channel), request(script, b""), OTHER));
    clock.release(&server, script).await;

    assert_eq!(reply.await.unwrap().unwrap().attempt, 0);
    assert_eq!(
        attempts(&server, script),
        [0],
        "a method not named is sent once"
    );
    assert_eq!(clock.sleeps_created(), 0, "no hedge could go out");
}

#[tokio::test]
async fn for_tonic_keeps_the_policy_and_the_channel() {
    let (clock, _server, channel) = stack().await;
    let policy = clock.policy(3, HEDGE_DELAY);

    let layer = GrpcHedgeLayer::new(policy.clone())
        .all_methods()
        .for_tonic();
    assert_eq!(layer.policy().max_copies(), 3);
    let service = ServiceBuilder::new().layer(layer).service(channel);
    assert_eq!(service.policy().max_copies(), 3);
    let _channel: &Channel = service.get_ref();
    let _channel: Channel = service.into_inner();
}

#[tokio::test]
async fn for_tonic_over_replicas_sends_the_hedge_to_the_next_channel() {
    let clock = VirtualClock::new();
    let mut servers = Vec::new();
    let mut channels = Vec::new();
    for _ in 0..2 {
        let server = Server::grpc(scripted(), clock.clock()).await.unwrap();
        channels.push(server.channel().await.unwrap());
        servers.push(server);
    }
    let replicas = hedging_http::hedging::tower::Replicas::new(channels);
    let layer = GrpcHedgeLayer::new(clock.policy(2, HEDGE_DELAY)).methods(["test.Echo"]);
    let stack = ServiceBuilder::new()
        .layer(layer.for_tonic())
        .service(replicas);
    let script = "hold | ok";

    let reply = tokio::spawn(say(stack, request(script, b"payload"), SAY));
    clock.hedge(&servers[0], script, 1, HEDGE_DELAY).await;

    assert_eq!(
        reply.await.unwrap().unwrap().attempt,
        1,
        "the hedge answered"
    );
    assert_eq!(
        attempts(&servers[0], script),
        [0],
        "the original, on the first"
    );
    assert_eq!(attempts(&servers[1], script), [1], "the hedge, on the next");
    servers[0].until_dropped(1).await;
}
