//! [`ReadKey`]: what a [`HedgedStore`](crate::HedgedStore) keys each read by, by default
//! its [`SizeClass`].

use core::hash::Hash;

use object_store::path::Path;
use object_store::{GetOptions, GetRange};

/// What a [`HedgedStore`](crate::HedgedStore) names each read's key by, for a policy with
/// [`adaptive_keys`](hedging::PolicyBuilder::adaptive_keys): reads of one key share a
/// delay learnt from their own latencies. [`SizeClass`] by default;
/// [`HedgedStore::key_by`](crate::HedgedStore::key_by) takes any closure
/// `Fn(&Path, &GetOptions) -> Q` instead, `Q` an owned [`Hash`] value.
///
/// The key is taken once per read, from the location and the options the caller gave (a
/// `head` is `GetOptions { head: true, .. }`; each coalesced range of `get_ranges` is a
/// read of its own), and a resume of the read's stalled body carries it too. It is
/// hashed only when the read makes its race, on a policy with keys.
pub trait ReadKey: Send + Sync + 'static {
    /// The key: what [`Policy::delay_for`](hedging::Policy::delay_for) is asked with.
    type Key: Hash + Send + Sync + 'static;

    /// The key of a read of `location` with `options`.
    fn key(&self, location: &Path, options: &GetOptions) -> Self::Key;
}

/// The default [`ReadKey`]: a read's size class, a `u64`, the bytes it asks for rounded
/// up to a power of two, so that a 4 KiB footer and a 64 MiB row group each hedge at a
/// delay of their own under one policy.
///
/// | read | class |
/// |---|---|
/// | `head` | [`SizeClass::HEAD`], `0` |
/// | a range `a..b` (`get_range`, each coalesced range of `get_ranges`, `get_opts` with `GetRange::Bounded`) | `(b - a).next_power_of_two()` |
/// | the last `n` bytes (`GetRange::Suffix(n)`) | `n.next_power_of_two()` |
/// | a length not known before the answer: a whole-object `get`, `GetRange::Offset` | [`SizeClass::UNKNOWN`], `u64::MAX` |
///
/// An empty range is class `1`, a range above 2⁶³ bytes `u64::MAX`. Computing the class
/// is a branch and a shift; it is not hashed on a policy without keys.
///
/// ```
/// use object_store::GetOptions;
/// use hedging_object_store::SizeClass;
///
/// let footer = GetOptions::new().with_range(Some(1_000..5_000));
/// assert_eq!(SizeClass::of(&footer), 4_096);
/// assert_eq!(SizeClass::of(&GetOptions::new().with_head(true)), SizeClass::HEAD);
/// assert_eq!(SizeClass::of(&GetOptions::new()), SizeClass::UNKNOWN);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeClass;

impl SizeClass {
    /// The class of a `head`.
    pub const HEAD: u64 = 0;

    /// The class of a read whose length is not known before it answers.
    pub const UNKNOWN: u64 = u64::MAX;

    /// The size class of a read with `options`; see the table above.
    pub fn of(options: &GetOptions) -> u64 {
        if options.head {
            return SizeClass::HEAD;
        }
        let asked = match &options.range {
            Some(GetRange::Bounded(range)) => range.end.saturating_sub(range.start),
            Some(GetRange::Suffix(bytes)) => *bytes,
            Some(GetRange::Offset(_)) | None => return SizeClass::UNKNOWN,
        };
        hedging_http_rules::size_class(asked)
    }
}

impl ReadKey for SizeClass {
    type Key = u64;

    #[inline]
    fn key(&self, _location: &Path, options: &GetOptions) -> u64 {
        SizeClass::of(options)
    }
}

impl<F, Q> ReadKey for F
where
    F: Fn(&Path, &GetOptions) -> Q + Send + Sync + 'static,
    Q: Hash + Send + Sync + 'static,
{
    type Key = Q;

    #[inline]
    fn key(&self, location: &Path, options: &GetOptions) -> Q {
        self(location, options)
    }
}
