//! [`ReplayBody`]: a request body read once, up to a cap, and rebuilt for every copy.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Buf, Bytes, BytesMut};
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

/// The default of `max_replay_bytes`: bodies up to 64 KiB are buffered for replay.
pub(crate) const DEFAULT_MAX_REPLAY_BYTES: usize = 64 * 1024;

/// The request body the layers hand the inner service: the original body, buffered so
/// each copy of the request can send it again, or passed through when it cannot be.
///
/// A layer reads the original body only while its frames are ready, up to the layer's
/// `max_replay_bytes`; it never waits for one. A body read to its end within the cap is
/// kept whole and every copy sends it again. Any other body (still pending, larger than
/// the cap, with trailers, or failing) is sent once, unhedged: the frames read so far
/// first, then the rest of the original body, so nothing is lost.
///
/// Either way the body reports the original's size hint, so a client that frames the
/// request by it (hyper sends a body of unknown length on a `GET` as empty) sends what
/// the caller would have sent.
///
/// Its data is [`Bytes`], so it fits any client that takes a generic body (a hyper-util
/// `Client<C, ReplayBody<B>>`); in front of a tonic `Channel`, map it into tonic's body:
///
/// ```text
/// .map_request(|r: http::Request<ReplayBody<tonic::body::Body>>| r.map(tonic::body::Body::new))
/// ```
pub struct ReplayBody<B: Body> {
    state: State<B>,
}

enum State<B: Body> {
    /// Read to its end within the cap: sent again by every copy.
    Whole(Whole),
    /// Not replayable: what was read, then the rest of the original.
    Once(Once<B>),
}

/// A whole body: its data in one buffer (a reference-counted [`Bytes`], so each copy
/// costs a count bump) and the original's size hint until the data is sent.
#[derive(Clone)]
struct Whole {
    data: Option<Bytes>,
    size_hint: SizeHint,
}

struct Once<B: Body> {
    /// Frames read before the body proved not replayable, sent first.
    read: VecDeque<Frame<Bytes>>,
    /// The error the original failed with, sent after `read`.
    error: Option<B::Error>,
    /// The rest of the original body.
    rest: B,
}

impl<B: Body> ReplayBody<B> {
    /// Passes `body` through untouched, for a request that is sent once.
    pub(crate) fn once(body: B) -> Self {
        ReplayBody {
            state: State::Once(Once {
                read: VecDeque::new(),
                error: None,
                rest: body,
            }),
        }
    }

    /// Whether every copy of the request can send this body again.
    pub fn is_replayable(&self) -> bool {
        matches!(self.state, State::Whole(_))
    }

    /// A fresh copy of a replayable body, from its start; `None` for a body sent once.
    pub(crate) fn try_clone(&self) -> Option<Self> {
        match &self.state {
            State::Whole(whole) => Some(ReplayBody {
                state: State::Whole(whole.clone()),
            }),
            State::Once(_) => None,
        }
    }
}

impl<B: Body + Unpin> ReplayBody<B> {
    /// Reads `body` while its frames are ready, up to `max_bytes` of data, never waiting:
    /// a body read to its end becomes replayable; any other is kept, with the frames
    /// read so far, to be sent once.
    pub(crate) fn read(mut body: B, max_bytes: usize) -> Self {
        let size_hint = body.size_hint();
        if size_hint.lower() > max_bytes as u64 {
            return ReplayBody::once(body);
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut chunks = Chunks::default();
        let mut len = 0usize;
        let mut error = None;
        let mut trailers: Option<HeaderMap> = None;
        loop {
            if body.is_end_stream() {
                return ReplayBody::whole(chunks, len, size_hint);
            }
            match Pin::new(&mut body).poll_frame(&mut cx) {
                Poll::Ready(None) => return ReplayBody::whole(chunks, len, size_hint),
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(mut data) => {
                        let data = data.copy_to_bytes(data.remaining());
                        len = len.saturating_add(data.len());
                        if !data.is_empty() {
                            chunks.push(data);
                        }
                        if len > max_bytes {
                            break;
                        }
                    }
                    Err(frame) => {
                        // Trailers: replaying them is possible, but rare enough to send once.
                        trailers = frame.into_trailers().ok();
                        break;
                    }
                },
                Poll::Ready(Some(Err(failed))) => {
                    error = Some(failed);
                    break;
                }
                // Never wait on a streaming body: send it once.
                Poll::Pending => break,
            }
        }
        let mut read: VecDeque<Frame<Bytes>> = chunks.all().map(Frame::data).collect();
        read.extend(trailers.map(Frame::trailers));
        ReplayBody {
            state: State::Once(Once {
                read,
                error,
                rest: body,
            }),
        }
    }

    fn whole(chunks: Chunks, len: usize, size_hint: SizeHint) -> Self {
        let data = match chunks.more.is_empty() {
            true => chunks.first,
            // Joined once, so each copy is one reference-count bump.
            false => {
                let mut joined = BytesMut::with_capacity(len);
                chunks
                    .all()
                    .for_each(|chunk| joined.extend_from_slice(&chunk));
                Some(joined.freeze())
            }
        };
        ReplayBody {
            state: State::Whole(Whole { data, size_hint }),
        }
    }
}

/// The data chunks read so far: a body of one chunk (a gRPC message, most bodies) is
/// kept without a `Vec`.
#[derive(Default)]
struct Chunks {
    first: Option<Bytes>,
    more: Vec<Bytes>,
}

impl Chunks {
    fn push(&mut self, chunk: Bytes) {
        match self.first {
            None => self.first = Some(chunk),
            Some(_) => self.more.push(chunk),
        }
    }

    fn all(self) -> impl Iterator<Item = Bytes> {
        self.first.into_iter().chain(self.more)
    }
}

impl<B> Body for ReplayBody<B>
where
    B: Body + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match &mut self.get_mut().state {
            State::Whole(whole) => {
                let data = whole.data.take();
                if data.is_some() {
                    whole.size_hint = SizeHint::with_exact(0);
                }
                Poll::Ready(data.map(|data| Ok(Frame::data(data))))
            }
            State::Once(once) => {
                if let Some(frame) = once.read.pop_front() {
                    return Poll::Ready(Some(Ok(frame)));
                }
                if let Some(error) = once.error.take() {
                    return Poll::Ready(Some(Err(error)));
                }
                Pin::new(&mut once.rest).poll_frame(cx).map(|frame| {
                    frame.map(|frame| {
                        frame.map(|frame| {
                            frame.map_data(|mut data| data.copy_to_bytes(data.remaining()))
                        })
                    })
                })
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.state {
            State::Whole(whole) => whole.data.is_none(),
            State::Once(once) => {
                once.read.is_empty() && once.error.is_none() && once.rest.is_end_stream()
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.state {
            State::Whole(whole) => whole.size_hint,
            State::Once(once) => {
                let read: u64 = once
                    .read
                    .iter()
                    .filter_map(|frame| frame.data_ref())
                    .map(|data| data.len() as u64)
                    .sum();
                let rest = once.rest.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(rest.lower().saturating_add(read));
                if let Some(upper) = rest.upper() {
                    hint.set_upper(upper.saturating_add(read));
                }
                hint
            }
        }
    }
}

// The body is never pinned in place: it polls `rest` through `Pin::new`, so it is `Unpin`
// whenever the original is, whatever its error type.
impl<B: Body + Unpin> Unpin for ReplayBody<B> {}

impl<B: Body> fmt::Debug for ReplayBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            State::Whole(whole) => f
                .debug_struct("ReplayBody")
                .field("replayable", &true)
                .field("len", &whole.data.as_ref().map_or(0, Bytes::len))
                .finish(),
            State::Once(once) => f
                .debug_struct("ReplayBody")
                .field("replayable", &false)
                .field("frames_read", &once.read.len())
                .finish_non_exhaustive(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use futures::channel::mpsc;
    use futures::executor::block_on;
    use http_body_util::{BodyExt, Empty, Full, StreamBody};

    use super::*;

    type Chunk = Result<Frame<Bytes>, Infallible>;

    fn collect<B: Body + Unpin>(body: ReplayBody<B>) -> (Bytes, Option<HeaderMap>)
    where
        B::Error: fmt::Debug,
    {
        let collected = block_on(body.collect()).unwrap();
        let trailers = collected.trailers().cloned();
        (collected.to_bytes(), trailers)
    }

    fn exact(hint: SizeHint) -> Option<u64> {
        hint.exact()
    }

    /// A body of ready frames whose size hint is unknown.
    fn stream_of(
        chunks: &[&'static [u8]],
    ) -> StreamBody<futures::stream::Iter<std::vec::IntoIter<Chunk>>> {
        let frames: Vec<Chunk> = chunks
            .iter()
            .map(|c| Ok(Frame::data(Bytes::from_static(c))))
            .collect();
        StreamBody::new(futures::stream::iter(frames))
    }

    #[test]
    fn a_ready_body_is_replayed_whole_by_every_copy() {
        let body = ReplayBody::read(Full::new(Bytes::from_static(b"hello")), 64);
        assert!(body.is_replayable());
        let copies = [body.try_clone().unwrap(), body.try_clone().unwrap(), body];
        for copy in copies {
            assert_eq!(collect(copy).0, "hello");
        }
    }

    #[test]
    fn a_body_of_many_ready_frames_is_joined_once() {
        let body = ReplayBody::read(stream_of(&[b"ab", b"cd", b"ef"]), 64);
        assert!(body.is_replayable());
        assert_eq!(collect(body.try_clone().unwrap()).0, "abcdef");
        assert_eq!(collect(body).0, "abcdef");
    }

    #[test]
    fn size_hint_exact_is_kept() {
        let body = ReplayBody::read(Full::new(Bytes::from_static(b"hello")), 64);
        assert_eq!(exact(body.try_clone().unwrap().size_hint()), Some(5));
        assert!(!body.is_end_stream());
        let empty = ReplayBody::read(Empty::<Bytes>::new(), 64);
        assert_eq!(exact(empty.size_hint()), Some(0));
        assert!(empty.is_end_stream());
    }

    #[test]
    fn size_hint_unknown_is_kept() {
        let body = ReplayBody::read(stream_of(&[b"ab", b"cd"]), 64);
        assert!(body.is_replayable());
        let hint = body.try_clone().unwrap().size_hint();
        assert_eq!((hint.lower(), hint.upper()), (0, None));
    }

    #[test]
    fn size_hint_is_zero_once_the_data_is_sent() {
        let mut body = ReplayBody::read(Full::new(Bytes::from_static(b"hello")), 64);
        let frame = block_on(body.frame()).unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "hello");
        assert_eq!(exact(body.size_hint()), Some(0));
        assert!(body.is_end_stream());
    }

    #[test]
    fn size_hint_of_a_body_sent_once_adds_what_was_read() {
        let body = ReplayBody::read(Full::new(Bytes::from_static(b"0123456789")), 4);
        assert!(!body.is_replayable());
        assert_eq!(exact(body.size_hint()), Some(10));
    }

    #[test]
    fn a_body_over_the_cap_is_sent_once_with_every_byte() {
        let body = ReplayBody::read(stream_of(&[b"0123", b"4567", b"89"]), 5);
        assert!(!body.is_replayable());
        assert!(body.try_clone().is_none());
        assert_eq!(collect(body).0, "0123456789");
    }

    #[test]
    fn a_body_whose_size_hint_is_over_the_cap_is_not_read() {
        let body = ReplayBody::read(Full::new(Bytes::from_static(b"0123456789")), 9);
        assert!(!body.is_replayable());
        match &body.state {
            State::Once(once) => assert!(once.read.is_empty()),
            State::Whole(_) => unreachable!(),
        }
        assert_eq!(collect(body).0, "0123456789");
    }

    #[test]
    fn a_pending_body_is_sent_once_with_what_was_read_first() {
        let (sender, receiver) = mpsc::unbounded::<Chunk>();
        sender
            .unbounded_send(Ok(Frame::data(Bytes::from_static(b"first "))))
            .unwrap();
        let body = ReplayBody::read(StreamBody::new(receiver), 64);
        assert!(!body.is_replayable());
        sender
            .unbounded_send(Ok(Frame::data(Bytes::from_static(b"then the rest"))))
            .unwrap();
        drop(sender);
        assert_eq!(collect(body).0, "first then the rest");
    }

    #[test]
    fn a_body_with_trailers_is_sent_once_with_its_trailers() {
        let mut trailers = HeaderMap::new();
        trailers.insert("checksum", "abc".parse().unwrap());
        let frames: Vec<Chunk> = vec![
            Ok(Frame::data(Bytes::from_static(b"data"))),
            Ok(Frame::trailers(trailers.clone())),
        ];
        let body = ReplayBody::read(StreamBody::new(futures::stream::iter(frames)), 64);
        assert!(!body.is_replayable());
        assert_eq!(collect(body), (Bytes::from_static(b"data"), Some(trailers)));
    }

    #[test]
    fn a_failing_body_is_sent_once_with_its_error_after_the_data() {
        let frames: Vec<Result<Frame<Bytes>, &'static str>> =
            vec![Ok(Frame::data(Bytes::from_static(b"data"))), Err("broken")];
        let mut body = ReplayBody::read(StreamBody::new(futures::stream::iter(frames)), 64);
        assert!(!body.is_replayable());
        let first = block_on(body.frame()).unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "data");
        assert_eq!(block_on(body.frame()).unwrap().unwrap_err(), "broken");
    }

    #[test]
    fn a_body_passed_through_is_untouched() {
        let body = ReplayBody::once(Full::new(Bytes::from_static(b"as is")));
        assert!(!body.is_replayable());
        assert_eq!(exact(body.size_hint()), Some(5));
        assert_eq!(collect(body).0, "as is");
    }
}
