//! The test server itself: both HTTP versions on one port, scripts by copy, holds that
//! a release or a dropped client ends, and the log of it all.

use bytes::Bytes;
use hedging_test_server::http::{client, scripted};
use hedging_test_server::{real_clock, Server, HANG_GUARD};
use http::{Method, StatusCode, Version};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

async fn server() -> Server {
    Server::http(scripted(), real_clock()).await.unwrap()
}

#[tokio::test]
async fn serves_http1_and_http2_on_one_port() {
    let server = server().await;
    let http2 = Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http::<Empty<Bytes>>();

    let one = client::<Empty<Bytes>>()
        .get(server.uri("/v"))
        .await
        .unwrap();
    let two = http2.get(server.uri("/v")).await.unwrap();

    assert_eq!(
        (one.version(), two.version()),
        (Version::HTTP_11, Version::HTTP_2)
    );
    let body = two.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "copy 1 of /v", "copies are counted by path");
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn each_copy_answers_as_its_part_of_the_script() {
    let server = server().await;
    let script = "status=503;retry-after=2 | status=404 | echo";
    let send = |body: &'static str| {
        let request = server.request(Method::POST, "/s", script, Empty::<Bytes>::new());
        let request = request.map(|_| http_body_util::Full::new(Bytes::from(body)));
        client().request(request)
    };

    let first = send("a").await.unwrap();
    assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(first.headers()["retry-after"], "2");
    assert_eq!(send("b").await.unwrap().status(), StatusCode::NOT_FOUND);
    let third = send("c")
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap();
    assert_eq!(
        third.to_bytes(),
        "c",
        "the last part is for every later copy"
    );
    let copies: Vec<usize> = server.arrivals("/s").iter().map(|a| a.copy).collect();
    assert_eq!(copies, [0, 1, 2]);
    assert_eq!(server.answered(), 3);
}

#[tokio::test]
async fn a_hold_ends_when_released_or_when_the_client_goes() {
    let server = server().await;
    let held = |path| {
        client::<Empty<Bytes>>().request(server.request(Method::GET, path, "hold", Empty::new()))
    };

    let released = tokio::spawn(held("/released"));
    server.until_arrived("/released", 1).await;
    server.release("/released");
    let response = tokio::time::timeout(HANG_GUARD, released).await.unwrap();
    assert_eq!(response.unwrap().unwrap().status(), StatusCode::OK);

    let abandoned = tokio::spawn(held("/abandoned"));
    server.until_arrived("/abandoned", 1).await;
    abandoned.abort();
    server.until_dropped(1).await;
    assert_eq!(
        (server.held(), server.answered(), server.dropped()),
        (2, 1, 1)
    );
}
