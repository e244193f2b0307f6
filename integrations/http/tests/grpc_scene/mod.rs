//! The world of a gRPC test, shared by the test files: a virtual clock, a scripted tonic
//! server on loopback stamping arrivals with it, a channel to the server, and the stack
//! that puts a hedging layer in front of the channel.
#![allow(dead_code)] // each test file uses its own part

use std::time::Duration;

use hedging::timer::ManualTimer;
use hedging::Policy;
use hedging_http::grpc::{GrpcHedge, GrpcHedgeLayer};
use hedging_http::ReplayBody;
use hedging_test_server::grpc::{attempt, request, say, scripted, EchoReply, EchoRequest, SAY};
use hedging_test_server::{Server, VirtualClock};
use tokio::task::JoinHandle;
use tonic::transport::Channel;
use tonic::Status;
use tower::util::MapRequest;
use tower::ServiceBuilder;

pub const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// One test's world: a virtual clock, a scripted server stamping arrivals with it, a
/// channel to the server, and a policy on the clock.
pub struct Scene {
    pub clock: VirtualClock,
    pub server: Server,
    pub channel: Channel,
    pub policy: Policy<ManualTimer>,
}

impl Scene {
    /// A policy of `max_copies` copies, each `delay` after the one before.
    pub async fn new(max_copies: usize, delay: Duration) -> Scene {
        let clock = VirtualClock::new();
        let server = Server::grpc(scripted(), clock.clock()).await.unwrap();
        let channel = server.channel().await.unwrap();
        let policy = clock.policy(max_copies, delay);
        Scene {
            clock,
            server,
            channel,
            policy,
        }
    }

    /// The layer hedging every method by this scene's policy.
    pub fn every_method(&self) -> GrpcHedgeLayer<ManualTimer> {
        GrpcHedgeLayer::new(self.policy.clone()).all_methods()
    }

    /// Calls `path` with `request` through `layer` and the channel, on a task of its own.
    pub fn call(
        &self,
        layer: GrpcHedgeLayer<ManualTimer>,
        request: tonic::Request<EchoRequest>,
        path: &'static str,
    ) -> JoinHandle<Result<EchoReply, Status>> {
        tokio::spawn(say(hedged(layer, self.channel.clone()), request, path))
    }

    /// Calls `test.Echo/Say` with `script` through a layer hedging every method.
    pub fn say(&self, script: &str) -> JoinHandle<Result<EchoReply, Status>> {
        self.call(self.every_method(), echo(script), SAY)
    }

    /// Sends `request` (whose script holds copy 0) through `layer` to `path`, lets time
    /// pass far beyond the delay, then releases it: the call was sent once, with no timer
    /// armed, and its only copy answered.
    pub async fn assert_sent_once(
        &self,
        layer: GrpcHedgeLayer<ManualTimer>,
        request: tonic::Request<EchoRequest>,
        path: &'static str,
    ) -> EchoReply {
        let script = request.get_ref().script.clone();
        let reply = self.call(layer, request, path);
        self.clock.release(&self.server, &script).await;
        let reply = reply.await.unwrap().unwrap();
        assert_eq!(reply.attempt, 0);
        assert_eq!(self.attempts(&script), [0]);
        assert_eq!(self.clock.sleeps_created(), 0, "no hedge could go out");
        reply
    }

    /// The copies of the call with `script` that reached the server, by attempt.
    pub fn attempts(&self, script: &str) -> Vec<usize> {
        self.server.arrivals(script).iter().map(attempt).collect()
    }
}

pub fn echo(script: &str) -> tonic::Request<EchoRequest> {
    request(script, b"payload")
}

/// The body map that puts a hedging layer in front of a tonic `Channel`.
pub type IntoTonicBody =
    fn(http::Request<ReplayBody<tonic::body::Body>>) -> http::Request<tonic::body::Body>;

fn into_tonic_body(
    request: http::Request<ReplayBody<tonic::body::Body>>,
) -> http::Request<tonic::body::Body> {
    request.map(tonic::body::Body::new)
}

/// The hedged stack: the layer, the body map, the channel.
pub fn hedged<T, S>(
    layer: GrpcHedgeLayer<T>,
    channel: S,
) -> GrpcHedge<MapRequest<S, IntoTonicBody>, T> {
    ServiceBuilder::new()
        .layer(layer)
        .map_request(into_tonic_body as IntoTonicBody)
        .service(channel)
}
