//! `set_enabled(false)` on `HedgeMiddleware`'s policy, in a real `reqwest_middleware`
//! client against the shared loopback server: a request the middleware hedges while
//! enabled passes on as it was given (neither it nor its extensions copied), and is still
//! one of the policy's `calls`, not `out_of_scope`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use common::send_held;
use hedging::Stats;
use hedging_test_server::http::scripted;
use hedging_test_server::{Server, VirtualClock};
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::ClientBuilder;

const DELAY: Duration = Duration::from_millis(20);

/// An extension that counts its clones: the extensions copied for a copy are one more.
#[derive(Debug)]
struct CountsClones(Arc<AtomicUsize>);

impl Clone for CountsClones {
    fn clone(&self) -> Self {
        self.0.fetch_add(1, SeqCst);
        CountsClones(Arc::clone(&self.0))
    }
}

#[tokio::test]
async fn a_disabled_middleware_passes_the_request_on_uncopied() {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    let policy = clock.policy(3, DELAY);
    policy.set_enabled(false);
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();
    let clones = Arc::new(AtomicUsize::new(0));

    let get = client
        .get(server.url("/stall/disabled"))
        .with_extension(CountsClones(Arc::clone(&clones)));
    let (_, body) = send_held(&clock, &server, "/stall/disabled", get).await;

    assert_eq!(body, "copy 0 of /stall/disabled");
    assert_eq!(server.arrivals("/stall/disabled").len(), 1, "sent once");
    assert_eq!(clones.load(SeqCst), 0, "its extensions were not copied");
    assert_eq!(clock.sleeps_created(), 0, "no timer");
    let one_call = Stats {
        calls: 1,
        wins: 1,
        ..Stats::default()
    };
    assert_eq!(policy.stats(), one_call, "a call, not out of scope");
}
