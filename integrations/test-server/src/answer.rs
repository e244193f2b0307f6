//! [`Answer`]: what a server does with one copy, and the scripts that say it.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

use std::sync::Arc;
use std::time::Duration;

use crate::log::{Arrival, Hold};
use crate::pace::Pace;

/// The body of an HTTP answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Reply {
    /// `copy {copy} of {path}`: which copy this was, as the server counted it.
    #[default]
    CopyOf,
    /// The request's body, back.
    Echo,
    /// These bytes.
    Bytes(Bytes),
}

/// What a server does with one copy.
///
/// # Default
///
/// No hold, status `200` (gRPC: `OK`, with a reply), no extra headers, the body
/// [`Reply::CopyOf`], no hold in the body.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    /// How long to keep the copy before the answer's headers.
    pub hold: Hold,
    /// An HTTP status, or a gRPC code answered Trailers-Only; `None` is `200` / `OK`.
    pub status: Option<u16>,
    /// Headers of the answer (gRPC: the metadata of its status).
    pub headers: HeaderMap,
    /// The body (HTTP only).
    pub reply: Reply,
    /// How long to keep the rest of the body after its first half (HTTP only).
    pub body_hold: Hold,
    /// How the body is sent once the headers are out (HTTP and the S3 proxy), when
    /// `body_hold` does not hold it.
    pub pace: Pace,
}

/// The header an HTTP request names its script in (see [`Answer::scripted`]).
pub const SCRIPT: &str = "x-script";

impl Answer {
    /// A `200` (gRPC `OK`) answered at once.
    pub fn ok() -> Answer {
        Answer::default()
    }

    /// This status (gRPC: this code).
    pub fn status(mut self, status: u16) -> Answer {
        self.status = Some(status);
        self
    }

    /// Kept as `hold` says before the headers.
    pub fn hold(mut self, hold: Hold) -> Answer {
        self.hold = hold;
        self
    }

    /// With header `name: value`.
    pub fn header(mut self, name: &'static str, value: &str) -> Answer {
        let value = HeaderValue::from_str(value).expect("a header value");
        self.headers.insert(HeaderName::from_static(name), value);
        self
    }

    /// With the body sent as `pace` says.
    pub fn pace(mut self, pace: Pace) -> Answer {
        self.pace = pace;
        self
    }

    /// With this body.
    pub fn reply(mut self, reply: Reply) -> Answer {
        self.reply = reply;
        self
    }

    /// The answer a script gives copy `copy`: the script's `|`-separated parts are for
    /// copy 0, 1, … (the last part for every later copy), each a `;`-separated list of
    ///
    /// - `ok`: nothing more (an empty part is the same);
    /// - `hold`: held until the test releases the key, or the client drops the copy;
    /// - `sleep=MS`: held that many milliseconds of tokio's clock;
    /// - `status=N`: an HTTP status, or for gRPC a code answered Trailers-Only;
    /// - `retry-after=V`: a `Retry-After: V` header;
    /// - `pushback=V`: gRPC's `grpc-retry-pushback-ms: V`;
    /// - `echo`: the request's body as the answer's.
    ///
    /// ```
    /// use hedging_test_server::{Answer, Hold};
    /// let held = Answer::scripted("hold | status=503;retry-after=1 | ok", 0);
    /// assert_eq!(held.hold, Hold::Released);
    /// let busy = Answer::scripted("hold | status=503;retry-after=1 | ok", 1);
    /// assert_eq!((busy.status, busy.headers["retry-after"].to_str().unwrap()), (Some(503), "1"));
    /// ```
    pub fn scripted(script: &str, copy: usize) -> Answer {
        let parts: Vec<&str> = script.split('|').map(str::trim).collect();
        let part = parts[copy.min(parts.len() - 1)];
        let mut answer = Answer::ok();
        for token in part.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            let (key, value) = token.split_once('=').unwrap_or((token, ""));
            answer = match key {
                "ok" => answer,
                "hold" => answer.hold(Hold::Released),
                "sleep" => answer.hold(Hold::For(Duration::from_millis(number(value)))),
                "status" => answer.status(number(value) as u16),
                "retry-after" => answer.header("retry-after", value),
                "pushback" => answer.header("grpc-retry-pushback-ms", value),
                "echo" => answer.reply(Reply::Echo),
                other => panic!("unknown script token {other:?} in {script:?}"),
            };
        }
        answer
    }
}

fn number(value: &str) -> u64 {
    value
        .parse()
        .unwrap_or_else(|_| panic!("{value:?} is not a number"))
}

/// Decides how a server answers each copy, from what it saw.
pub type Behavior = Arc<dyn Fn(&Arrival) -> Answer + Send + Sync>;

/// Every copy gets `answer`.
pub fn always(answer: Answer) -> Behavior {
    Arc::new(move |_| answer.clone())
}

/// The examples' backend: holds one copy in `every` (counted over all copies) for
/// `stall`, answers the rest at once, with `ok`.
pub fn one_in(every: u64, stall: Duration) -> Behavior {
    Arc::new(move |arrival| {
        let hold = match arrival.order % every == every - 1 {
            true => Hold::For(stall),
            false => Hold::No,
        };
        Answer::ok()
            .hold(hold)
            .reply(Reply::Bytes(Bytes::from_static(b"ok")))
    })
}
