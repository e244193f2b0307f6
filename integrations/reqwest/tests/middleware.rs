//! `HedgeMiddleware` in a real `reqwest_middleware` client against a loopback hyper
//! server that stalls the first request to each path for 200 ms. The server counts the
//! copies it receives; time bounds are generous (the machine may be busy).

#[path = "../examples/hedged_gets/loopback.rs"]
mod loopback;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream;
use hedging::timer::TokioTimer;
use hedging::{Policy, Stats, Verdict};
use http::Extensions;
use loopback::Server;
use reqwest::{Method, Request, Response, StatusCode};
use reqwest_hedging::{ClassifyResponse, DefaultClassify, HedgeMiddleware, NoHedge};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

const STALL: Duration = Duration::from_millis(200);
const DELAY: Duration = Duration::from_millis(20);

fn policy() -> Policy<TokioTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(DELAY)
        .timer(TokioTimer::new())
        .build()
}

async fn setup() -> (Server, Policy<TokioTimer>, ClientWithMiddleware) {
    let server = Server::start(STALL, None).await.unwrap();
    let policy = policy();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();
    (server, policy, client)
}

async fn text(response: reqwest_middleware::Result<Response>) -> (StatusCode, String) {
    let response = response.expect("a response");
    let status = response.status();
    (status, response.text().await.expect("a body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_returns_in_about_the_hedge_delay() {
    let (server, policy, client) = setup().await;

    let started = Instant::now();
    let (status, body) = text(client.get(server.url("/stall/get")).send().await).await;
    let elapsed = started.elapsed();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "copy 1 of /stall/get", "the hedge answered");
    assert!(elapsed < STALL, "took {elapsed:?}");
    assert_eq!(server.arrivals("/stall/get").len(), 2);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
    println!("hedged GET answered in {elapsed:?} (delay {DELAY:?}, stall {STALL:?})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn post_and_put_are_sent_once() {
    let (server, policy, client) = setup().await;

    let post = client.post(server.url("/stall/post")).body("order").send();
    let (_, body) = text(post.await).await;
    assert_eq!(
        body, "copy 0 of /stall/post",
        "the stalled original answered"
    );
    let put = client.put(server.url("/stall/put")).body("state").send();
    let (_, body) = text(put.await).await;
    assert_eq!(body, "copy 0 of /stall/put");

    assert_eq!(server.arrivals("/stall/post").len(), 1);
    assert_eq!(server.arrivals("/stall/put").len(), 1);
    assert_eq!(
        policy.stats(),
        Stats::default(),
        "passed through, not counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_hedge_sends_a_get_once() {
    let (server, policy, client) = setup().await;

    let request = client
        .get(server.url("/stall/opted-out"))
        .with_extension(NoHedge);
    let (_, body) = text(request.send().await).await;
    assert_eq!(body, "copy 0 of /stall/opted-out");
    assert_eq!(server.arrivals("/stall/opted-out").len(), 1);
    assert_eq!(policy.stats(), Stats::default());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_503_from_the_first_copy_is_retried_by_the_second() {
    let (server, policy, client) = setup().await;

    let started = Instant::now();
    let (status, body) = text(client.get(server.url("/unavailable/a")).send().await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "copy 1 of /unavailable/a");
    // Failure accelerates: the second copy did not wait for the delay... nor the stall.
    assert!(started.elapsed() < STALL);
    assert_eq!(server.arrivals("/unavailable/a").len(), 2);
    let stats = policy.stats();
    assert_eq!((stats.wins, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_body_is_sent_once_and_counted() {
    let server = Server::start(STALL, None).await.unwrap();
    let policy = policy();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()).methods([Method::POST]))
        .build();

    let chunks = stream::iter(["st", "re", "am"].map(Ok::<_, std::io::Error>));
    let request = client
        .post(server.url("/stall/stream"))
        .body(reqwest::Body::wrap_stream(chunks));
    let (_, body) = text(request.send().await).await;
    assert_eq!(
        body, "copy 0 of /stall/stream",
        "no copy raced the stalled original"
    );

    let arrivals = server.arrivals("/stall/stream");
    assert_eq!(arrivals.len(), 1);
    assert_eq!(arrivals[0].body, Bytes::from_static(b"stream"));
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 1,
            wins: 1,
            ..Stats::default()
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_on_a_get_with_a_streaming_body_returns_at_once() {
    let server = Server::start(STALL, None).await.unwrap();
    let policy = policy();
    // A pushback far beyond the bound below, and a classifier that would wait it out.
    let patient = DefaultClassify::new().max_retry_after(Duration::from_secs(1000));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()).classify(patient))
        .build();

    let chunks = stream::iter(["st", "re", "am"].map(Ok::<_, std::io::Error>));
    let request = client
        .get(server.url("/unavailable/stream"))
        .header("x-retry-after", "1000")
        .body(reqwest::Body::wrap_stream(chunks));
    let answer = tokio::time::timeout(Duration::from_secs(10), request.send())
        .await
        .expect("the call waited out a Retry-After no copy can follow");
    let (status, _) = text(answer).await;

    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "the 503 is the answer"
    );
    assert_eq!(server.arrivals("/unavailable/stream").len(), 1);
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.failures, stats.hedges), (1, 1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn methods_replace_the_default_list() {
    let server = Server::start(STALL, None).await.unwrap();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy()).methods([Method::POST]))
        .build();

    let post = client.post(server.url("/stall/search")).body("query");
    let (_, body) = text(post.send().await).await;
    assert_eq!(body, "copy 1 of /stall/search");
    let arrivals = server.arrivals("/stall/search");
    assert_eq!(arrivals.len(), 2);
    assert!(
        arrivals.iter().all(|a| a.body == "query"),
        "each copy got the body"
    );

    let (_, body) = text(client.get(server.url("/stall/get")).send().await).await;
    assert_eq!(body, "copy 0 of /stall/get", "GET is no longer in the list");
    assert_eq!(server.arrivals("/stall/get").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_holds_the_next_copy() {
    let (server, policy, client) = setup().await;

    let request = client
        .get(server.url("/unavailable/pushback"))
        .header("x-retry-after", "1");
    let (status, _) = text(request.send().await).await;
    assert_eq!(status, StatusCode::OK);
    let arrivals = server.arrivals("/unavailable/pushback");
    assert_eq!(arrivals.len(), 2);
    let gap = arrivals[1].at - arrivals[0].at;
    assert!(
        gap >= Duration::from_secs(1),
        "the hedge came {gap:?} after the 503"
    );
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_as_an_http_date_holds_the_next_copy() {
    let server = Server::start(STALL, None).await.unwrap();
    // The date has whole seconds, so the wait is between 1 and 2 s: raise the 1 s cap.
    let patient = reqwest_hedging::DefaultClassify::new().max_retry_after(Duration::from_secs(3));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy()).classify(patient))
        .build();
    let date = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(2));
    let request = client
        .get(server.url("/unavailable/date"))
        .header("x-retry-after", date);
    let (status, _) = text(request.send().await).await;
    assert_eq!(status, StatusCode::OK);
    let arrivals = server.arrivals("/unavailable/date");
    assert_eq!(arrivals.len(), 2);
    let gap = arrivals[1].at - arrivals[0].at;
    assert!(
        gap >= Duration::from_millis(900),
        "the hedge came {gap:?} after the 503"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_retry_after_returns_the_503() {
    let (server, policy, client) = setup().await;

    let request = client
        .get(server.url("/unavailable/long"))
        .header("x-retry-after", "120");
    let started = Instant::now();
    let (status, _) = text(request.send().await).await;
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "stopped: the 503 is the answer"
    );
    assert!(started.elapsed() < STALL);
    assert_eq!(server.arrivals("/unavailable/long").len(), 1);
    let stats = policy.stats();
    assert_eq!((stats.failures, stats.hedges), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_errors_start_the_next_copy() {
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let policy = policy();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()))
        .build();

    let error = client.get(url).send().await.unwrap_err();
    assert!(error.is_connect(), "{error}");
    let stats = policy.stats();
    assert_eq!((stats.failures, stats.hedges), (1, 1), "both copies tried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classify_replaces_the_default_verdicts() {
    let server = Server::start(STALL, None).await.unwrap();
    let policy = policy();
    // Treat every 503 as final: no second copy.
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(HedgeMiddleware::new(policy.clone()).classify(
            |result: &reqwest_middleware::Result<Response>| match result {
                Ok(response) if response.status() == StatusCode::SERVICE_UNAVAILABLE => {
                    Verdict::Fatal
                }
                other => reqwest_hedging::DefaultClassify::new().verdict(other),
            },
        ))
        .build();

    let (status, _) = text(client.get(server.url("/unavailable/final")).send().await).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(server.arrivals("/unavailable/final").len(), 1);
}

/// Below the hedge: stamps each copy's extensions with the order the copy reached it,
/// records the tag the caller put there, and records which copies came back.
struct Stamp {
    copies: Mutex<u32>,
    tags_seen: Arc<Mutex<Vec<&'static str>>>,
    answered: Arc<Mutex<Vec<u32>>>,
}

#[derive(Clone, Debug, PartialEq)]
struct CopyStamp(u32);

#[derive(Clone, Debug)]
struct Tag(&'static str);

#[async_trait::async_trait]
impl Middleware for Stamp {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let copy = {
            let mut copies = self.copies.lock().unwrap();
            *copies += 1;
            *copies - 1
        };
        if let Some(Tag(tag)) = extensions.get::<Tag>() {
            self.tags_seen.lock().unwrap().push(tag);
        }
        extensions.insert(CopyStamp(copy));
        let response = next.run(request, extensions).await;
        self.answered.lock().unwrap().push(copy);
        response
    }
}

/// Above the hedge: tags the caller's extensions, and records the stamp it finds on them
/// once the hedged call returns.
struct Probe {
    stamp_returned: Arc<Mutex<Option<CopyStamp>>>,
}

#[async_trait::async_trait]
impl Middleware for Probe {
    async fn handle(
        &self,
        request: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        extensions.insert(Tag("caller"));
        let response = next.run(request, extensions).await;
        *self.stamp_returned.lock().unwrap() = extensions.get::<CopyStamp>().cloned();
        response
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_winners_extensions_are_written_back() {
    let server = Server::start(STALL, None).await.unwrap();
    let stamp_returned = Arc::new(Mutex::new(None));
    let tags_seen = Arc::new(Mutex::new(Vec::new()));
    let answered = Arc::new(Mutex::new(Vec::new()));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(Probe {
            stamp_returned: Arc::clone(&stamp_returned),
        })
        .with(HedgeMiddleware::new(policy()))
        .with(Stamp {
            copies: Mutex::new(0),
            tags_seen: Arc::clone(&tags_seen),
            answered: Arc::clone(&answered),
        })
        .build();

    let (status, _) = text(client.get(server.url("/stall/extensions")).send().await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(server.arrivals("/stall/extensions").len(), 2, "hedged");
    // The copy that answered first won; the stalled one was dropped unanswered.
    let answered = answered.lock().unwrap().clone();
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(
        *stamp_returned.lock().unwrap(),
        Some(CopyStamp(answered[0])),
        "the winner's extensions came back"
    );
    assert_eq!(
        *tags_seen.lock().unwrap(),
        ["caller", "caller"],
        "each copy got a clone of the caller's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_outside_hedge_inside_retries_a_failed_hedged_call() {
    use reqwest_retry::{policies::ExponentialBackoff, RetryTransientMiddleware};

    let server = Server::start(STALL, None).await.unwrap();
    let policy = policy();
    let retries = ExponentialBackoff::builder()
        .retry_bounds(Duration::from_millis(1), Duration::from_millis(5))
        .build_with_max_retries(1);
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryTransientMiddleware::new_with_policy(retries))
        .with(HedgeMiddleware::new(policy.clone()))
        .build();

    // Both copies of the first attempt get a 503; the retry middleware's second attempt
    // is a new hedged call, whose original succeeds.
    let url = server.url("/unavailable-twice/a");
    let (status, body) = text(client.get(url).send().await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "copy 2 of /unavailable-twice/a");
    assert_eq!(server.arrivals("/unavailable-twice/a").len(), 3);
    assert_eq!(
        policy.stats(),
        Stats {
            calls: 2,
            wins: 1,
            failures: 1,
            hedges: 1,
            ..Stats::default()
        }
    );
}
