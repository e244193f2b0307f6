//! The key of a call, as a type: [`NoKey`] until [`Hedge::key`](crate::Hedge::key) makes it
//! [`Keyed`]. Its hash is taken only when the call makes its race, and only on a policy
//! with [`adaptive_keys`](crate::PolicyBuilder::adaptive_keys): a call answered at its
//! first poll never hashes its key.

use core::fmt;
use core::hash::Hash;

use crate::keyed::{self, Key};

/// A call's key, as [`Hedge::key`](crate::Hedge::key) names it.
///
/// Sealed: implemented by [`NoKey`], [`Keyed`] and [`KeyHash`] only.
pub trait CallKey: sealed::Sealed {
    /// The key's hash, as the policy's table of keys looks it up.
    #[doc(hidden)]
    fn key_hash(&self) -> KeyHash;
}

/// No key: the default type state of a call; it holds nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoKey;

/// A key borrowed by a call until its race is made; made by
/// [`Hedge::key`](crate::Hedge::key).
pub struct Keyed<'k, Q: ?Sized>(pub(crate) &'k Q);

/// A key already hashed, for a call that cannot borrow its key (its request moves into
/// the call): made by [`Policy::key_hash`](crate::Policy::key_hash), given to
/// [`Hedge::key_hash`](crate::Hedge::key_hash) or
#[cfg_attr(
    feature = "tower",
    doc = "[`tower::ResponseFuture::key_hash`](crate::tower::ResponseFuture::key_hash). The default is no key."
)]
#[cfg_attr(
    not(feature = "tower"),
    doc = "`tower::ResponseFuture::key_hash`. The default is no key."
)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyHash(pub(crate) Option<Key>);

impl KeyHash {
    /// No key.
    #[cfg(feature = "tower")]
    pub(crate) const NONE: KeyHash = KeyHash(None);
}

impl CallKey for NoKey {
    #[inline(always)]
    fn key_hash(&self) -> KeyHash {
        KeyHash(None)
    }
}

impl<Q: Hash + ?Sized> CallKey for Keyed<'_, Q> {
    #[inline]
    fn key_hash(&self) -> KeyHash {
        KeyHash(Some(keyed::hash(self.0)))
    }
}

impl CallKey for KeyHash {
    #[inline(always)]
    fn key_hash(&self) -> KeyHash {
        *self
    }
}

impl<Q: ?Sized> Clone for Keyed<'_, Q> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Q: ?Sized> Copy for Keyed<'_, Q> {}

impl<Q: ?Sized> fmt::Debug for Keyed<'_, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Keyed(..)")
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoKey {}
    impl<Q: ?Sized> Sealed for super::Keyed<'_, Q> {}
    impl Sealed for super::KeyHash {}
}
