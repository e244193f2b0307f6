//! Resuming a stalled body: `HedgedStore` over a real `HttpStore` against the loopback
//! object server, whose bodies stall after some bytes, trickle, or change version between
//! a stall and its resume. The policy runs on a virtual clock that a test moves only
//! once the reader holds every byte sent before a stall and waits for more (the store
//! under the hedged one counts the body bytes its answers yielded). Bodies of the wrong
//! length, weak ETags and broken bodies: `resume_faults.rs`.

mod common;
mod resume_support;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hedging::{Budget, Policy};
use hedging_test_server::resume::{assert_asks_the_rest, assert_resumed_once};
use hedging_test_server::{until, Arrival, Hold, Pace, VirtualClock, NEVER};
use object_store::{Error, GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use common::received;
use resume_support::*;

#[tokio::test]
async fn an_http_store_body_stalled_mid_read_is_resumed_from_where_it_stopped() {
    let s = setup(SIZE, copies(2), first_answers_stall(STALL_AT)).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    resume_at(&s, STALL_AT, 2).await;

    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0), "every byte once, in order");
    let resume = &s.server.arrivals(KEY)[1];
    let version = assert_asks_the_rest(resume, STALL_AT, SIZE as u64, 2 * DELAY);
    assert_eq!(version, Some("\"v1\""), "of the same version");
    assert_resumed_once(s.store.policy());
}

#[tokio::test]
async fn a_resumed_reads_stalled_loser_closes_its_connection_and_the_server_sees_it() {
    let s = setup(SIZE, copies(2), first_answers_stall(STALL_AT)).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    resume_at(&s, STALL_AT, 2).await;
    assert_eq!(read.await.unwrap().0, object(SIZE, 0));

    s.server.until_closed(1).await;
    assert_eq!(
        s.server.closed_connections(),
        1,
        "the stalled body's, closed"
    );
    assert_eq!(
        s.server.connections(),
        2,
        "the first answer's and the resume's"
    );
}

#[tokio::test]
async fn a_body_stalling_twice_is_resumed_twice_then_the_cap_holds() {
    const EACH: u64 = 60_000;
    // Every answer stalls EACH bytes into its own body.
    let s = setup(SIZE, copies(3), move |_: &Arrival| stall(EACH)).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    resume_at(&s, EACH, 2).await;
    resume_at(&s, 2 * EACH, 3).await;

    let inner = s.store.inner();
    until(|| received(inner) == 3 * EACH, "the third stall").await;
    assert_eq!(
        s.clock.timer().next_deadline(),
        None,
        "three copies started, the policy's cap: the third stall is not watched"
    );
    s.clock.advance(NEVER);
    assert_eq!(s.server.arrivals(KEY).len(), 3, "no fourth copy");
    s.server.release(KEY);
    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0), "the last copy's body, to its end");
    let stats = s.store.policy().stats();
    assert_eq!((stats.hedges, stats.hedge_wins), (2, 2));
}

#[tokio::test]
async fn an_object_rewritten_between_stall_and_resume_is_a_precondition_error() {
    let s = setup(SIZE, copies(2), first_answers_stall(STALL_AT)).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    let inner = s.store.inner();
    until(|| received(inner) == STALL_AT, "the bytes before the stall").await;
    s.objects.put("data/big.bin", object(SIZE, 1)); // version 2
    resume_at(&s, STALL_AT, 2).await;

    let (bytes, error) = read.await.unwrap();
    assert!(
        matches!(error, Some(Error::Precondition { .. })),
        "{error:?}"
    );
    assert_eq!(
        bytes,
        object(SIZE, 0)[..STALL_AT as usize],
        "version 1 only"
    );
    assert_eq!(s.server.arrivals(KEY)[1].header("if-match"), Some("\"v1\""));
}

/// The pieces of a trickled body.
const PIECE: u64 = 4096;

/// Reads an object whose body trickles in pieces of [`PIECE`] bytes, the test letting
/// each next piece go once `step` passed (and, with `first_gap`, once the first gap
/// started a resume race); asserts the bytes read.
async fn read_trickled(step: Duration, first_gap: bool) -> Setup {
    let trickle = Pace::Trickle {
        piece: PIECE as usize,
        every: Hold::Released,
    };
    let s = setup(SIZE, copies(2), move |_: &Arrival| trickle).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    let inner = s.store.inner();
    for sent in 1..SIZE as u64 / PIECE {
        until(|| received(inner) == sent * PIECE, "the reader, waiting").await;
        s.clock.advance(step);
        if first_gap && sent == 1 {
            let now = s.clock.now();
            let timer = s.clock.timer();
            let hedge_due = || timer.next_deadline() == Some(now + DELAY);
            until(hedge_due, "a resume race on the first gap").await;
        }
        s.server.let_pieces_go(KEY, 1);
    }
    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0));
    s
}

#[tokio::test]
async fn a_trickling_body_that_never_stops_is_read_to_its_end_without_a_resume() {
    // A piece every 1.5 delays: the first gap comes before the body has a pace, so it
    // is a stall and starts a race, but the body's next piece beats the resume's due
    // time; from then on 4 times its mean wait (6 delays) is its allowance.
    let s = read_trickled(DELAY * 3 / 2, true).await;

    assert_eq!(s.server.arrivals(KEY).len(), 1, "no resume was sent");
    let stats = s.store.policy().stats();
    assert_eq!(stats.hedges, 0);
    assert_eq!(stats.calls, 2, "the read, and one race won by the body");
}

#[tokio::test]
async fn a_healthy_large_read_sends_one_request() {
    // 64 pieces, half a delay apart: 32 delays in all, never quiet for one.
    let s = read_trickled(DELAY / 2, false).await;

    assert_eq!(s.server.arrivals(KEY).len(), 1);
    let stats = s.store.policy().stats();
    assert_eq!(
        (stats.calls, stats.wins, stats.hedges),
        (1, 1, 0),
        "no race"
    );
}

#[tokio::test]
async fn a_refused_resume_leaves_the_body_as_it_was() {
    const EACH: u64 = 60_000;
    // One token: the first resume takes it, the second is refused.
    let budget = Budget::new(0.0).burst(1.0);
    let policy = |clock: &VirtualClock| {
        let policy = Policy::builder().max_copies(3).delay(DELAY).budget(&budget);
        policy.timer(clock.timer()).build()
    };
    let s = setup(SIZE, policy, move |_: &Arrival| stall(EACH)).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    resume_at(&s, EACH, 2).await;

    hedge_due_at(&s, 2 * EACH).await;
    s.clock.advance(DELAY);
    let refused = || s.store.policy().stats().budget_denied == 1;
    until(refused, "the budget refusing the second resume").await;
    assert_eq!(
        s.server.arrivals(KEY).len(),
        2,
        "no copy for the refused resume"
    );
    s.server.release(KEY);
    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0), "the stalled body, read on");
}

#[tokio::test]
async fn resume_stalls_false_waits_a_stall_out() {
    let s = setup(SIZE, copies(2), first_answers_stall(STALL_AT)).await;
    let store = Arc::new(Arc::into_inner(s.store).unwrap().resume_stalls(false));
    let read = tokio::spawn(read_whole(Arc::clone(&store)));
    let inner = store.inner();
    until(|| received(inner) == STALL_AT, "the bytes before the stall").await;
    assert_eq!(
        s.clock.timer().next_deadline(),
        None,
        "nothing watches the body"
    );
    s.clock.advance(NEVER);
    s.server.release(KEY);

    assert_eq!(read.await.unwrap().0, object(SIZE, 0));
    assert_eq!(s.server.arrivals(KEY).len(), 1);
    assert_eq!(store.policy().stats().hedges, 0);
}

/// Runs `read` on a store whose first answers stall `STALL_AT` bytes into their bodies,
/// and resumes each once; what it read, and the server's log.
async fn resumed<F, Fut>(size: usize, reads: usize, read: F) -> (Bytes, Setup)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = object_store::Result<Bytes>> + Send + 'static,
{
    let s = setup(size, copies(2), first_answers_stall(STALL_AT)).await;
    let reading = tokio::spawn(read(Arc::clone(&s.store)));
    resume_at(&s, reads as u64 * STALL_AT, 2 * reads).await;
    (reading.await.unwrap().unwrap(), s)
}

#[tokio::test]
async fn a_stalled_get_range_is_resumed() {
    let range = 1000..200_000;
    let read = |store: Store| async move { store.get_range(&path(), 1000..200_000).await };
    let (bytes, s) = resumed(SIZE, 1, read).await;

    assert_eq!(bytes, object(SIZE, 0).slice(1000..200_000));
    let resume = &s.server.arrivals(KEY)[1];
    let rest = format!("bytes={}-{}", range.start + STALL_AT, range.end - 1);
    assert_eq!(resume.header("range"), Some(rest.as_str()));
}

#[tokio::test]
async fn a_stalled_get_opts_with_a_range_is_resumed() {
    let read = |store: Store| async move {
        let options = GetOptions::new().with_range(Some(GetRange::Offset(50_000)));
        store.get_opts(&path(), options).await?.bytes().await
    };
    let (bytes, s) = resumed(SIZE, 1, read).await;

    assert_eq!(bytes, object(SIZE, 0).slice(50_000..));
    let resume = &s.server.arrivals(KEY)[1];
    let rest = format!("bytes={}-{}", 50_000 + STALL_AT, SIZE - 1);
    assert_eq!(resume.header("range"), Some(rest.as_str()));
}

#[tokio::test]
async fn each_range_of_get_ranges_is_resumed() {
    const BIG: usize = 4 << 20;
    // More than object_store's 1 MiB apart: two reads, each stalled and resumed.
    let ranges = [0..200_000, 3_000_000..3_200_000];
    let read = |store: Store| async move {
        let parts = store.get_ranges(&path(), &ranges).await?;
        Ok(parts.concat().into())
    };
    let (bytes, s) = resumed(BIG, 2, read).await;

    let whole = object(BIG, 0);
    assert_eq!(
        bytes,
        [whole.slice(0..200_000), whole.slice(3_000_000..3_200_000)].concat()
    );
    let resumes: Vec<_> = s.server.arrivals(KEY)[2..]
        .iter()
        .map(|resume| resume.header("range").unwrap().to_owned())
        .collect();
    assert!(
        resumes.contains(&format!("bytes={STALL_AT}-199999")),
        "{resumes:?}"
    );
    assert!(
        resumes.contains(&format!("bytes={}-3199999", 3_000_000 + STALL_AT)),
        "{resumes:?}"
    );
    assert_eq!(s.store.policy().stats().hedges, 2);
}
