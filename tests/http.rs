//! The HTTP example, bounded, as a smoke test on the real clock: real loopback sockets, a
//! primary that stalls one request in 100 for a second, a replica that never stalls.
//! Hedging must cut the stalls out of the tail. Bounds are generous: the machine running
//! the tests may be busy.

#[path = "../examples/http/calls.rs"]
mod calls;

use std::time::Duration;

use calls::{ok, run};
use hedging_test_server::http::client;
use hedging_test_server::report::row;
use hedging_test_server::{always, one_in, real_clock, tokio_policy, Server};

const REQUESTS: usize = 300;
const STALL: Duration = Duration::from_secs(1);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hedging_cuts_the_stalls_out_of_the_tail_on_real_sockets() {
    let primary = Server::http(one_in(100, STALL), real_clock())
        .await
        .unwrap();
    let replica = Server::http(always(ok()), real_clock()).await.unwrap();
    let (primary_uri, replica_uri) = (primary.uri("/"), replica.uri("/"));
    let client = client();
    let policy = tokio_policy(Duration::from_millis(20));

    let plain = run(&client, &primary_uri, &replica_uri, REQUESTS, None)
        .await
        .unwrap();
    let plain_stalls = primary.held();
    let hedged = run(&client, &primary_uri, &replica_uri, REQUESTS, Some(&policy))
        .await
        .unwrap();
    let hedged_stalls = primary.held() - plain_stalls;
    println!("{}", row("without hedging", &plain, None));
    println!("{}", row("with hedging", &hedged, None));

    // Every run met the stalls: 1 request in 100 at the primary.
    assert_eq!((plain_stalls, hedged_stalls), (3, 3));
    assert!(
        *plain.last().unwrap() >= STALL,
        "unhedged, a stall is waited out"
    );
    let worst_hedged = *hedged.last().unwrap();
    assert!(
        worst_hedged < STALL / 2,
        "hedged, no request waits out a stall: worst {worst_hedged:?}"
    );
    let stats = policy.stats();
    assert!(
        stats.hedge_wins >= 3,
        "each stall was overtaken by its hedge: {stats:?}"
    );
    assert!(
        stats.hedges <= REQUESTS as u64 / 2,
        "hedges only slow requests, not every one: {stats:?}"
    );
    // A hedge dropped before it reached the replica (its original won first) is not seen there.
    assert!(
        replica.requests() <= stats.hedges,
        "only hedges go to the replica"
    );
    assert!(
        replica.requests() >= 3,
        "the stalls' hedges reached the replica"
    );
}
