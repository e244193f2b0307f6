//! [`Pace`]: how a server sends a body once its headers are out: at once, stalled after
//! some bytes, or trickled in pieces.

use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, Stream, StreamExt};

use crate::log::{Hold, Log};

/// How a body is sent once its headers are out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pace {
    /// As it comes.
    #[default]
    Whole,
    /// Its first `bytes`, then nothing while `hold` lasts ([`Hold::Released`]: until the
    /// test releases the key, or the client drops the body), then the rest.
    StallAfter {
        /// How many bytes go before the stall.
        bytes: u64,
        /// How long the stall lasts.
        hold: Hold,
    },
    /// Its first `bytes`, then, once `hold` lasted, the body ends short of the length
    /// the answer's headers name: the server closes the connection, and the client's
    /// body fails there. (Held first so that the bytes before the break are sent, not
    /// dropped with the connection.)
    BreakAfter {
        /// How many bytes go before the break.
        bytes: u64,
        /// How long the bytes before it are let go before the break.
        hold: Hold,
    },
    /// In pieces of `piece` bytes: the first at once, each next one after `every`
    /// ([`Hold::Released`]: once the test let one more piece of the key go, with
    /// [`Log::let_pieces_go`]).
    Trickle {
        /// The bytes of each piece.
        piece: usize,
        /// The wait before each piece after the first.
        every: Hold,
    },
}

/// `body` of the copy with `key`, sent as `pace` says.
pub(crate) fn paced<E: Send + 'static>(
    body: BoxStream<'static, Result<Bytes, E>>,
    pace: Pace,
    log: Log,
    key: String,
) -> Exclusive<BoxStream<'static, Result<Bytes, E>>> {
    let (split_at, piece) = match pace {
        Pace::Whole => return Exclusive(Mutex::new(body)),
        Pace::StallAfter { bytes, .. } | Pace::BreakAfter { bytes, .. } => (bytes, usize::MAX),
        Pace::Trickle { piece, .. } => (0, piece.max(1)),
    };
    let state = Shaping {
        body,
        buffered: Bytes::new(),
        sent: 0,
        pieces: 0,
    };
    let paced = stream::unfold(state, move |mut state| {
        let (log, key) = (log.clone(), key.clone());
        async move {
            if let Pace::BreakAfter { hold, .. } = pace {
                if state.sent == split_at {
                    log.hold(&key, hold).await;
                    return None;
                }
            }
            while state.buffered.is_empty() {
                match state.body.next().await? {
                    Ok(bytes) => state.buffered = bytes,
                    Err(error) => return Some((Err(error), state)),
                }
            }
            let take = match pace {
                Pace::StallAfter { hold, .. } if state.sent == split_at => {
                    log.hold(&key, hold).await;
                    state.buffered.len()
                }
                Pace::StallAfter { .. } | Pace::BreakAfter { .. } if state.sent < split_at => {
                    (split_at - state.sent).min(state.buffered.len() as u64) as usize
                }
                Pace::Trickle { every, .. } => {
                    if state.pieces > 0 {
                        log.piece(&key, every, state.pieces).await;
                    }
                    state.pieces += 1;
                    piece.min(state.buffered.len())
                }
                _ => state.buffered.len(),
            };
            let out = state.buffered.split_to(take);
            state.sent += out.len() as u64;
            Some((Ok(out), state))
        }
    })
    .boxed();
    Exclusive(Mutex::new(paced))
}

/// A stream that is `Sync` (as a response body must be) because it is only ever reached
/// through `&mut`.
pub(crate) struct Exclusive<S>(Mutex<S>);

impl<S: Stream + Unpin> Stream for Exclusive<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let stream = self.get_mut().0.get_mut();
        stream
            .unwrap_or_else(PoisonError::into_inner)
            .poll_next_unpin(cx)
    }
}

struct Shaping<E> {
    body: BoxStream<'static, Result<Bytes, E>>,
    buffered: Bytes,
    sent: u64,
    pieces: u64,
}
