//! What a copy is, for the loop that races copies, and the steps every copy goes
//! through: made, polled, judged.

use core::pin::Pin;
use core::task::{Context, Poll};

use crate::attempt::{Attempt, Classify, Verdict};
use crate::race::{verdict, Finished};

/// What a copy is, for the loop that races copies.
pub(crate) trait Copier {
    /// One copy.
    type Copy;
    type Ok;
    type Error;
    /// Whether a winning copy stays alive after the race (a stream: its later items).
    const KEEP_WINNER: bool;
    /// Whether the factory may decline a copy; if so, a copy is made before the budget
    /// is asked and the hook runs, so a declined copy touches neither.
    const MAY_DECLINE: bool;

    /// Whether a copy that finished with `verdict` stays alive: only a winning stream.
    fn stays(verdict: Option<Verdict>) -> bool {
        Self::KEEP_WINNER && verdict == Some(Verdict::Win)
    }

    /// Makes copy `attempt.index()`, or declines it.
    fn make(&mut self, attempt: Attempt) -> Option<Self::Copy>;

    /// Polls a copy for its result: a future's output, or a stream's first item (`None`
    /// when it ended without one).
    fn poll_copy(
        copy: Pin<&mut Self::Copy>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Self::Ok, Self::Error>>>;
}

/// How a poll of a call found its original. A tag of its own (`repr(u8)`), so that the
/// race tells the three apart with one byte compare instead of decoding a niche in the
/// finished copy's result.
#[repr(u8)]
pub(crate) enum RaceEntry<T, E> {
    /// Started by an earlier poll: every copy in flight is to be polled.
    Running,
    /// Just started, and pending.
    Pending,
    /// Just started, and already finished without winning: to be settled.
    Finished(Finished<T, E>, Option<Verdict>),
}

/// Judges a copy that finished and drops it, unless it is a winner that stays (see
/// [`Copier::KEEP_WINNER`]): `drop_copy` empties its place.
#[inline(always)]
pub(super) fn judge<K, Cl>(
    finished: &Finished<K::Ok, K::Error>,
    classify: &mut Cl,
    drop_copy: impl FnOnce(),
) -> Option<Verdict>
where
    K: Copier,
    Cl: Classify<K::Ok, K::Error>,
{
    let verdict = verdict(finished, classify);
    if !K::stays(verdict) {
        drop_copy();
    }
    verdict
}

/// Polls one copy; with `catch`, a panic is the copy's end.
#[inline]
pub(super) fn poll<K: Copier>(
    copy: Pin<&mut K::Copy>,
    cx: &mut Context<'_>,
    catch: bool,
) -> Poll<Finished<K::Ok, K::Error>> {
    let finished = |polled: Option<Result<K::Ok, K::Error>>| match polled {
        Some(result) => Finished::Item(result),
        None => Finished::Ended,
    };
    #[cfg(feature = "std")]
    if catch {
        let polled =
            std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| K::poll_copy(copy, cx)));
        return match polled {
            Ok(poll) => poll.map(finished),
            Err(panic) => Poll::Ready(Finished::Panicked(panic)),
        };
    }
    let _ = catch;
    K::poll_copy(copy, cx).map(finished)
}

/// A copy made (or declined), or, under `catch_unwind`, how it ended when its factory
/// panicked.
pub(super) type Made<K> =
    Result<Option<<K as Copier>::Copy>, Finished<<K as Copier>::Ok, <K as Copier>::Error>>;

/// Makes a copy; with `catch`, a panicking factory yields the panic as the copy's end.
pub(super) fn make<K: Copier>(copier: &mut K, attempt: Attempt, catch: bool) -> Made<K> {
    #[cfg(feature = "std")]
    if catch {
        let make = core::panic::AssertUnwindSafe(|| copier.make(attempt));
        return std::panic::catch_unwind(make).map_err(Finished::Panicked);
    }
    let _ = catch;
    Ok(copier.make(attempt))
}
