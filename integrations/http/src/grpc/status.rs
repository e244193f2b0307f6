//! What a copy's response headers mean under gRPC A6: its status, whether it committed,
//! and the server's pushback.

use std::sync::Arc;
use std::time::Duration;

use hedging::{Classify, Verdict};
use http::{HeaderMap, Response, StatusCode};

/// `UNAVAILABLE`: A6's usual non-fatal code, and what a transport error counts as.
pub(crate) const UNAVAILABLE: i32 = 14;
/// `UNKNOWN`: a `grpc-status` that is not an integer.
const UNKNOWN: i32 = 2;

/// The verdicts of [`GrpcHedgeLayer`](super::GrpcHedgeLayer) on one copy, under gRPC A6:
///
/// | The copy's answer | Verdict |
/// |---|---|
/// | response headers without `grpc-status` (the call committed), or a Trailers-Only `OK` | [`Win`](Verdict::Win) |
/// | Trailers-Only with a non-fatal `grpc-status` and no pushback | [`RetryAfter(0)`](Verdict::RetryAfter): the next copy starts at once |
/// | the same with `grpc-retry-pushback-ms: n`, n ≥ 0 | [`RetryAfter(n ms)`](Verdict::RetryAfter) |
/// | the same with a negative or malformed pushback | [`Stop`](Verdict::Stop): no further copies |
/// | Trailers-Only with any other `grpc-status` | [`Fatal`](Verdict::Fatal) |
/// | no `grpc-status` and an HTTP status other than 200 | as the gRPC code it maps to (502, 503, 504 and 429 are `UNAVAILABLE`) |
/// | an error from the inner service (the transport) | as `UNAVAILABLE` |
#[derive(Clone, Debug)]
pub struct GrpcVerdict {
    non_fatal_codes: Arc<[i32]>,
}

impl GrpcVerdict {
    /// Verdicts that treat these gRPC status codes as non-fatal.
    pub fn new(non_fatal_codes: impl IntoIterator<Item = i32>) -> Self {
        GrpcVerdict {
            non_fatal_codes: non_fatal_codes.into_iter().collect(),
        }
    }

    fn failed(&self, code: i32, headers: Option<&HeaderMap>) -> Verdict {
        if !self.non_fatal_codes.contains(&code) {
            return Verdict::Fatal;
        }
        match headers.and_then(pushback) {
            None => Verdict::RetryAfter(Duration::ZERO),
            Some(Pushback::After(hold)) => Verdict::RetryAfter(hold),
            Some(Pushback::Stop) => Verdict::Stop,
        }
    }
}

impl Default for GrpcVerdict {
    /// `UNAVAILABLE` is the only non-fatal code.
    fn default() -> Self {
        GrpcVerdict::new([UNAVAILABLE])
    }
}

impl<B, E> Classify<Response<B>, E> for GrpcVerdict {
    fn verdict(&mut self, result: &Result<Response<B>, E>) -> Verdict {
        match result {
            Err(_) => self.failed(UNAVAILABLE, None),
            Ok(response) => match status(response) {
                None | Some(0) => Verdict::Win,
                Some(code) => self.failed(code, Some(response.headers())),
            },
        }
    }
}

/// The status of a response that did not commit: a Trailers-Only response's
/// `grpc-status`, or the code its HTTP status maps to when it has none; `None` for
/// response headers that commit the call.
pub(crate) fn status<B>(response: &Response<B>) -> Option<i32> {
    match response.headers().get("grpc-status") {
        Some(code) => Some(parse_code(code.as_bytes())),
        None if response.status() == StatusCode::OK => None,
        None => Some(code_of_http_status(response.status())),
    }
}

fn parse_code(code: &[u8]) -> i32 {
    std::str::from_utf8(code)
        .ok()
        .and_then(|code| code.parse().ok())
        .unwrap_or(UNKNOWN)
}

/// gRPC's mapping of HTTP statuses for responses without `grpc-status`
/// (`doc/http-grpc-status-mapping.md` in grpc/grpc).
pub(crate) fn code_of_http_status(status: StatusCode) -> i32 {
    match status.as_u16() {
        400 => 13, // INTERNAL
        401 => 16, // UNAUTHENTICATED
        403 => 7,  // PERMISSION_DENIED
        404 => 12, // UNIMPLEMENTED
        429 | 502..=504 => UNAVAILABLE,
        _ => UNKNOWN,
    }
}

/// What `grpc-retry-pushback-ms` asks of the next copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushback {
    /// Hold the next copy this long.
    After(Duration),
    /// Start no further copies: the value was negative or malformed.
    Stop,
}

/// The response's `grpc-retry-pushback-ms`, if it has one.
pub(crate) fn pushback(headers: &HeaderMap) -> Option<Pushback> {
    let value = headers.get("grpc-retry-pushback-ms")?;
    Some(parse_pushback(value.as_bytes()))
}

/// A6: "an ASCII encoded signed 32-bit integer"; negative or unparseable means do not retry.
pub(crate) fn parse_pushback(value: &[u8]) -> Pushback {
    let millis = std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse::<i32>().ok());
    match millis {
        Some(millis) if millis >= 0 => Pushback::After(Duration::from_millis(millis as u64)),
        _ => Pushback::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushback_reads_milliseconds() {
        assert_eq!(parse_pushback(b"0"), Pushback::After(Duration::ZERO));
        assert_eq!(
            parse_pushback(b"250"),
            Pushback::After(Duration::from_millis(250))
        );
        assert_eq!(
            parse_pushback(b"2147483647"),
            Pushback::After(Duration::from_millis(i32::MAX as u64))
        );
    }

    #[test]
    fn pushback_negative_or_malformed_stops() {
        let stops = |value: &[u8]| assert_eq!(parse_pushback(value), Pushback::Stop, "{value:?}");
        [&b"-1"[..], b"-250"].into_iter().for_each(stops);
        [&b""[..], b"soon", b"1.5", b"1e3"]
            .into_iter()
            .for_each(stops);
        stops(b"2147483648"); // past i32
    }

    fn trailers_only(code: &str, pushback: Option<&str>) -> Result<Response<()>, ()> {
        let mut builder = Response::builder()
            .header("content-type", "application/grpc")
            .header("grpc-status", code);
        if let Some(pushback) = pushback {
            builder = builder.header("grpc-retry-pushback-ms", pushback);
        }
        Ok(builder.body(()).unwrap())
    }

    #[test]
    fn grpc_verdicts_follow_a6() {
        let mut verdicts = GrpcVerdict::default();
        let mut verdict = |r: Result<Response<()>, ()>| verdicts.verdict(&r);
        let at_once = Verdict::RetryAfter(Duration::ZERO);
        let committed = Ok(Response::builder().body(()).unwrap());
        assert_eq!(verdict(committed), Verdict::Win);
        assert_eq!(verdict(trailers_only("0", None)), Verdict::Win);
        assert_eq!(verdict(trailers_only("14", None)), at_once);
        let held = Verdict::RetryAfter(Duration::from_millis(40));
        assert_eq!(verdict(trailers_only("14", Some("40"))), held);
        assert_eq!(verdict(trailers_only("14", Some("-1"))), Verdict::Stop);
        assert_eq!(verdict(trailers_only("5", None)), Verdict::Fatal);
        // Pushback does not make a fatal code retryable.
        assert_eq!(verdict(trailers_only("5", Some("10"))), Verdict::Fatal);
        assert_eq!(verdict(trailers_only("unavailable", None)), Verdict::Fatal);
        assert_eq!(verdict(Err(())), at_once);
    }

    #[test]
    fn grpc_verdicts_map_http_statuses_without_grpc_status() {
        let mut verdicts = GrpcVerdict::default();
        let mut verdict = |status: u16| {
            verdicts.verdict(&Ok::<_, ()>(
                Response::builder().status(status).body(()).unwrap(),
            ))
        };
        let at_once = Verdict::RetryAfter(Duration::ZERO);
        for status in [502, 503, 504, 429] {
            assert_eq!(verdict(status), at_once, "{status}");
        }
        for status in [400, 401, 403, 404, 500] {
            assert_eq!(verdict(status), Verdict::Fatal, "{status}");
        }
    }

    #[test]
    fn grpc_verdicts_take_the_non_fatal_codes_given() {
        let mut verdicts = GrpcVerdict::new([10, 13]); // ABORTED, INTERNAL
        let mut verdict = |r: Result<Response<()>, ()>| verdicts.verdict(&r);
        let at_once = Verdict::RetryAfter(Duration::ZERO);
        assert_eq!(verdict(trailers_only("13", None)), at_once);
        assert_eq!(verdict(trailers_only("10", None)), at_once);
        assert_eq!(verdict(trailers_only("14", None)), Verdict::Fatal);
        assert_eq!(
            verdict(Err(())),
            Verdict::Fatal,
            "a transport error is UNAVAILABLE"
        );
    }
}
