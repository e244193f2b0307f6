//! What the integrations' replica tests share: servers for a set of replicas, when each
//! saw a path, and the scenarios `hedging-http` (over `Origin::replicas`) and
//! `reqwest-hedging` (over `HedgeMiddleware::replicas`) both run ([`GetReplicated`] is
//! what each sends through).

use std::time::Duration;

use hedging::timer::ManualTimer;
use hedging::Policy;
use http::StatusCode;
use tokio::task::JoinHandle;

use crate::http::scripted;
use crate::{always, refusing_address, Answer, Hold, Server, VirtualClock};

/// The delay of the scenarios' policies.
pub const DELAY: Duration = Duration::from_millis(20);

/// The integration under test over a set of replicas: a GET of `path_and_query` to the
/// host the set stands for, sent on a task of its own; the task gives the answer's
/// status and body.
pub trait GetReplicated {
    /// Sends the GET.
    fn get(&self, path_and_query: &str) -> JoinHandle<(StatusCode, String)>;
}

/// When each server saw `path`, on the virtual clock: one entry per copy it was sent.
pub fn seen_at(servers: &[&Server], path: &str) -> Vec<Vec<Duration>> {
    servers
        .iter()
        .map(|server| server.arrived_at(path))
        .collect()
}

/// Three servers that hold every request until the test releases it.
pub async fn holding_servers(clock: &VirtualClock) -> Vec<Server> {
    let mut servers = Vec::new();
    for _ in 0..3 {
        let holding = always(Answer::ok().hold(Hold::Released));
        servers.push(Server::http(holding, clock.clock()).await.unwrap());
    }
    servers
}

/// Two calls through `via` over the three `servers`, in this order: copy k of call c
/// reaches server `(c + k) mod 3`, each copy [`DELAY`] after the one before, and the
/// third copy answers. `query` is added to each path; `also` asserts more of each call,
/// given the servers in the order its copies reached them and the path.
pub async fn copy_k_reaches_first_plus_k(
    clock: &VirtualClock,
    servers: &[Server],
    via: &impl GetReplicated,
    query: &str,
    also: impl Fn(&[&Server], &str),
) {
    for (call, path) in ["/first", "/second"].into_iter().enumerate() {
        let order: Vec<&Server> = (0..3).map(|k| &servers[(call + k) % 3]).collect();
        let response = via.get(&format!("{path}{query}"));
        clock.hedge(order[0], path, 1, DELAY).await;
        clock.hedge(order[1], path, 1, DELAY).await;
        order[2].until_arrived(path, 1).await;
        order[2].release(path);
        assert_eq!(response.await.unwrap().0, StatusCode::OK);

        let start = clock.now() - 2 * DELAY;
        let expected = vec![vec![start], vec![start + DELAY], vec![start + 2 * DELAY]];
        assert_eq!(
            seen_at(&order, path),
            expected,
            "call {call}: copy k on replica first + k"
        );
        also(&order, path);
    }
}

/// A replica that holds every request, and a quick one.
pub async fn stalled_and_quick(clock: &VirtualClock) -> (Server, Server) {
    let stalled = Server::http(always(Answer::ok().hold(Hold::Released)), clock.clock())
        .await
        .unwrap();
    let quick = Server::http(scripted(), clock.clock()).await.unwrap();
    (stalled, quick)
}

/// A call through `via` (on `policy`, two copies) over `[stalled, quick]`: the stalled
/// original is rescued by the hedge on the quick replica, and dropped.
pub async fn a_stalled_replica_is_rescued(
    clock: &VirtualClock,
    (stalled, quick): (&Server, &Server),
    policy: &Policy<ManualTimer>,
    via: &impl GetReplicated,
) {
    let response = via.get("/item");
    clock.hedge(stalled, "/item", 1, DELAY).await;
    let (status, body) = response.await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body, "copy 0 of /item",
        "the only copy the quick replica saw"
    );
    assert_eq!(
        seen_at(&[stalled, quick], "/item"),
        [[Duration::ZERO], [DELAY]]
    );
    stalled.until_dropped(1).await;
    assert_eq!(policy.stats().hedge_wins, 1);
}

/// Two quick replicas, and the origins of a set whose first replica refuses
/// connections, then the two.
pub async fn behind_a_refusing_replica(clock: &VirtualClock) -> ([Server; 2], [String; 3]) {
    let quick = Server::http(scripted(), clock.clock()).await.unwrap();
    let other = Server::http(scripted(), clock.clock()).await.unwrap();
    let origins = [
        format!("http://{}", refusing_address()),
        quick.origin(),
        other.origin(),
    ];
    ([quick, other], origins)
}

/// A call through `via` (on `policy`, three copies) over the set of
/// [`behind_a_refusing_replica`]: the refused copy fails, and the next starts at once.
pub async fn a_refusing_replica_is_skipped(
    clock: &VirtualClock,
    [quick, other]: &[Server; 2],
    policy: &Policy<ManualTimer>,
    via: &impl GetReplicated,
) {
    let (status, _) = via.get("/item").await.unwrap();

    assert_eq!(status, StatusCode::OK);
    assert_eq!(clock.now(), Duration::ZERO, "no time passed");
    assert_eq!(
        seen_at(&[quick, other], "/item"),
        [vec![Duration::ZERO], vec![]]
    );
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.wins, stats.hedge_wins), (1, 1, 1));
}
