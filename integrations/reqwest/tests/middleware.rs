//! `HedgeMiddleware` in a real `reqwest_middleware` client against the shared loopback
//! hyper server, which answers each copy as the request's `x-script` header says and
//! counts the copies it receives. The policy runs on a virtual clock the tests advance;
//! no test waits for time, and one smoke test runs on the real clock.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use common::{send, send_held, text};
use futures::stream;
use hedging::timer::{ManualTimer, Timer};
use hedging::{Policy, Stats, Verdict};
use hedging_test_server::http::scripted;
use hedging_test_server::{overtakes_the_stall, real_clock, tokio_policy};
use hedging_test_server::{Server, VirtualClock, HANG_GUARD, SCRIPT};
use http::Extensions;
use reqwest::{Method, Request, Response, StatusCode};
use reqwest_hedging::{ClassifyResponse, DefaultClassify, HedgeMiddleware};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next, RequestBuilder};
use tokio::task::JoinHandle;

const DELAY: Duration = Duration::from_millis(20);

/// A virtual clock, and a scripted server stamping arrivals with it.
async fn server() -> (VirtualClock, Server) {
    let clock = VirtualClock::new();
    let server = Server::http(scripted(), clock.clock()).await.unwrap();
    (clock, server)
}

/// A client whose requests go through `hedge`.
fn client<T: Timer + Send + Sync + 'static, C: ClassifyResponse>(
    hedge: HedgeMiddleware<T, C>,
) -> ClientWithMiddleware
where
    T::Sleep: Send,
{
    ClientBuilder::new(reqwest::Client::new())
        .with(hedge)
        .build()
}

/// The virtual clock, a server on it, the policy and a client hedging by it.
async fn setup() -> (
    VirtualClock,
    Server,
    Policy<ManualTimer>,
    ClientWithMiddleware,
) {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()));
    (clock, server, policy, client)
}

/// Sends `request` and waits for its answer with no virtual time passing: a call with
/// nothing left to wait for returns at once. Its status.
async fn answered_at_once(clock: &VirtualClock, request: RequestBuilder) -> StatusCode {
    let answer = tokio::time::timeout(HANG_GUARD, request.send())
        .await
        .expect("held, though no copy could follow");
    assert_eq!(clock.now(), Duration::ZERO, "nothing was waited out");
    text(answer).await.0
}

/// Sends `request` to `path`: its 503 is its answer at once (`why`), the server saw it
/// once, and it counts as a failure with no hedge.
async fn the_503_is_the_answer(
    clock: &VirtualClock,
    server: &Server,
    policy: &Policy<ManualTimer>,
    request: RequestBuilder,
    path: &str,
    why: &str,
) {
    let status = answered_at_once(clock, request).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{why}");
    assert_eq!(server.arrivals(path).len(), 1);
    let stats = policy.stats();
    assert_eq!((stats.failures, stats.hedges), (1, 0));
}

/// Waits for `call` to `path`, answered 200 by its second copy, the last the server saw:
/// how long after the first copy that one arrived.
async fn answered_by_the_hedge(
    call: JoinHandle<reqwest_middleware::Result<Response>>,
    server: &Server,
    path: &str,
) -> Duration {
    let (status, _) = text(call.await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let arrivals = server.arrivals(path);
    assert_eq!(arrivals.len(), 2);
    arrivals[1].at - arrivals[0].at
}

/// Sends a GET of `path` answered as `script` says (a 503 with a `Retry-After`, then a
/// 200): the call, and how long the race holds its next copy, once it holds it.
async fn pushed_back(
    clock: &VirtualClock,
    server: &Server,
    client: &ClientWithMiddleware,
    path: &str,
    script: &str,
) -> (JoinHandle<reqwest_middleware::Result<Response>>, Duration) {
    let call = send(client.get(server.url(path)).header(SCRIPT, script));
    let wait = clock.held_for(DELAY).await;
    (call, wait)
}

#[tokio::test]
async fn a_get_returns_in_about_the_hedge_delay() {
    let (clock, server, policy, client) = setup().await;

    let call = send(
        client
            .get(server.url("/stall/get"))
            .header(SCRIPT, "hold | ok"),
    );
    clock.hedge(&server, "/stall/get", 1, DELAY).await;
    let (status, body) = text(call.await.unwrap()).await;

    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "copy 1 of /stall/get", "the hedge answered");
    let arrivals = server.arrivals("/stall/get");
    assert_eq!(arrivals.len(), 2);
    assert_eq!(arrivals[1].at, DELAY, "the hedge went out at its delay");
    server.until_dropped(1).await; // the held original: its connection closed
    let stats = policy.stats();
    assert_eq!((stats.calls, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_get_overtakes_a_stall_on_the_real_clock() {
    let server = Server::http(scripted(), real_clock()).await.unwrap();
    let policy = tokio_policy(DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()));

    let get = client.get(server.url("/smoke"));
    let answer = overtakes_the_stall(get.header(SCRIPT, "sleep=10000 | ok").send()).await;

    assert_eq!(
        text(answer).await.1,
        "copy 1 of /smoke",
        "the hedge answered"
    );
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn a_503_from_the_first_copy_is_retried_by_the_second() {
    let (_clock, server, policy, client) = setup().await;

    let get = client.get(server.url("/unavailable/a"));
    let (status, body) = text(get.header(SCRIPT, "status=503 | ok").send().await).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "copy 1 of /unavailable/a");
    // Failure accelerates: the second copy did not wait for the delay... nor the stall.
    let arrivals = server.arrivals("/unavailable/a");
    assert_eq!(arrivals.len(), 2);
    assert_eq!(arrivals[1].at, Duration::ZERO);
    let stats = policy.stats();
    assert_eq!((stats.wins, stats.hedges, stats.hedge_wins), (1, 1, 1));
}

#[tokio::test]
async fn a_retry_after_on_a_get_with_a_streaming_body_returns_at_once() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    // A pushback far beyond any time the test lets pass, and a classifier that would
    // wait it out.
    let patient = DefaultClassify::new().max_retry_after(Duration::from_secs(1000));
    let client = client(HedgeMiddleware::new(policy.clone()).classify(patient));

    let chunks = stream::iter(["st", "re", "am"].map(Ok::<_, std::io::Error>));
    let request = client
        .get(server.url("/unavailable/stream"))
        .header(SCRIPT, "status=503;retry-after=1000")
        .body(reqwest::Body::wrap_stream(chunks));
    let why = "the 503 is the answer";
    the_503_is_the_answer(
        &clock,
        &server,
        &policy,
        request,
        "/unavailable/stream",
        why,
    )
    .await;
    assert_eq!(policy.stats().calls, 1);
}

#[tokio::test]
async fn methods_replace_the_default_list() {
    let (clock, server) = server().await;
    let client = client(HedgeMiddleware::new(clock.policy(2, DELAY)).methods([Method::POST]));

    let post = client.post(server.url("/stall/search")).body("query");
    let call = send(post.header(SCRIPT, "hold | ok"));
    clock.hedge(&server, "/stall/search", 1, DELAY).await;
    let (_, body) = text(call.await.unwrap()).await;
    assert_eq!(body, "copy 1 of /stall/search");
    let arrivals = server.arrivals("/stall/search");
    assert_eq!(arrivals.len(), 2);
    assert!(
        arrivals.iter().all(|a| a.body == "query"),
        "each copy got the body"
    );

    let get = client.get(server.url("/stall/get"));
    let (_, body) = send_held(&clock, &server, "/stall/get", get).await;
    assert_eq!(body, "copy 0 of /stall/get", "GET is no longer in the list");
    assert_eq!(server.arrivals("/stall/get").len(), 1);
}

#[tokio::test]
async fn retry_after_holds_the_next_copy() {
    let (clock, server, policy, client) = setup().await;

    let script = "status=503;retry-after=1 | ok";
    let (call, wait) = pushed_back(&clock, &server, &client, "/unavailable/pushback", script).await;
    assert_eq!(wait, Duration::from_secs(1));
    clock.advance(wait - Duration::from_millis(1));
    assert_eq!(server.requests(), 1, "held for the Retry-After");
    clock.advance(Duration::from_millis(1));
    let gap = answered_by_the_hedge(call, &server, "/unavailable/pushback").await;
    assert_eq!(
        gap,
        Duration::from_secs(1),
        "the hedge came {gap:?} after the 503"
    );
    assert_eq!(policy.stats().hedge_wins, 1);
}

#[tokio::test]
async fn retry_after_as_an_http_date_holds_the_next_copy() {
    let (clock, server) = server().await;
    // The date has whole seconds, so the wait is between 2 and 3 s: raise the 1 s cap.
    let patient = reqwest_hedging::DefaultClassify::new().max_retry_after(Duration::from_secs(5));
    let client = client(HedgeMiddleware::new(clock.policy(2, DELAY)).classify(patient));
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3));
    let script = format!("status=503;retry-after={date} | ok");
    let (call, wait) = pushed_back(&clock, &server, &client, "/unavailable/date", &script).await;
    clock.advance(wait);
    let gap = answered_by_the_hedge(call, &server, "/unavailable/date").await;
    assert!(
        gap >= Duration::from_secs(1) && gap <= Duration::from_secs(3),
        "the hedge came {gap:?} after the 503"
    );
}

#[tokio::test]
async fn a_long_retry_after_returns_the_503() {
    let (clock, server, policy, client) = setup().await;

    let request = client
        .get(server.url("/unavailable/long"))
        .header(SCRIPT, "status=503;retry-after=120 | ok");
    let why = "stopped: the 503 is the answer";
    the_503_is_the_answer(&clock, &server, &policy, request, "/unavailable/long", why).await;
}

#[tokio::test]
async fn connect_errors_start_the_next_copy() {
    // A port that was just free: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let policy = VirtualClock::new().policy(2, DELAY);
    let client = client(HedgeMiddleware::new(policy.clone()));

    let error = client.get(url).send().await.unwrap_err();
    assert!(error.is_connect(), "{error}");
    let stats = policy.stats();
    assert_eq!((stats.failures, stats.hedges), (1, 1), "both copies tried");
}

#[tokio::test]
async fn classify_replaces_the_default_verdicts() {
    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    // Treat every 503 as final: no second copy.
    let client = client(HedgeMiddleware::new(policy.clone()).classify(
        |result: &reqwest_middleware::Result<Response>| match result {
            Ok(response) if response.status() == StatusCode::SERVICE_UNAVAILABLE => Verdict::Fatal,
            other => reqwest_hedging::DefaultClassify::new().verdict(other),
        },
    ));

    let get = client.get(server.url("/unavailable/final"));
    let (status, _) = text(get.header(SCRIPT, "status=503 | ok").send().await).await;
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

#[tokio::test]
async fn the_winners_extensions_are_written_back() {
    let (clock, server) = server().await;
    let stamp_returned = Arc::new(Mutex::new(None));
    let tags_seen = Arc::new(Mutex::new(Vec::new()));
    let answered = Arc::new(Mutex::new(Vec::new()));
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(Probe {
            stamp_returned: Arc::clone(&stamp_returned),
        })
        .with(HedgeMiddleware::new(clock.policy(2, DELAY)))
        .with(Stamp {
            copies: Mutex::new(0),
            tags_seen: Arc::clone(&tags_seen),
            answered: Arc::clone(&answered),
        })
        .build();

    let get = client.get(server.url("/stall/extensions"));
    let call = send(get.header(SCRIPT, "hold | ok"));
    clock.hedge(&server, "/stall/extensions", 1, DELAY).await;
    let (status, _) = text(call.await.unwrap()).await;
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

#[tokio::test]
async fn retry_outside_hedge_inside_retries_a_failed_hedged_call() {
    use reqwest_retry::{policies::ExponentialBackoff, RetryTransientMiddleware};

    let (clock, server) = server().await;
    let policy = clock.policy(2, DELAY);
    let retries = ExponentialBackoff::builder()
        .retry_bounds(Duration::from_millis(1), Duration::from_millis(5))
        .build_with_max_retries(1);
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(RetryTransientMiddleware::new_with_policy(retries))
        .with(HedgeMiddleware::new(policy.clone()))
        .build();

    // Both copies of the first attempt get a 503; the retry middleware's second attempt
    // is a new hedged call, whose original succeeds.
    let get = client.get(server.url("/unavailable-twice/a"));
    let script = "status=503 | status=503 | ok";
    let (status, body) = text(get.header(SCRIPT, script).send().await).await;
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
