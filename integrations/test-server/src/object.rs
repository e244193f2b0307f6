//! Object reads for [`Server::http`](crate::Server::http): [`objects`] answers GETs (whole or
//! one byte range) and HEADs as an object store's HTTP API does, stalling chosen reads;
//! [`HyperConnector`] sends `object_store::http::HttpStore`'s requests with hyper-util;
//! [`table_server`] is the range-read examples' server.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_RANGE, ETAG, IF_MATCH, RANGE};
use http::Method;
use http_body_util::BodyExt;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody,
    HttpResponse, HttpResponseBody, HttpService,
};
use object_store::http::{HttpBuilder, HttpStore};
use object_store::{ClientOptions, RetryConfig};

use crate::answer::{Answer, Behavior, Reply};
use crate::log::real_clock;
use crate::log::{Arrival, Hold};
use crate::pace::Pace;
use crate::server::Server;

/// The object the range-read examples read: 1 MiB, byte i is `i % 251`.
pub const TABLE: &str = "data/table.parquet";
const TABLE_SIZE: u64 = 1 << 20;
/// The length of each range the examples read.
pub const RANGE_SIZE: u64 = 64 * 1024;
/// What [`table_server`] does, for the examples' reports.
pub const TABLE_STALLS: &str =
    "the server stalls 1 request in 100 for 200 ms (half before the answer, half mid-body)";

/// The range-read examples' server, on the real clock: [`TABLE`], read by ranges, one
/// read in 100 stalled for 200 ms, before the answer and in the middle of the body in
/// turn.
pub async fn table_server() -> std::io::Result<Server> {
    let object: Bytes = (0..TABLE_SIZE).map(|i| (i % 251) as u8).collect();
    let files = HashMap::from([(TABLE.to_owned(), object)]);
    let stall = Hold::For(Duration::from_millis(200));
    let behavior = objects(files, StallWhen::OneIn(100), StallWhere::Alternate, stall);
    Server::http(behavior, real_clock()).await
}

/// Reads the next range of [`TABLE`] a run reads with `read`, [`RANGE_SIZE`] bytes long,
/// `reads` counting the reads so far; checks that it read all its bytes (`read` answers
/// how many).
pub async fn read_next_range<F, R, E>(reads: &AtomicU64, read: F) -> Result<(), crate::Error>
where
    F: FnOnce(Range<u64>) -> R,
    R: Future<Output = Result<usize, E>>,
    E: Into<crate::Error>,
{
    let start = (reads.fetch_add(1, Relaxed) * RANGE_SIZE) % (TABLE_SIZE - RANGE_SIZE);
    let read = read(start..start + RANGE_SIZE).await.map_err(Into::into)?;
    assert_eq!(read as u64, RANGE_SIZE);
    Ok(())
}

/// Which reads stall.
#[derive(Clone, Copy, Debug)]
pub enum StallWhen {
    /// The first read of each path.
    FirstPerPath,
    /// Read n (counted over every path) when `n % every == every - 1`.
    OneIn(u64),
    /// None.
    Never,
}

/// Where a stalled read stalls.
#[derive(Clone, Copy, Debug)]
pub enum StallWhere {
    /// Before the answer's headers.
    Answer,
    /// After the headers and the first half of the body.
    Body,
    /// Before the answer for even-numbered stalls, in the body for odd ones.
    Alternate,
}

/// Serves `objects` (path → bytes, paths without a leading slash): a `200` or a `206`
/// with `Content-Range` for one byte range, `416` for a range outside the object, `404`
/// for a missing one, and for any read under `unavailable/` a `503` with
/// `Retry-After: 1000`. Reads that stall as `when` says are held as `hold` says, where
/// `place` says.
pub fn objects(
    objects: HashMap<String, Bytes>,
    when: StallWhen,
    place: StallWhere,
    hold: Hold,
) -> Behavior {
    let stalls = AtomicU64::new(0);
    Arc::new(move |arrival: &Arrival| {
        let stalls_now = match when {
            StallWhen::FirstPerPath => arrival.copy == 0,
            StallWhen::OneIn(every) => arrival.order % every == every - 1,
            StallWhen::Never => false,
        };
        let answer = object(&objects, arrival);
        if !stalls_now {
            return answer;
        }
        let in_body = match place {
            StallWhere::Answer => false,
            StallWhere::Body => true,
            StallWhere::Alternate => stalls.fetch_add(1, Relaxed) % 2 == 1,
        };
        match in_body {
            true => Answer {
                body_hold: hold,
                ..answer
            },
            false => answer.hold(hold),
        }
    })
}

/// Objects a server holds, which a test may rewrite while they are read: each has an
/// `ETag` (`"v1"`, `"v2"`, … by how often it was written) that [`versioned`] sends with
/// every answer and checks `If-Match` against. Clones share the objects.
#[derive(Clone, Debug, Default)]
pub struct Objects(Arc<Mutex<HashMap<String, (Bytes, u64)>>>);

impl Objects {
    /// No objects.
    pub fn new() -> Objects {
        Objects::default()
    }

    /// Writes `bytes` at `path` (without a leading slash): a new version.
    pub fn put(&self, path: &str, bytes: Bytes) {
        let mut objects = self.0.lock().expect("objects");
        let version = objects.get(path).map_or(1, |(_, version)| version + 1);
        objects.insert(path.to_owned(), (bytes, version));
    }

    /// The `ETag` of `path` as it is now.
    pub fn e_tag(&self, path: &str) -> Option<String> {
        let objects = self.0.lock().expect("objects");
        objects
            .get(path)
            .map(|(_, version)| format!("\"v{version}\""))
    }
}

/// Serves `objects` as [`objects`] does (a byte range, HEAD, `404`, `416`), with an
/// `ETag` on every answer and a `412` for an `If-Match` naming another version; each
/// copy's body is sent as `pace` says for it.
pub fn versioned(
    objects: Objects,
    pace: impl Fn(&Arrival) -> Pace + Send + Sync + 'static,
) -> Behavior {
    Arc::new(move |arrival: &Arrival| {
        let path = arrival.path.trim_start_matches('/');
        let (found, e_tag) = {
            let all = objects.0.lock().expect("objects");
            match all.get(path) {
                Some((bytes, version)) => (
                    HashMap::from([(path.to_owned(), bytes.clone())]),
                    Some(format!("\"v{version}\"")),
                ),
                None => (HashMap::new(), None),
            }
        };
        let matches = |asked: &str| {
            let asked = asked.split(',').map(str::trim);
            e_tag
                .as_deref()
                .is_some_and(|tag| asked.into_iter().any(|asked| asked == "*" || asked == tag))
        };
        if let Some(asked) = arrival.header(IF_MATCH.as_str()) {
            if !matches(asked) {
                return Answer::ok().status(412).reply(Reply::Bytes(Bytes::new()));
            }
        }
        let answer = object(&found, arrival).pace(pace(arrival));
        match &e_tag {
            Some(tag) => answer.header(ETAG.as_str(), tag),
            None => answer,
        }
    })
}

fn object(objects: &HashMap<String, Bytes>, arrival: &Arrival) -> Answer {
    let path = arrival.path.trim_start_matches('/');
    if path.starts_with("unavailable/") {
        return Answer::ok().status(503).header("retry-after", "1000");
    }
    let empty = Reply::Bytes(Bytes::new());
    let Some(object) = objects.get(path) else {
        return Answer::ok().status(404).reply(empty);
    };
    let size = object.len() as u64;
    let range = match arrival.headers.get(RANGE) {
        None => None,
        Some(range) => match parse_range(range.as_bytes(), size) {
            Some(range) => Some(range),
            None => return Answer::ok().status(416).reply(empty),
        },
    };
    let (status, start, end) = match range {
        Some((start, end)) => (206, start, end),
        None => (200, 0, size),
    };
    let mut answer = Answer::ok()
        .status(status)
        .header(CONTENT_LENGTH.as_str(), &(end - start).to_string());
    if range.is_some() {
        let content_range = format!("bytes {start}-{}/{size}", end - 1);
        answer = answer.header(CONTENT_RANGE.as_str(), &content_range);
    }
    let body = match arrival.method {
        Method::HEAD => Bytes::new(),
        _ => object.slice(start as usize..end as usize),
    };
    answer.reply(Reply::Bytes(body))
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n` as a half-open range within `size`.
fn parse_range(header: &[u8], size: u64) -> Option<(u64, u64)> {
    let spec = std::str::from_utf8(header).ok()?.strip_prefix("bytes=")?;
    let (first, last) = spec.split_once('-')?;
    let (start, end) = match (first, last) {
        ("", suffix) => (size.saturating_sub(suffix.parse().ok()?), size),
        (first, "") => (first.parse().ok()?, size),
        (first, last) => (
            first.parse().ok()?,
            last.parse::<u64>().ok()?.saturating_add(1),
        ),
    };
    (start < end.min(size)).then_some((start, end.min(size)))
}

/// An `HttpStore` on `url`, without retries of its own (the hedge is what retries),
/// sending its requests with [`HyperConnector`].
pub fn store(url: &str) -> object_store::Result<HttpStore> {
    HttpBuilder::new()
        .with_url(url)
        .with_client_options(ClientOptions::new().with_allow_http(true))
        .with_http_connector(HyperConnector)
        .with_retry(RetryConfig {
            max_retries: 0,
            ..RetryConfig::default()
        })
        .build()
}

/// Sends `HttpStore`'s requests with a pooled hyper-util HTTP/1 client: object_store's
/// own reqwest transport needs a TLS backend even for plain HTTP.
#[derive(Debug)]
pub struct HyperConnector;

impl HttpConnector for HyperConnector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(HyperService(crate::http::client())))
    }
}

#[derive(Debug)]
struct HyperService(
    hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        HttpRequestBody,
    >,
);

#[async_trait::async_trait]
impl HttpService for HyperService {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let response = self.0.request(request).await.map_err(|error| {
            let kind = match error.is_connect() {
                true => HttpErrorKind::Connect,
                false => HttpErrorKind::Request,
            };
            HttpError::new(kind, error)
        })?;
        Ok(response.map(|body| {
            HttpResponseBody::new(
                body.map_err(|error| HttpError::new(HttpErrorKind::Request, error)),
            )
        }))
    }
}
