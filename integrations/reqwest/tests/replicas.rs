//! `HedgeMiddleware::replicas`: three real servers on loopback, one base URL each. Copy k
//! of a call reaches base `(first + k) mod 3`, its path and query kept, `first` moving on
//! per call; a stalled replica is rescued by the next; a refusing one is skipped at once.
//! Time is virtual; which copy reached which server is the servers' own log.

use hedging_test_server::http::scripted;
use hedging_test_server::replicas::{
    self, behind_a_refusing_replica, holding_servers, stalled_and_quick, GetReplicated, DELAY,
};
use hedging_test_server::{Server, VirtualClock};
use reqwest::StatusCode;
use reqwest_hedging::hedging::timer::ManualTimer;
use reqwest_hedging::hedging::Policy;
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::task::JoinHandle;

fn client(
    policy: Policy<ManualTimer>,
    bases: impl IntoIterator<Item = String>,
) -> ClientWithMiddleware {
    let hedge = HedgeMiddleware::new(policy).replicas(bases).unwrap();
    ClientBuilder::new(reqwest::Client::new())
        .with(hedge)
        .build()
}

/// The middleware's client, as the shared scenarios send through it: to
/// `catalog.internal`, the host its replicas stand for.
struct Catalog(ClientWithMiddleware);

impl GetReplicated for Catalog {
    fn get(&self, path_and_query: &str) -> JoinHandle<(StatusCode, String)> {
        let get = self
            .0
            .get(format!("http://catalog.internal{path_and_query}"));
        tokio::spawn(async move {
            let response = get.send().await.unwrap();
            (response.status(), response.text().await.unwrap())
        })
    }
}

#[tokio::test]
async fn copy_k_reaches_base_first_plus_k_keeping_path_and_query_and_the_next_call_starts_one_on() {
    let clock = VirtualClock::new();
    let servers = holding_servers(&clock).await;
    let catalog = Catalog(client(
        clock.policy(3, DELAY),
        servers.iter().map(|s| s.origin()),
    ));
    let each_on_its_base = |order: &[&Server], path: &str| {
        for server in order {
            let arrival = &server.arrivals(path)[0];
            assert_eq!(arrival.header("host"), Some(&*server.addr.to_string()));
        }
    };
    replicas::copy_k_reaches_first_plus_k(&clock, &servers, &catalog, "?page=2", each_on_its_base)
        .await;
}

#[tokio::test]
async fn a_stalled_replica_is_rescued_by_the_next() {
    let clock = VirtualClock::new();
    let (stalled, quick) = stalled_and_quick(&clock).await;
    let policy = clock.policy(2, DELAY);
    let catalog = Catalog(client(policy.clone(), [stalled.origin(), quick.origin()]));
    replicas::a_stalled_replica_is_rescued(&clock, (&stalled, &quick), &policy, &catalog).await;
}

#[tokio::test]
async fn a_refusing_replica_is_skipped_at_once() {
    let clock = VirtualClock::new();
    let (quick, bases) = behind_a_refusing_replica(&clock).await;
    let policy = clock.policy(3, DELAY);
    let catalog = Catalog(client(policy.clone(), bases));
    replicas::a_refusing_replica_is_skipped(&clock, &quick, &policy, &catalog).await;
}

#[tokio::test]
async fn a_request_outside_the_scope_goes_once_to_the_next_replica() {
    let clock = VirtualClock::new();
    let servers = [
        Server::http(scripted(), clock.clock()).await.unwrap(),
        Server::http(scripted(), clock.clock()).await.unwrap(),
    ];
    let policy = clock.policy(2, DELAY);
    let client = client(policy.clone(), servers.iter().map(|s| s.origin()));

    for _ in 0..3 {
        let post = client.post("http://catalog.internal/order").body("one");
        assert_eq!(post.send().await.unwrap().status(), StatusCode::OK);
    }

    let per_server: Vec<usize> = servers.iter().map(|s| s.arrivals("/order").len()).collect();
    assert_eq!(per_server, [2, 1], "one copy each, round the set");
    assert_eq!((policy.stats().calls, policy.stats().out_of_scope), (0, 3));
}

#[test]
fn a_base_that_is_not_an_origin_is_an_error_naming_it() {
    let policy = VirtualClock::new().policy(2, DELAY);
    let error = HedgeMiddleware::new(policy)
        .replicas(["http://10.0.0.1:8080", "http://10.0.0.2:8080/api"])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid origin \"http://10.0.0.2:8080/api\": a path or query; an origin is scheme, host and port"
    );
}
