//! `set_enabled(false)` on `HedgeMiddleware`'s policy, in a real `reqwest_middleware`
//! client against the shared loopback server: a request the middleware hedges while
//! enabled passes on as it was given (neither it nor its extensions copied), and is still
//! one of the policy's `calls`, not `out_of_scope`.

mod common;

use std::time::Duration;

use common::send_held;
use hedging_test_server::counts::{one_call, CountsClones};
use hedging_test_server::http::scripted;
use hedging_test_server::{Server, VirtualClock};
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::ClientBuilder;

const DELAY: Duration = Duration::from_millis(20);

#[tokio::test]
async fn a_disabled_middleware_passes_the_request_on_uncopied() {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    let policy = clock.policy(3, DELAY);
    policy.set_enabled(false);
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();
    let clones = CountsClones::default();

    let get = client
        .get(server.url("/stall/disabled"))
        .with_extension(clones.handle());
    let (_, body) = send_held(&clock, &server, "/stall/disabled", get).await;

    assert_eq!(body, "copy 0 of /stall/disabled");
    assert_eq!(server.arrivals("/stall/disabled").len(), 1, "sent once");
    assert_eq!(clones.clones(), 0, "its extensions were not copied");
    assert_eq!(clock.sleeps_created(), 0, "no timer");
    assert_eq!(policy.stats(), one_call(), "a call, not out of scope");
}
