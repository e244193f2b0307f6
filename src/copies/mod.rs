//! The copies of one call and its one timer: where they live, and the loop that polls
//! them and carries out what the race decides. [`Hedge`](crate::Hedge) and
//! [`HedgeStream`](crate::HedgeStream) differ only in what a copy is (a future, or a
//! stream until its first item) and in what a winning copy becomes: that is
//! [`Copier`].
//!
//! - `copier.rs`: what a copy is ([`Copier`]), and making, polling and judging one.
//! - `drive.rs`: [`InFlight`](drive::InFlight), the copies in flight and the timer, and the
//!   loop that carries out the race's decisions on them.
//! - `place.rs`: [`Place`](place::Place), the pinned `Option` a call's race lives in,
//!   filled in place.
//! - `state.rs`: a call's [`State`](state::State) (its phase, its original, its race once made) and
//!   [`Call`], which cancels it on drop; [`State::run`](state::State::run) is the one run path of a call.

mod copier;
mod drive;
mod place;
mod state;

pub(crate) use self::copier::{Copier, RaceEntry};
pub(crate) use self::drive::Poller;
pub(crate) use self::state::{Call, CallParts};
