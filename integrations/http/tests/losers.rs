//! What a dropped loser does to a real server on loopback, and what it costs in
//! connections: an HTTP/1.1 loser closes its connection (hyper's server sees it close and
//! drops the handler), an HTTP/2 loser is reset (`RST_STREAM`) and tonic drops its
//! handler's future, on the one connection the channel keeps. Time is virtual; every
//! count is the server's.

mod grpc_scene;

use std::time::Duration;

use grpc_scene::{echo, Scene};
use hedging_http::HttpHedgeLayer;
use hedging_test_server::grpc::SAY;
use hedging_test_server::http::{client, full, scripted};
use hedging_test_server::{Server, VirtualClock};
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use tower::{Layer, ServiceExt};

const HEDGE_DELAY: Duration = Duration::from_millis(20);

/// Calls each of `paths` in turn through a hyper-util client behind the layer, each
/// original held until its hedge wins; returns the server after every loser was dropped.
async fn http1_calls_each_won_by_its_hedge(calls: usize) -> Server {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    let hedged = HttpHedgeLayer::new(clock.policy(2, HEDGE_DELAY)).layer(client());
    for call in 1..=calls {
        let path = format!("/item-{call}");
        let request = server.request(Method::GET, &path, "hold | ok", full(""));
        let response = tokio::spawn(hedged.clone().oneshot(request));
        clock.hedge(&server, &path, 1, HEDGE_DELAY).await;
        let response = response.await.unwrap().unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, format!("copy 1 of {path}"), "the hedge won");
        server.until_dropped(call as u64).await;
        server.until_closed(call as u64).await;
    }
    server
}

#[tokio::test]
async fn an_http1_loser_closes_its_connection_and_the_server_sees_it() {
    let server = http1_calls_each_won_by_its_hedge(1).await;

    server.assert_each_loser_closed_its_connection(1);
}

#[tokio::test]
async fn http1_each_dropped_loser_costs_one_new_connection() {
    let server = http1_calls_each_won_by_its_hedge(3).await;

    server.assert_each_loser_closed_its_connection(3);
}

#[tokio::test]
async fn http1_without_hedging_keeps_one_connection_for_sequential_calls() {
    let server = Server::http(scripted(), hedging_test_server::real_clock())
        .await
        .unwrap();
    let plain = client();
    for _ in 0..10 {
        let request = server.request(Method::GET, "/item", "ok", full(""));
        let response = plain.clone().oneshot(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    }

    assert_eq!(server.answered(), 10);
    assert_eq!(server.connections(), 1, "one pooled connection, reused");
    assert_eq!(server.closed_connections(), 0);
}

#[tokio::test]
async fn a_grpc_loser_is_reset_and_its_handler_future_dropped_on_the_server() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let Scene { clock, server, .. } = &scene;

    let reply = scene.call(scene.every_method(), echo("hold | ok"), SAY);
    clock.hedge(server, "hold | ok", 1, HEDGE_DELAY).await;

    assert_eq!(reply.await.unwrap().unwrap().attempt, 1, "the hedge won");
    server.until_dropped(1).await;
    assert_eq!(
        server.answered(),
        1,
        "the hedge; the original was never answered"
    );
    assert_eq!(
        server.connections(),
        1,
        "the reset stream's connection lives on"
    );
}

#[tokio::test]
async fn http2_hedging_opens_no_new_connection() {
    let scene = Scene::new(2, HEDGE_DELAY).await;
    let Scene { clock, server, .. } = &scene;
    for call in 1..=3 {
        // A key of its own for each call: the same script, with `call` empty tokens.
        let script = format!("hold | ok{}", ";".repeat(call as usize));
        let reply = scene.call(scene.every_method(), echo(&script), SAY);
        clock.hedge(server, &script, 1, HEDGE_DELAY).await;
        assert_eq!(reply.await.unwrap().unwrap().attempt, 1, "the hedge won");
        server.until_dropped(call).await;
    }

    assert_eq!((server.dropped(), server.answered()), (3, 3));
    assert_eq!(
        server.connections(),
        1,
        "every copy on the channel's one connection"
    );
}
