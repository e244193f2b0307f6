//! Doc text that links an item only in builds that have it: rustdoc denies a link to an
//! item a feature left out, so a doc line that names one is written twice, and these
//! macros pick the linked text or the plain one: `#[doc = with_std!(linked, plain)]`.

/// The linked text with the feature `std`, the plain text without.
#[cfg(feature = "std")]
macro_rules! with_std {
    ($linked:literal, $plain:literal) => {
        $linked
    };
}
#[cfg(not(feature = "std"))]
macro_rules! with_std {
    ($linked:literal, $plain:literal) => {
        $plain
    };
}

/// The linked text with the feature `futures-timer`, the plain text without.
#[cfg(feature = "futures-timer")]
macro_rules! with_futures_timer {
    ($linked:literal, $plain:literal) => {
        $linked
    };
}
#[cfg(not(feature = "futures-timer"))]
macro_rules! with_futures_timer {
    ($linked:literal, $plain:literal) => {
        $plain
    };
}

pub(crate) use {with_futures_timer, with_std};
