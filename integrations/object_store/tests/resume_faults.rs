//! Resuming a stalled body when the answers are at fault: a resume or a first answer of
//! the wrong length, a weak ETag, a body that breaks. `HedgedStore` over a real
//! `HttpStore` against the loopback object server, as in `resume.rs`.

mod common;
mod resume_support;

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use hedging_test_server::object::{versioned, Objects};
use hedging_test_server::{until, Answer, Arrival, Behavior, Hold, Pace, Reply, NEVER};
use object_store::{Error, GetOptions, GetRange, ObjectStore};

use common::received;
use resume_support::*;

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
