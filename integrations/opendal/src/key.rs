//! [`CallKey`]: what a [`HedgeLayer`](crate::HedgeLayer) keys each hedged call by, by
//! default its [`SizeClass`]; [`Call`] is what it is keyed from.

use core::hash::Hash;

use opendal::raw::Operation;
use opendal::BytesRange;

/// A call the layer hedges, as its key sees it: a `stat` of a path, or a read of a byte
/// range of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call<'a> {
    path: &'a str,
    range: Option<BytesRange>,
}

impl<'a> Call<'a> {
    /// A `stat` of `path`.
    pub fn stat(path: &'a str) -> Self {
        Call { path, range: None }
    }

    /// A read of bytes `range` of `path`.
    pub fn read(path: &'a str, range: BytesRange) -> Self {
        Call {
            path,
            range: Some(range),
        }
    }

    /// The path, relative to the operator's root.
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// `Operation::Stat` or `Operation::Read`.
    pub fn operation(&self) -> Operation {
        match self.range {
            None => Operation::Stat,
            Some(_) => Operation::Read,
        }
    }

    /// The bytes a read asks for (`None` for a `stat`).
    pub fn range(&self) -> Option<BytesRange> {
        self.range
    }

    /// The call's [`SizeClass`].
    pub fn size_class(&self) -> u64 {
        SizeClass::of(self)
    }
}

/// What a [`HedgeLayer`](crate::HedgeLayer) keys each hedged call by, for a policy with
/// [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): calls of one key share a
/// delay learnt from their own latencies. [`SizeClass`] by default;
/// [`HedgeLayer::key_by`](crate::HedgeLayer::key_by) takes any closure
/// `Fn(&Call<'_>) -> Q` instead, `Q` an owned [`Hash`] value.
///
/// The key is taken once per call (a `stat`, or a read's request for one byte range), and
/// a resume of the read's stalled body carries it too. It is hashed only when the call
/// makes its race, on a policy with keys.
pub trait CallKey: Send + Sync + 'static {
    /// The key: what [`Policy::delay_for`](hedging::Policy::delay_for) is asked with.
    type Key: Hash + Send + Sync + 'static;

    /// The key of `call`.
    fn key(&self, call: &Call<'_>) -> Self::Key;
}

/// The default [`CallKey`]: a call's operation and size class in one `u64`, the bytes a
/// read asks for rounded up to a power of two, so that a `stat`, a 4 KiB footer and a
/// 64 MiB row group each hedge at a delay of their own under one policy.
///
/// | call | class |
/// |---|---|
/// | `stat` | [`SizeClass::STAT`], `0` |
/// | a read of `offset..offset + n` | `n.next_power_of_two()` |
/// | a read of the last `n` bytes | `n.next_power_of_two()` |
/// | a read to the end (`offset..`), its length not known before it answers | [`SizeClass::UNKNOWN`], `u64::MAX` |
///
/// An empty range is class `1`, a range above 2⁶³ bytes `u64::MAX`: the same classes as
/// `hedging-object-store`'s, so a `stat` and a `head` share one.
///
/// ```
/// use hedging_opendal::{Call, SizeClass};
/// use opendal::BytesRange;
///
/// let footer = Call::read("part-0.parquet", BytesRange::new(1_000, Some(4_000)));
/// assert_eq!(SizeClass::of(&footer), 4_096);
/// assert_eq!(SizeClass::of(&Call::stat("part-0.parquet")), SizeClass::STAT);
/// let whole = Call::read("part-0.parquet", BytesRange::new(0, None));
/// assert_eq!(SizeClass::of(&whole), SizeClass::UNKNOWN);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeClass;

impl SizeClass {
    /// The class of a `stat`.
    pub const STAT: u64 = 0;

    /// The class of a read whose length is not known before it answers.
    pub const UNKNOWN: u64 = u64::MAX;

    /// The size class of `call`; see the table above.
    pub fn of(call: &Call<'_>) -> u64 {
        let asked = match call.range {
            None => return SizeClass::STAT,
            Some(BytesRange::Range {
                size: Some(size), ..
            }) => size,
            Some(BytesRange::Suffix { size }) => size,
            Some(BytesRange::Range { size: None, .. }) => return SizeClass::UNKNOWN,
        };
        hedging_http_rules::size_class(asked)
    }
}

impl CallKey for SizeClass {
    type Key = u64;

    #[inline]
    fn key(&self, call: &Call<'_>) -> u64 {
        SizeClass::of(call)
    }
}

impl<F, Q> CallKey for F
where
    F: Fn(&Call<'_>) -> Q + Send + Sync + 'static,
    Q: Hash + Send + Sync + 'static,
{
    type Key = Q;

    #[inline]
    fn key(&self, call: &Call<'_>) -> Q {
        self(call)
    }
}
