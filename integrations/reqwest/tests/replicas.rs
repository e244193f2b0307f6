//! `HedgeMiddleware::replicas`: three real servers on loopback, one base URL each. Copy k
//! of a call reaches base `(first + k) mod 3`, its path and query kept, `first` moving on
//! per call; a stalled replica is rescued by the next; a refusing one is skipped at once.
//! Time is virtual; which copy reached which server is the servers' own log.

use std::time::Duration;

use hedging_test_server::http::scripted;
use hedging_test_server::{always, refusing_address, Answer, Hold, Server, VirtualClock};
use reqwest::StatusCode;
use reqwest_hedging::hedging::timer::ManualTimer;
use reqwest_hedging::hedging::Policy;
use reqwest_hedging::HedgeMiddleware;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};

const DELAY: Duration = Duration::from_millis(20);

fn client(
    policy: Policy<ManualTimer>,
    bases: impl IntoIterator<Item = String>,
) -> ClientWithMiddleware {
    let hedge = HedgeMiddleware::new(policy).replicas(bases).unwrap();
    ClientBuilder::new(reqwest::Client::new())
        .with(hedge)
        .build()
}

/// When each server saw `path`, on the virtual clock: one entry per copy it was sent.
fn seen_at(servers: &[&Server], path: &str) -> Vec<Vec<Duration>> {
    servers
        .iter()
        .map(|server| server.arrived_at(path))
        .collect()
}

async fn holding_servers(clock: &VirtualClock) -> Vec<Server> {
    let mut servers = Vec::new();
    for _ in 0..3 {
        let holding = always(Answer::ok().hold(Hold::Released));
        servers.push(Server::http(holding, clock.clock()).await.unwrap());
    }
    servers
}

#[tokio::test]
async fn copy_k_reaches_base_first_plus_k_keeping_path_and_query_and_the_next_call_starts_one_on() {
    let clock = VirtualClock::new();
    let servers = holding_servers(&clock).await;
    let client = client(clock.policy(3, DELAY), servers.iter().map(|s| s.origin()));

    for (call, path) in ["/first", "/second"].into_iter().enumerate() {
        let order: Vec<&Server> = (0..3).map(|k| &servers[(call + k) % 3]).collect();
        let get = client.get(format!("http://catalog.internal{path}?page=2"));
        let response = tokio::spawn(get.send());
        clock.hedge(order[0], path, 1, DELAY).await;
        clock.hedge(order[1], path, 1, DELAY).await;
        order[2].until_arrived(path, 1).await;
        order[2].release(path);
        assert_eq!(response.await.unwrap().unwrap().status(), StatusCode::OK);

        let start = clock.now() - 2 * DELAY;
        let expected = vec![vec![start], vec![start + DELAY], vec![start + 2 * DELAY]];
        assert_eq!(
            seen_at(&order, path),
            expected,
            "call {call}: copy k on base first + k"
        );
        for server in &order {
            let arrival = &server.arrivals(path)[0];
            assert_eq!(arrival.header("host"), Some(&*server.addr.to_string()));
        }
    }
}

#[tokio::test]
async fn a_stalled_replica_is_rescued_by_the_next() {
    let clock = VirtualClock::new();
    let stalled = Server::http(always(Answer::ok().hold(Hold::Released)), clock.clock())
        .await
        .unwrap();
    let quick = Server::http(scripted(), clock.clock()).await.unwrap();
    let policy = clock.policy(2, DELAY);
    let client = client(policy.clone(), [stalled.origin(), quick.origin()]);

    let response = tokio::spawn(client.get("http://catalog.internal/item").send());
    clock.hedge(&stalled, "/item", 1, DELAY).await;
    let response = response.await.unwrap().unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "copy 0 of /item");
    assert_eq!(
        seen_at(&[&stalled, &quick], "/item"),
        [[Duration::ZERO], [DELAY]]
    );
    stalled.until_dropped(1).await;
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn a_refusing_replica_is_skipped_at_once() {
    let clock = VirtualClock::new();
    let quick = Server::http(scripted(), clock.clock()).await.unwrap();
    let other = Server::http(scripted(), clock.clock()).await.unwrap();
    let policy = clock.policy(3, DELAY);
    let bases = [
        format!("http://{}", refusing_address()),
        quick.origin(),
        other.origin(),
    ];
    let client = client(policy.clone(), bases);

    // No time passes: the refused copy fails, and the next starts at once.
    let response = client
        .get("http://catalog.internal/item")
        .send()
        .await
        .unwrap();

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(clock.now(), Duration::ZERO);
    assert_eq!(
        seen_at(&[&quick, &other], "/item"),
        [vec![Duration::ZERO], vec![]]
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.hedge_wins), (1, 1, 1));
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
