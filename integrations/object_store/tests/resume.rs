//! Resuming a stalled body: `HedgedStore` over a real `HttpStore` against the loopback
//! object server, whose bodies stall after some bytes, trickle, or change version between
//! a stall and its resume. The policy runs on a virtual clock that a test moves only
//! once the reader holds every byte sent before a stall and waits for more (the store
//! under the hedged one counts the body bytes its answers yielded).

mod common;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use hedging::timer::ManualTimer;
use hedging::{Budget, Policy};
use hedging_object_store::HedgedStore;
use hedging_test_server::object::{store, versioned, Objects};
use hedging_test_server::{
    until, Answer, Arrival, Behavior, Hold, Pace, Reply, Server, VirtualClock, NEVER,
};
use object_store::http::HttpStore;
use object_store::path::Path;
use object_store::{Error, GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use common::{received, Counted};

const DELAY: Duration = Duration::from_millis(20);
const SIZE: usize = 256 * 1024;
const LIMIT: usize = 64 * 1024;
const STALL_AT: u64 = 100_000;
const KEY: &str = "/data/big.bin";

/// Version `version` of the object: byte i is `i % 251 + version`.
fn object(size: usize, version: u8) -> Bytes {
    (0..size)
        .map(|i| ((i % 251) as u8).wrapping_add(version))
        .collect()
}

fn path() -> Path {
    Path::from("data/big.bin")
}

type Store = Arc<HedgedStore<Counted<HttpStore>, ManualTimer>>;

struct Setup {
    clock: VirtualClock,
    server: Server,
    objects: Objects,
    store: Store,
}

/// The object server holding `data/big.bin` (`size` bytes, version 1), each answer's
/// body sent as `pace` says for it; a hedged `HttpStore` on it, buffering answers of up
/// to 64 KiB, hedged by the policy `policy` makes on the virtual clock.
async fn setup(
    size: usize,
    policy: impl FnOnce(&VirtualClock) -> Policy<ManualTimer>,
    pace: impl Fn(&Arrival) -> Pace + Send + Sync + 'static,
) -> Setup {
    setup_served(size, policy, |objects| versioned(objects, pace)).await
}

/// As [`setup`], the server answering as the behavior `served` makes of its objects.
async fn setup_served(
    size: usize,
    policy: impl FnOnce(&VirtualClock) -> Policy<ManualTimer>,
    served: impl FnOnce(Objects) -> Behavior,
) -> Setup {
    let clock = VirtualClock::new();
    let objects = Objects::new();
    objects.put("data/big.bin", object(size, 0));
    let server = Server::http(served(objects.clone()), clock.clock())
        .await
        .unwrap();
    let inner = Counted::new(store(&server.url("/")).unwrap());
    let store = HedgedStore::new(inner, policy(&clock)).buffer_limit(LIMIT);
    Setup {
        clock,
        server,
        objects,
        store: Arc::new(store),
    }
}

fn copies(max_copies: usize) -> impl FnOnce(&VirtualClock) -> Policy<ManualTimer> {
    move |clock| clock.policy(max_copies, DELAY)
}

/// Held after `bytes`, until the test releases the key or the client drops the body.
fn stall(bytes: u64) -> Pace {
    Pace::StallAfter {
        bytes,
        hold: Hold::Released,
    }
}

/// Every read's first answer stalls after `bytes`; a resume (it has `If-Match`) does not.
fn first_answers_stall(bytes: u64) -> impl Fn(&Arrival) -> Pace + Send + Sync + 'static {
    move |arrival| match arrival.header("if-match") {
        None => stall(bytes),
        Some(_) => Pace::Whole,
    }
}

/// Reads the whole object as a stream: the bytes it yielded, and the error that ended
/// it, if one did.
async fn read_whole(store: Store) -> (Vec<u8>, Option<Error>) {
    let mut bytes = Vec::new();
    let mut stream = match store.get(&path()).await {
        Ok(result) => result.into_stream(),
        Err(error) => return (bytes, Some(error)),
    };
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(error) => return (bytes, Some(error)),
        }
    }
    (bytes, None)
}

/// Waits until the reader got `bytes` body bytes and waits for more; lets the body stay
/// quiet until the watch finds it stalled, then for the policy's delay, when the resume
/// race's hedge is due; returns once the server saw `requests` requests.
async fn resume_at(s: &Setup, bytes: u64, requests: usize) {
    hedge_due_at(s, bytes).await;
    s.clock.advance(DELAY);
    s.server.until_arrived(KEY, requests).await;
}

/// As [`resume_at`], up to the resume race's hedge being due: the delay left to wait.
async fn hedge_due_at(s: &Setup, bytes: u64) {
    let inner = s.store.inner();
    until(
        || received(inner) == bytes,
        "the bytes sent before the stall",
    )
    .await;
    let now = s.clock.now();
    let timer = s.clock.timer();
    let watch = timer.next_deadline().expect("a quiet body is watched");
    assert!(watch >= now + DELAY, "never stalled before the delay");
    s.clock.advance(watch - now);
    let raced = s.clock.now();
    let hedge_due = || timer.next_deadline() == Some(raced + DELAY);
    until(hedge_due, "the resume race, its hedge due at the delay").await;
}

#[tokio::test]
async fn an_http_store_body_stalled_mid_read_is_resumed_from_where_it_stopped() {
    let s = setup(SIZE, copies(2), first_answers_stall(STALL_AT)).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    resume_at(&s, STALL_AT, 2).await;

    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0), "every byte once, in order");
    let resume = &s.server.arrivals(KEY)[1];
    let rest = format!("bytes={STALL_AT}-{}", SIZE - 1);
    assert_eq!(resume.header("range"), Some(rest.as_str()), "the rest");
    assert_eq!(
        resume.header("if-match"),
        Some("\"v1\""),
        "of the same version"
    );
    assert_eq!(
        resume.at,
        2 * DELAY,
        "quiet for the delay, then raced for one more"
    );
    let stats = s.store.policy().stats();
    assert_eq!(
        (stats.hedges, stats.hedge_wins),
        (1, 1),
        "a resume is a hedge"
    );
    assert_eq!(stats.calls, 2, "the read, and its resume race");
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

/// Reads a body trickled in `pieces` of `piece` bytes, the test letting each next piece go
/// once `step` passed; the bytes read.
async fn read_trickle(s: &Setup, piece: u64, pieces: u64, step: Duration, first_gap: bool) {
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    let inner = s.store.inner();
    for sent in 1..pieces {
        until(|| received(inner) == sent * piece, "the reader, waiting").await;
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
}

#[tokio::test]
async fn a_trickling_body_that_never_stops_is_read_to_its_end_without_a_resume() {
    const PIECE: u64 = 4096;
    let trickle = Pace::Trickle {
        piece: PIECE as usize,
        every: Hold::Released,
    };
    let s = setup(SIZE, copies(2), move |_: &Arrival| trickle).await;
    // A piece every 1.5 delays: the first gap comes before the body has a pace, so it
    // is a stall and starts a race, but the body's next piece beats the resume's due
    // time; from then on 4 times its mean wait (6 delays) is its allowance.
    read_trickle(&s, PIECE, SIZE as u64 / PIECE, DELAY * 3 / 2, true).await;

    assert_eq!(s.server.arrivals(KEY).len(), 1, "no resume was sent");
    let stats = s.store.policy().stats();
    assert_eq!(stats.hedges, 0);
    assert_eq!(stats.calls, 2, "the read, and one race won by the body");
}

#[tokio::test]
async fn a_healthy_large_read_sends_one_request() {
    const PIECE: u64 = 4096;
    let trickle = Pace::Trickle {
        piece: PIECE as usize,
        every: Hold::Released,
    };
    let s = setup(SIZE, copies(2), move |_: &Arrival| trickle).await;
    // 64 pieces, half a delay apart: 32 delays in all, never quiet for one.
    read_trickle(&s, PIECE, SIZE as u64 / PIECE, DELAY / 2, false).await;

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

/// `versioned`'s answers paced by `pace`, the body of each answer `shaped` picks replaced
/// by what `reshape` makes of it, with the `Content-Length` it says, its `Content-Range`
/// as it was: a server whose body is not the range it names.
fn resized(
    pace: impl Fn(&Arrival) -> Pace + Send + Sync + 'static,
    shaped: fn(&Arrival) -> bool,
    reshape: fn(Bytes) -> (Bytes, usize),
) -> impl FnOnce(Objects) -> Behavior {
    move |objects| {
        let served = versioned(objects, pace);
        Arc::new(move |arrival: &Arrival| {
            let answer = served(arrival);
            match &answer.reply {
                Reply::Bytes(body) if shaped(arrival) => {
                    let (body, length) = reshape(body.clone());
                    let length = length.to_string();
                    answer
                        .header("content-length", &length)
                        .reply(Reply::Bytes(body))
                }
                _ => answer,
            }
        })
    }
}

fn a_resume(arrival: &Arrival) -> bool {
    arrival.header("if-match").is_some()
}

fn a_first_answer(arrival: &Arrival) -> bool {
    !a_resume(arrival)
}

/// 80,000 bytes short of its range, and its length saying so.
fn cut_short(body: Bytes) -> (Bytes, usize) {
    let cut = body.slice(..body.len() - 80_000);
    (cut.clone(), cut.len())
}

/// 1,000 bytes past its range, and its length saying so.
fn overrun(body: Bytes) -> (Bytes, usize) {
    let long: Bytes = [&body[..], &[7; 1000]].concat().into();
    (long.clone(), long.len())
}

/// The read of `expected` failed with an error saying `what`, having yielded some of
/// its bytes, each once and in order, and none past its end.
fn assert_failed_within(bytes: &[u8], error: Option<Error>, expected: &[u8], what: &str) {
    let Some(error @ Error::Generic { .. }) = error else {
        panic!("the read should fail: {error:?}");
    };
    assert!(error.to_string().contains(what), "{error}");
    assert!(bytes.len() <= expected.len(), "{} bytes", bytes.len());
    assert_eq!(bytes, &expected[..bytes.len()], "every byte once, in order");
}

/// Reads the whole object, its first answer stalled and resumed, the resume's body
/// `reshape`d.
async fn read_resized_resume(reshape: fn(Bytes) -> (Bytes, usize)) -> (Vec<u8>, Option<Error>) {
    let served = resized(first_answers_stall(STALL_AT), a_resume, reshape);
    let s = setup_served(SIZE, copies(2), served).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    resume_at(&s, STALL_AT, 2).await;
    read.await.unwrap()
}

#[tokio::test]
async fn a_resume_that_ends_before_the_reads_end_fails_the_read() {
    let (bytes, error) = read_resized_resume(cut_short).await;
    assert_failed_within(&bytes, error, &object(SIZE, 0), "ended at byte");
    assert_eq!(bytes.len(), SIZE - 80_000, "every byte the resume had");
}

#[tokio::test]
async fn a_resume_that_runs_past_the_reads_end_fails_the_read() {
    let (bytes, error) = read_resized_resume(overrun).await;
    assert_failed_within(&bytes, error, &object(SIZE, 0), "ran past the end");
}

/// Streams bytes 1000..200,000, the first answer's body `resize`d and never stalled.
async fn read_resized_first_answer(
    resize: fn(Bytes) -> (Bytes, usize),
) -> (Vec<u8>, Option<Error>) {
    let served = resized(|_: &Arrival| Pace::Whole, a_first_answer, resize);
    let s = setup_served(SIZE, copies(2), served).await;
    let options = GetOptions::new().with_range(Some(GetRange::Bounded(1000..200_000)));
    let mut stream = s
        .store
        .get_opts(&path(), options)
        .await
        .unwrap()
        .into_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(error) => return (bytes, Some(error)),
        }
    }
    assert_eq!(s.server.arrivals(KEY).len(), 1, "no stall, no resume");
    (bytes, None)
}

#[tokio::test]
async fn a_first_answer_that_ends_before_the_reads_end_fails_the_read() {
    let (bytes, error) = read_resized_first_answer(cut_short).await;
    let expected = object(SIZE, 0).slice(1000..200_000);
    assert_failed_within(
        &bytes,
        error,
        &expected,
        "ended at byte 120000 of a read ending at 200000",
    );
    assert_eq!(bytes.len(), expected.len() - 80_000);
}

#[tokio::test]
async fn a_first_answer_that_runs_past_the_reads_end_fails_the_read() {
    let (bytes, error) = read_resized_first_answer(overrun).await;
    let expected = object(SIZE, 0).slice(1000..200_000);
    assert_failed_within(&bytes, error, &expected, "ran past the end");
}

/// `versioned`'s answers paced by `first_answers_stall(STALL_AT)`, their ETag weak: an
/// `If-Match` naming it fails, as a strong comparison of a weak tag does.
fn weak_e_tags(objects: Objects) -> Behavior {
    let served = versioned(objects, first_answers_stall(STALL_AT));
    Arc::new(move |arrival: &Arrival| {
        if a_resume(arrival) {
            return Answer::ok().status(412).reply(Reply::Bytes(Bytes::new()));
        }
        let answer = served(arrival);
        let weak = format!("W/{}", answer.headers["etag"].to_str().unwrap());
        answer.header("etag", &weak)
    })
}

#[tokio::test]
async fn a_weak_etag_is_not_sent_as_if_match_and_its_stall_is_waited_out() {
    let s = setup_served(SIZE, copies(2), weak_e_tags).await;
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    let inner = s.store.inner();
    until(|| received(inner) == STALL_AT, "the bytes before the stall").await;
    assert_eq!(
        s.clock.timer().next_deadline(),
        None,
        "nothing names the bytes a resume would read: the body is not watched"
    );
    s.clock.advance(NEVER);
    s.server.release(KEY);

    let (bytes, error) = read.await.unwrap();
    assert!(error.is_none(), "not a precondition error: {error:?}");
    assert_eq!(bytes, object(SIZE, 0));
    assert_eq!(s.server.arrivals(KEY).len(), 1);
}

const BREAK_AT: u64 = 150_000;

/// A first answer's body breaks after `BREAK_AT` bytes once the test lets it (the server
/// closes its connection there); a resume's does not.
fn first_answers_break(arrival: &Arrival) -> Pace {
    match a_resume(arrival) {
        false => Pace::BreakAfter {
            bytes: BREAK_AT,
            hold: Hold::Released,
        },
        true => Pace::Whole,
    }
}

/// Reads the whole object, its first answer's body broken once the reader has every
/// byte before the break.
async fn read_broken(s: &Setup) -> (Vec<u8>, Option<Error>) {
    let read = tokio::spawn(read_whole(Arc::clone(&s.store)));
    let inner = s.store.inner();
    until(|| received(inner) == BREAK_AT, "the bytes before the break").await;
    s.server.release(KEY);
    read.await.unwrap()
}

#[tokio::test]
async fn a_body_that_breaks_mid_read_is_resumed_at_once_from_where_it_broke() {
    let served = |objects| versioned(objects, first_answers_break);
    let s = setup_served(SIZE, copies(2), served).await;
    // No clock moves: a broken body is a failed copy, and the next starts at once.
    let (bytes, error) = read_broken(&s).await;

    assert!(error.is_none(), "{error:?}");
    assert_eq!(bytes, object(SIZE, 0), "every byte once, in order");
    let arrivals = s.server.arrivals(KEY);
    assert_eq!(arrivals.len(), 2, "the broken read and its resume");
    let rest = format!("bytes={BREAK_AT}-{}", SIZE - 1);
    assert_eq!(arrivals[1].header("range"), Some(rest.as_str()));
    assert_eq!(arrivals[1].header("if-match"), Some("\"v1\""));
    let stats = s.store.policy().stats();
    assert_eq!(
        (stats.hedges, stats.hedge_wins),
        (1, 1),
        "a resume is a hedge"
    );
}

#[tokio::test]
async fn a_body_that_breaks_with_no_copy_left_fails_the_read() {
    let served = |objects| versioned(objects, first_answers_break);
    let s = setup_served(SIZE, copies(1), served).await;
    let (bytes, error) = read_broken(&s).await;

    assert!(error.is_some(), "the body's own error");
    assert!(
        bytes == object(SIZE, 0)[..BREAK_AT as usize],
        "the bytes before it"
    );
    assert_eq!(s.server.arrivals(KEY).len(), 1, "no copy past the cap");
}
