//! A policy's per-key state ([`PolicyBuilder::adaptive_keys`](crate::PolicyBuilder::adaptive_keys)):
//! a table of at most `n` keys, each with its own latency tracker (adaptive delay) and its
//! own hedge win rate ([`PolicyBuilder::min_win_rate`](crate::PolicyBuilder::min_win_rate)),
//! and the hash that names a key.
//!
//! A call carries its key as a hash; the race looks the key up when it first needs its
//! delay, its win rate or its record, so a call answered at once never touches the
//! table. A key has two places (two halves of its hash): it is found in either, and a key
//! not yet kept takes the first that is free or whose key went a whole window without a
//! call using it (a call's lookup of its delay or its win rate marks its key used). When
//! both are held by keys in use, the key is not kept and its calls use the policy-wide
//! estimate; a later call may find a place free. The table is made once, with the
//! policy: lookups are atomic loads, a takeover one compare-and-swap.
//!
//! - `mod.rs`: the table and the hash.
//! - `win_rate.rs`: whether hedges still win, and when to withhold them.
//! - the builder methods that turn both on are in `builder/adaptive.rs`; a keyed call's
//!   lookup of its delay is in `race/clock.rs`.

use alloc::boxed::Box;
use core::hash::{Hash, Hasher};
use core::num::NonZeroU64;
use core::time::Duration;

use crate::adaptive::{nanos, LatencyTracker, TrackerSeed};
use crate::sync::AtomicU64;
use crate::sync::Ordering::{Acquire, Relaxed, Release};

mod win_rate;

pub(crate) use self::win_rate::{Ask, Turn, WinRate, Withhold};

/// A call's key as the table names it: the hash of the key the call was given, never
/// zero, so that a call's `Option<Key>` is one word and `None` is a call without a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key(NonZeroU64);

impl Key {
    /// The hash as a word, as a place in the table holds it.
    #[inline(always)]
    pub(crate) const fn get(self) -> u64 {
        self.0.get()
    }
}

/// What a free place in the table holds: no key's word, since a [`Key`] is never zero.
const FREE: u64 = 0;

/// The most keys a policy tracks: [`PolicyBuilder::adaptive_keys`](crate::PolicyBuilder::adaptive_keys)
/// clamps to it.
pub(crate) const MAX_KEYS: usize = 4096;

/// The hash of a call's key.
#[inline(always)]
pub(crate) fn hash<K: Hash + ?Sized>(key: &K) -> Key {
    let mut hasher = KeyHasher(0);
    key.hash(&mut hasher);
    // A hash of zero is taken as one (two keys more share a word); `max` first, so that
    // the compiler sees the hash is never zero and the fallback goes.
    Key(NonZeroU64::new(hasher.finish().max(1)).unwrap_or(NonZeroU64::MIN))
}

/// The keys a policy tracks, each in one of its two places.
pub(crate) struct Keys {
    entries: Box<[Entry]>,
    /// How long a key's calls must have used its place not at all before another key may
    /// take it, in nanoseconds: the adaptive window.
    idle_nanos: u64,
}

/// One key's state.
///
/// Threads calling one key share its entry's lines: every call stores `used_at` (the line
/// every lookup of the key reads) and counts in the key's one-stripe histogram, so two
/// threads calling the same key at full speed take two to four times as long per call as one
/// (`cargo bench --bench adaptive -- contention`). Calls of different keys share no line
/// but where two entries meet. More cores calling one key contend more; a policy per
/// thread, or keys spread over threads, does not.
pub(crate) struct Entry {
    /// The key's word ([`Key::get`]), or [`FREE`] while the place is free.
    key: AtomicU64,
    /// When a call of this key last took the place or found it (see
    /// [`Keys::find_or_take`]), in nanoseconds of the policy's clock.
    used_at: AtomicU64,
    /// The key's latencies, with an adaptive delay.
    pub(crate) tracker: Option<LatencyTracker>,
    /// Whether the key's hedges still win.
    pub(crate) win_rate: WinRate,
}

impl Keys {
    /// A table of `keys` places (at least 1, at most [`MAX_KEYS`]), each with a tracker
    /// made from `seed` when the delay is adaptive.
    pub(crate) fn new(keys: usize, seed: Option<&TrackerSeed>, idle: Duration) -> Self {
        let entries = (0..keys.clamp(1, MAX_KEYS))
            .map(|_| Entry {
                key: AtomicU64::new(FREE),
                used_at: AtomicU64::new(0),
                tracker: seed.map(LatencyTracker::one_stripe),
                win_rate: WinRate::new(),
            })
            .collect();
        Keys {
            entries,
            idle_nanos: nanos(idle),
        }
    }

    /// How many keys the table holds at most.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// The key's place by one half of its hash: the half scaled to the table's length
    /// (a multiply, not a division).
    #[inline]
    fn place(&self, half: u32) -> &Entry {
        let index = (u64::from(half) * self.entries.len() as u64) >> 32;
        &self.entries[index as usize]
    }

    /// The key's two places.
    #[inline]
    fn places(&self, key: Key) -> [&Entry; 2] {
        let key = key.get();
        [self.place(key as u32), self.place((key >> 32) as u32)]
    }

    /// The key's entry if it is kept.
    #[inline(always)]
    pub(crate) fn find(&self, key: Key) -> Option<&Entry> {
        let key = key.get();
        let first = self.place(key as u32);
        if first.key.load(Relaxed) == key {
            return Some(first);
        }
        let second = self.place((key >> 32) as u32);
        (second.key.load(Relaxed) == key).then_some(second)
    }

    /// A call's lookup of its key's entry, marked used at `now`, taking a place for it
    /// if it is not kept and one is free (or its key idle); `None` when both places are
    /// held by keys in use. The one place a call marks its key in use, whatever the
    /// delay mode: a key some call looks up keeps its place.
    #[inline]
    pub(crate) fn find_or_take(&self, key: Key, now: Duration) -> Option<&Entry> {
        self.find_or_take_at(key, nanos(now))
    }

    /// [`Keys::find_or_take`] at `now_nanos`, the policy's clock in nanoseconds: for a
    /// caller that reads a tracker at the same time.
    #[inline]
    pub(crate) fn find_or_take_at(&self, key: Key, now_nanos: u64) -> Option<&Entry> {
        match self.find(key) {
            Some(entry) => {
                entry.used_at.store(now_nanos, Relaxed);
                Some(entry)
            }
            None => self.take(key, now_nanos),
        }
    }

    #[cold]
    fn take(&self, key: Key, now: u64) -> Option<&Entry> {
        self.places(key).into_iter().find(|entry| {
            // Acquire: a taker that sees a key just taken also sees the place marked used
            // below, so it does not find the place idle and take it again at once.
            let held = entry.key.load(Acquire);
            let idle = now.saturating_sub(entry.used_at.load(Relaxed)) >= self.idle_nanos;
            if held != FREE && !idle {
                return false;
            }
            // Marked used before it is taken: a taker that loses the race below leaves the
            // place's key looking in use, which only puts off its eviction.
            entry.used_at.store(now, Relaxed);
            let taken = entry
                .key
                .compare_exchange(held, key.get(), Release, Relaxed)
                .is_ok();
            if taken && held != FREE {
                // The old key's latencies may still be in the window, slot by slot.
                if let Some(tracker) = &entry.tracker {
                    tracker.clear();
                }
                entry.win_rate.reset();
            }
            taken
        })
    }

    /// Whether a call with `key` would find a place at `now`.
    pub(crate) fn would_keep(&self, key: Key, now: Duration) -> bool {
        let now = nanos(now);
        self.find(key).is_some()
            || self.places(key).into_iter().any(|entry| {
                entry.key.load(Relaxed) == FREE
                    || now.saturating_sub(entry.used_at.load(Relaxed)) >= self.idle_nanos
            })
    }
}

#[cfg(loom)]
impl Keys {
    /// The table's place of `entry`, for the loom models.
    pub(crate) fn place_of(&self, entry: &Entry) -> usize {
        self.entries
            .iter()
            .position(|place| core::ptr::eq(place, entry))
            .expect("an entry of this table")
    }

    /// The key word the place holds, for the loom models.
    pub(crate) fn held_at(&self, place: usize) -> u64 {
        self.entries[place].key.load(Acquire)
    }
}

/// A key from its word, for the loom models (which pick words to place keys).
#[cfg(loom)]
pub(crate) fn key_of(word: u64) -> Key {
    Key(NonZeroU64::new(word).expect("a key's word is never zero"))
}

/// The hash behind [`hash`]: FxHash's rotate-multiply over whole words, with the high
/// half folded into the low one so both halves (the key's two places) depend on every
/// bit. Not a hash for keys an attacker picks to collide: two keys whose halves collide
/// share their places (and so, when both are in use, the policy-wide estimate); two whose
/// whole hashes collide are one key, with one delay and one win rate.
struct KeyHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl KeyHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for KeyHasher {
    /// Whole words, then the tail: the last word read to the end, shifted so it holds only
    /// the bytes not yet added, with their count in its top byte. Short keys (host names)
    /// cost a few multiplies.
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let word = |at: usize| {
            let mut word = [0; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(word)
        };
        let len = bytes.len();
        // A tail holds at most 7 bytes; its top byte says how many, so that keys which
        // differ only by trailing zero bytes ("a", "a\0") differ.
        let count = |bytes: usize| (bytes as u64) << 56;
        if len < 8 {
            let tail = bytes
                .iter()
                .rev()
                .fold(0, |tail, byte| tail << 8 | u64::from(*byte));
            self.add(tail | count(len));
            return;
        }
        let mut at = 0;
        while at + 8 <= len {
            self.add(word(at));
            at += 8;
        }
        if at < len {
            self.add(word(len - 8) >> (8 * (8 - (len - at))) | count(len - at));
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(u64::from(value));
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The multiply carries every bit upwards only: the high half, folded in, gives the
        // low half (the first place) the whole key.
        self.0 ^ (self.0 >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[test]
    fn keys_that_differ_hash_apart() {
        let hashes: alloc::vec::Vec<u64> = (0..1000u32).map(|key| hash(&key).get()).collect();
        let mut sorted = hashes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), hashes.len());
        assert_ne!(hash("api.a:443"), hash("api.b:443"));
        for (a, b) in [("a", "a\0"), ("", "\0"), ("abcdefgh\0", "abcdefgh\0\0")] {
            assert_ne!(hash(a), hash(b), "{a:?} {b:?}");
            assert_ne!(hash(a.as_bytes()), hash(b.as_bytes()), "{a:?} {b:?}");
        }
        assert_eq!(
            hash("api.a:443"),
            hash(&alloc::string::String::from("api.a:443"))
        );
    }

    #[test]
    fn a_call_without_a_key_costs_no_word_more_than_one_with() {
        assert_eq!(
            core::mem::size_of::<Option<Key>>(),
            core::mem::size_of::<u64>()
        );
    }

    #[test]
    fn a_key_takes_a_free_place_and_is_found_there() {
        let keys = Keys::new(4, None, 10 * SEC);
        let key = hash("a");
        assert!(keys.find(key).is_none());
        let taken = keys.find_or_take(key, SEC).map(|e| e as *const Entry);
        assert!(taken.is_some());
        assert_eq!(keys.find(key).map(|e| e as *const Entry), taken);
    }

    #[test]
    fn a_full_table_keeps_no_new_key_until_a_place_goes_idle() {
        let keys = Keys::new(1, None, 10 * SEC);
        let (a, b) = (hash("a"), hash("b"));
        assert!(keys.find_or_take(a, SEC).is_some());
        assert!(keys.find_or_take(b, 2 * SEC).is_none(), "a is in use");
        assert!(!keys.would_keep(b, 2 * SEC));
        keys.find_or_take(a, 5 * SEC).unwrap();
        assert!(keys.find_or_take(b, 14 * SEC).is_none(), "a used 9 s ago");
        assert!(keys.would_keep(b, 15 * SEC));
        assert!(keys.find_or_take(b, 15 * SEC).is_some(), "a idle a window");
        assert!(keys.find(a).is_none());
    }

    /// The size the builder's docs state per key.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_key_takes_the_memory_the_docs_say() {
        assert!(core::mem::size_of::<Entry>() <= 216);
    }

    #[test]
    fn the_table_size_is_clamped() {
        assert_eq!(Keys::new(0, None, SEC).capacity(), 1);
        assert_eq!(Keys::new(usize::MAX, None, SEC).capacity(), MAX_KEYS);
    }
}

#[cfg(all(test, feature = "std"))]
mod races {
    use super::*;
    use std::sync::{Arc, Barrier};
    use std::vec::Vec;

    const SEC: Duration = Duration::from_secs(1);

    /// Keys racing for the one place of a table at the same instant: one is kept, and the
    /// place it was handed holds it (a place just taken is in use, not idle).
    #[test]
    fn keys_racing_for_one_place_keep_one_and_each_entry_holds_its_own_key() {
        const THREADS: u32 = 4;
        for round in 0..2_000 {
            let keys = Arc::new(Keys::new(1, None, 10 * SEC));
            let barrier = Arc::new(Barrier::new(THREADS as usize));
            let handed: Vec<Option<bool>> = (0..THREADS)
                .map(|thread| {
                    let (keys, barrier) = (Arc::clone(&keys), Arc::clone(&barrier));
                    std::thread::spawn(move || {
                        let key = hash(&thread);
                        barrier.wait();
                        keys.find_or_take(key, 100 * SEC)
                            .map(|entry| entry.key.load(Relaxed) == key.get())
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|thread| thread.join().unwrap())
                .collect();
            assert_eq!(
                handed.iter().flatten().collect::<Vec<_>>(),
                [&true],
                "round {round}: one key kept, holding its place"
            );
        }
    }
}
