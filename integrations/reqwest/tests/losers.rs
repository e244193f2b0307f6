//! What a dropped loser does to a real hyper server on loopback, through reqwest over
//! HTTP/1.1: its connection is closed, the server sees it close and drops the handler,
//! and the next hedge opens a new one. Time is virtual; every count is the server's.

use std::time::Duration;

use hedging_test_server::http::scripted;
use hedging_test_server::{real_clock, Server, VirtualClock, SCRIPT};
use reqwest::StatusCode;
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::ClientBuilder;

const DELAY: Duration = Duration::from_millis(20);

/// Makes `calls` GETs in turn through the middleware, each original held until its hedge
/// wins; returns the server after every loser was dropped and its connection closed.
async fn calls_each_won_by_its_hedge(calls: usize) -> Server {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    let hedge = HedgeMiddleware::new(clock.policy(2, DELAY));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(hedge)
        .build();
    for call in 1..=calls {
        let path = format!("/item-{call}");
        let get = client.get(server.url(&path)).header(SCRIPT, "hold | ok");
        let response = tokio::spawn(get.send());
        clock.hedge(&server, &path, 1, DELAY).await;
        let response = response.await.unwrap().unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = response.text().await.unwrap();
        assert_eq!(body, format!("copy 1 of {path}"), "the hedge won");
        server.until_dropped(call as u64).await;
        server.until_closed(call as u64).await;
    }
    server
}

#[tokio::test]
async fn a_reqwest_loser_closes_its_connection_and_the_server_sees_it() {
    let server = calls_each_won_by_its_hedge(1).await;

    server.assert_each_loser_closed_its_connection(1);
}

#[tokio::test]
async fn each_dropped_loser_costs_one_new_connection() {
    let server = calls_each_won_by_its_hedge(3).await;

    server.assert_each_loser_closed_its_connection(3);
}

#[tokio::test]
async fn without_hedging_sequential_gets_keep_one_connection() {
    let server = Server::http(scripted(), real_clock()).await.unwrap();
    let client = reqwest::Client::new();
    for _ in 0..10 {
        let response = client.get(server.url("/item")).send().await.unwrap();
        response.bytes().await.unwrap();
    }

    assert_eq!(server.answered(), 10);
    assert_eq!(server.connections(), 1, "one pooled connection, reused");
    assert_eq!(server.closed_connections(), 0);
}
