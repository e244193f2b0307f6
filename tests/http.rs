//! The HTTP example, bounded: real loopback sockets, a primary that stalls one request in
//! 100 for 200 ms, a replica that never stalls. Hedging must cut the stalls out of the
//! tail. Bounds are generous: the machine running the tests may be busy.

#[path = "../examples/http/loopback.rs"]
mod loopback;

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use hedging::timer::TokioTimer;
use hedging::Policy;
use loopback::{client, run, summary, Server};

const REQUESTS: usize = 300;
const STALL: Duration = Duration::from_millis(200);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hedging_cuts_the_stalls_out_of_the_tail_on_real_sockets() {
    let primary = Server::start(Some(100), STALL).await.unwrap();
    let replica = Server::start(None, Duration::ZERO).await.unwrap();
    let client = client();
    let policy = Policy::builder()
        .max_copies(2)
        .delay(Duration::from_millis(20))
        .timer(TokioTimer::new())
        .build();

    let stalls_before = primary.stalled.load(Relaxed);
    let plain = run(&client, &primary.uri, &replica.uri, REQUESTS, None)
        .await
        .unwrap();
    let plain_stalls = primary.stalled.load(Relaxed) - stalls_before;
    let hedged = run(&client, &primary.uri, &replica.uri, REQUESTS, Some(&policy))
        .await
        .unwrap();
    let hedged_stalls = primary.stalled.load(Relaxed) - stalls_before - plain_stalls;
    println!("without hedging: {}", summary(&plain));
    println!("with hedging:    {}", summary(&hedged));

    // Every run met the stalls: 1 request in 100 at the primary.
    assert_eq!((plain_stalls, hedged_stalls), (3, 3));
    assert!(
        *plain.last().unwrap() >= STALL,
        "unhedged, a stall is waited out"
    );
    let worst_hedged = *hedged.last().unwrap();
    assert!(
        worst_hedged < Duration::from_millis(150),
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
        replica.requests.load(Relaxed) <= stats.hedges,
        "only hedges go to the replica"
    );
    assert!(
        replica.requests.load(Relaxed) >= 3,
        "the stalls' hedges reached the replica"
    );
}
