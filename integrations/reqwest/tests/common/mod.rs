//! What the middleware's test files share: sending a request on a task of its own, and
//! reading an answer's status and body.
#![allow(dead_code)] // each test file uses its own part

use hedging_test_server::{Server, VirtualClock, SCRIPT};
use reqwest::{Response, StatusCode};
use reqwest_middleware::RequestBuilder;

/// Sends `request` on a task of its own.
pub fn send(
    request: RequestBuilder,
) -> tokio::task::JoinHandle<reqwest_middleware::Result<Response>> {
    tokio::spawn(request.send())
}

/// An answer's status and body.
pub async fn text(response: reqwest_middleware::Result<Response>) -> (StatusCode, String) {
    let response = response.expect("a response");
    let status = response.status();
    (status, response.text().await.expect("a body"))
}

/// Sends a request whose copies are held, lets virtual time pass far beyond any delay,
/// then releases them: what answered, once nothing could have hedged.
pub async fn send_held(
    clock: &VirtualClock,
    server: &Server,
    path: &str,
    request: RequestBuilder,
) -> (StatusCode, String) {
    let call = send(request.header(SCRIPT, "hold"));
    clock.release(server, path).await;
    text(call.await.unwrap()).await
}
