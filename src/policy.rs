//! [`Policy`]: the settings its clones share, read on every call (made by `builder/`).

use alloc::borrow::Cow;
// std's `Arc` for the settings and hooks: loom's cannot hold a `dyn Fn`, and no model
// races a policy's settings, only the structures they point to.
use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

use crate::attempt::Attempt;
use crate::budget::{Budget, Member, Refused};
use crate::key::KeyHash;
use crate::keyed::{self, Entry, Key, Keys, WinRate, Withhold};
use crate::schedule::{Delays, Schedule};
use crate::stats::{Cells, Counter, Counters, Stats};
use crate::sync::{AtomicBool, Ordering::Relaxed};
use crate::timer::{DefaultTimer, Timer};

/// The hook [`on_hedge`](crate::PolicyBuilder::on_hedge) installs.
pub(crate) type HedgeHook = Arc<dyn Fn(&Attempt) + Send + Sync>;

/// How to hedge: how many copies, when each starts, and the clock that times them.
///
/// Built once with [`Policy::builder`] and shared by every call site: cloning is a
/// reference-count bump, and every clone records into the same [`Stats`].
/// [`Hedgeable::hedged`](crate::Hedgeable::hedged) takes `&Policy` (no reference-count
/// traffic) or an owned `Policy` (for a `'static` future).
///
/// ```
/// use std::time::Duration;
/// use hedging::Policy;
///
/// let policy = Policy::builder()
///     .max_copies(3)                    // the original and up to two hedges
///     .delay(Duration::from_millis(20)) // each 20 ms after the one before
///     .build();
/// assert_eq!(policy.max_copies(), 3);
/// ```
pub struct Policy<T = DefaultTimer> {
    settings: Arc<Settings<T>>,
}

pub(crate) struct Settings<T> {
    pub(crate) name: Option<Cow<'static, str>>,
    pub(crate) max_copies: usize,
    pub(crate) schedule: Schedule,
    pub(crate) hedge_probability: f64,
    /// Whether a call rolls the dice: more than one copy, with a probability below 1.
    pub(crate) rolls: bool,
    /// [`Policy::set_enabled`]'s switch, read where a call decides whether it needs a
    /// race: never by a call answered on its first poll.
    pub(crate) enabled: AtomicBool,
    pub(crate) on_hedge: Option<HedgeHook>,
    pub(crate) catch_unwind: bool,
    pub(crate) replace_failed: bool,
    pub(crate) timer: T,
    pub(crate) counters: Counters,
    #[cfg(not(feature = "std"))]
    pub(crate) rng_seed: core::sync::atomic::AtomicU64,
    pub(crate) budget: Option<PolicyBudget>,
    /// The budget again, if it counts winning and failing copies (throttling).
    pub(crate) throttle: Option<Budget>,
    /// The keys' own state, with `adaptive_keys`.
    pub(crate) keys: Option<Keys>,
    /// `min_win_rate`, when above zero.
    pub(crate) withhold: Option<Withhold>,
}

/// A policy's link to its [`Budget`]: its place among the budget's members.
pub(crate) struct PolicyBudget {
    pub(crate) budget: Budget,
    member: crate::sync::Arc<Member>,
}

impl PolicyBudget {
    /// Joins `budget`, at a place whose cells the policy counts its calls in.
    pub(crate) fn new(budget: Budget) -> Self {
        let member = budget.join(Cells::new());
        PolicyBudget { budget, member }
    }

    /// The policy's counters: the budget reads its ended calls in the cells of its place
    /// (a place a dropped policy left, counted on from where it stopped).
    pub(crate) fn counters(&self) -> Counters {
        Counters::sharing(self.member.cells().clone())
    }
}

impl Drop for PolicyBudget {
    fn drop(&mut self) {
        self.member.leave();
    }
}

impl<T> Policy<T> {
    /// The policy's label for tracing events and metrics, if
    /// [`name`](crate::PolicyBuilder::name) gave it one.
    pub fn name(&self) -> Option<&str> {
        self.settings.name.as_deref()
    }

    /// The most copies a call may start, the original included.
    pub fn max_copies(&self) -> usize {
        self.settings.max_copies
    }

    /// May a call that begins now hedge, and with how many copies? The most copies it may
    /// start, the original included, when the call itself takes at most `cap` (`usize::MAX`
    /// for no cap of its own; `0` counts as 1): the fewer of `cap` and
    /// [`max_copies`](Self::max_copies), or 1 while the policy is
    /// [disabled](Self::set_enabled). Above 1, the call may hedge.
    ///
    /// The one answer every layer asks before it prepares a request: a call of one copy
    /// sends its request as it was given (no body buffered for replay, nothing cloned),
    /// and is still one of the policy's `calls`. The race asks the same when it is made.
    /// A call's [`hedge_probability`](crate::PolicyBuilder::hedge_probability) roll is
    /// the call's own, taken when it starts, and not part of this answer.
    ///
    /// ```
    /// use hedging::Policy;
    /// let policy = Policy::builder().max_copies(3).build();
    /// assert_eq!(policy.copies_allowed(usize::MAX), 3);
    /// assert_eq!(policy.copies_allowed(2), 2); // a request its layer copies once at most
    /// policy.set_enabled(false);
    /// assert_eq!(policy.copies_allowed(usize::MAX), 1); // send it as it is
    /// ```
    #[inline]
    pub fn copies_allowed(&self, cap: usize) -> usize {
        self.settings.copies_allowed(cap.max(1))
    }

    /// The delay before the first hedge as it stands now: the fixed
    /// [`delay`](crate::PolicyBuilder::delay), or the current
    /// [`adaptive_delay`](crate::PolicyBuilder::adaptive_delay). `None` in the
    /// [`fallback`](crate::PolicyBuilder::fallback) and
    /// [`delay_fn`](crate::PolicyBuilder::delay_fn) modes.
    pub fn delay(&self) -> Option<Duration>
    where
        T: Timer,
    {
        match &self.settings.schedule.delays {
            Delays::Fixed(delay) => Some(*delay),
            Delays::Adaptive(tracker) => Some(tracker.delay(self.settings.timer.now())),
            Delays::Fallback | Delays::PerCopy(_) => None,
        }
    }

    /// The delay before the first hedge that a call with `key` would get now (see
    /// [`adaptive_keys`](crate::PolicyBuilder::adaptive_keys)): its key's own estimate,
    /// the fixed [`delay`](crate::PolicyBuilder::delay) while the key has too few
    /// latencies, or the policy-wide estimate when the key could not be kept; without
    /// keys, or with a delay that is not adaptive, the same as [`Policy::delay`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use hedging::Policy;
    /// let policy = Policy::builder().adaptive_delay(0.95).adaptive_keys(8).build();
    /// assert_eq!(policy.delay_for("users-db"), Some(Duration::from_millis(10)));
    /// ```
    pub fn delay_for<K: core::hash::Hash + ?Sized>(&self, key: &K) -> Option<Duration>
    where
        T: Timer,
    {
        let settings = &*self.settings;
        let (Some(keys), Delays::Adaptive(tracker)) = (&settings.keys, &settings.schedule.delays)
        else {
            return self.delay();
        };
        let now = settings.timer.now();
        let key = keyed::hash(key);
        let tracker = match keys.find(key) {
            Some(entry) => entry.tracker.as_ref().unwrap_or(tracker),
            // A place to take: the key starts from the fixed delay.
            None if keys.would_keep(key, now) => return Some(settings.schedule.fallback()),
            None => tracker,
        };
        Some(tracker.delay(now))
    }

    /// How many keys the policy learns a delay for at once
    /// ([`adaptive_keys`](crate::PolicyBuilder::adaptive_keys)); `0` on a policy without
    /// keys, where a call's key changes nothing. For middleware that makes a key only when
    /// it is used.
    ///
    /// ```
    /// use hedging::Policy;
    /// assert_eq!(Policy::builder().adaptive_delay(0.95).adaptive_keys(8).build().adaptive_keys(), 8);
    /// assert_eq!(Policy::builder().build().adaptive_keys(), 0);
    /// ```
    pub fn adaptive_keys(&self) -> usize {
        self.settings.keys.as_ref().map_or(0, Keys::capacity)
    }

    /// `key` as a call of this policy carries it: its hash on a policy with
    /// [`adaptive_keys`](crate::PolicyBuilder::adaptive_keys), no key otherwise (one check,
    /// `key` not read). For middleware that reads a call's key from its request before the
    /// request moves into the call: give it to
    #[cfg_attr(
        feature = "tower",
        doc = "[`tower::ResponseFuture::key_hash`](crate::tower::ResponseFuture::key_hash). The"
    )]
    #[cfg_attr(not(feature = "tower"), doc = "`tower::ResponseFuture::key_hash`. The")]
    /// same key's hash is the same for every policy and every run.
    ///
    /// ```
    /// use hedging::{key::KeyHash, Policy};
    /// let keyed = Policy::builder().adaptive_delay(0.95).adaptive_keys(8).build();
    /// assert_ne!(keyed.key_hash("users-db"), KeyHash::default());
    /// assert_eq!(keyed.key_hash("users-db"), keyed.key_hash(&String::from("users-db")));
    /// assert_eq!(Policy::builder().build().key_hash("users-db"), KeyHash::default());
    /// ```
    #[inline]
    pub fn key_hash<K: core::hash::Hash + ?Sized>(&self, key: &K) -> KeyHash {
        KeyHash(self.settings.key_of(key))
    }

    /// Turns hedging off (`false`) or back on (`true`) for every call that begins
    /// afterwards, through this policy and all its clones: a disabled policy runs each
    /// call's original alone, as a call of one copy (like
    /// [`max_copies(1)`](crate::PolicyBuilder::max_copies): no timer, no hedge, no
    /// budget asked), still counted in the [`Stats`], which are kept across switches.
    /// Calls already begun go on as they began. The kill switch for an operator, or a
    /// [configuration](crate::PolicyBuilder::enabled) reload.
    ///
    /// One atomic store. A call reads the switch once, where it makes its race: at the
    /// end of its first poll, if its original did not win there (so a call answered on
    /// its first poll pays nothing for it, and the original's
    /// [`Attempt::max_copies`](crate::Attempt::max_copies) is still the policy's); a
    /// disabled call's race has one copy, and keeps it. "Afterwards" is in the sense of the memory model: a
    /// call first polled on this thread after `set_enabled` returned, or on a thread that
    /// synchronized with it (through a lock, a channel, a join), sees the switch; a call
    /// racing with it on another thread sees it or not.
    ///
    /// ```
    /// use hedging::{Hedgeable, Policy};
    /// # futures::executor::block_on(async {
    /// let policy = Policy::builder().max_copies(3).build();
    /// policy.set_enabled(false); // the backend is overloaded: no more copies
    /// assert!(!policy.is_enabled());
    /// let row = (|| async { Ok::<_, ()>(1) }).hedged(&policy).await;
    /// assert_eq!(row, Ok(1));
    /// assert_eq!(policy.stats().calls, 1); // counted as usual
    /// policy.set_enabled(true);
    /// # });
    /// ```
    pub fn set_enabled(&self, enabled: bool) {
        self.settings.enabled.store(enabled, Relaxed);
    }

    /// Whether calls that begin now may hedge: `false` after
    /// [`set_enabled(false)`](Policy::set_enabled) or
    /// [`PolicyBuilder::enabled(false)`](crate::PolicyBuilder::enabled).
    pub fn is_enabled(&self) -> bool {
        self.settings.is_enabled()
    }

    /// The [`Budget`] the policy draws extra copies from, if any.
    pub fn budget(&self) -> Option<&Budget> {
        self.settings.budget.as_ref().map(|linked| &linked.budget)
    }

    /// The timer the policy schedules copies with.
    pub fn timer(&self) -> &T {
        &self.settings.timer
    }

    /// A snapshot of the counters of every call made through this policy or its clones
    /// since it was built or last [reset](Policy::reset_stats).
    ///
    /// Counters are summed from per-thread cells without stopping the callers, so a
    /// snapshot taken while calls are in flight may see a call started but not finished.
    pub fn stats(&self) -> Stats {
        self.settings.counters.snapshot()
    }

    /// Counts one request passed through unhedged because it was outside a layer's scope,
    /// in [`Stats::out_of_scope`]. For layers and middleware built on a policy: a request
    /// the layer was asked to hedge goes through the race (and is one of `calls`, even when
    /// it is sent once); a request it never hedges (a method not listed, a request that
    /// opted out) bypasses the race and is counted here, so that `hedges / calls` means
    /// the same behind every layer.
    pub fn count_out_of_scope(&self) {
        self.settings.counters.add(&[Counter::OutOfScope]);
    }

    /// Starts the counters again from zero. Calls in flight are counted, with their
    /// outcome, in the new count when they end.
    pub fn reset_stats(&self) {
        self.settings.counters.reset();
    }

    pub(crate) fn from_settings(settings: Settings<T>) -> Self {
        Policy {
            settings: Arc::new(settings),
        }
    }

    pub(crate) fn settings(&self) -> &Settings<T> {
        &self.settings
    }
}

impl<T> Clone for Policy<T> {
    fn clone(&self) -> Self {
        Policy {
            settings: Arc::clone(&self.settings),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Policy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let settings = &*self.settings;
        f.debug_struct("Policy")
            .field("name", &settings.name)
            .field("max_copies", &settings.max_copies)
            .field("delays", &settings.schedule.delays)
            .field("max_delay", &settings.schedule.max_delay)
            .field("hedge_probability", &settings.hedge_probability)
            .field("on_hedge", &settings.on_hedge.is_some())
            .field("catch_unwind", &settings.catch_unwind)
            .field("replace_failed", &settings.replace_failed)
            .field("enabled", &self.is_enabled())
            .field(
                "budget",
                &settings.budget.as_ref().map(|linked| &linked.budget),
            )
            .field("adaptive_keys", &settings.keys.as_ref().map(Keys::capacity))
            .field(
                "min_win_rate",
                &settings.withhold.as_ref().map(Withhold::min),
            )
            .field("timer", &settings.timer)
            .field("stats", &self.stats())
            .finish()
    }
}

/// A policy, borrowed or owned: what [`Hedgeable::hedged`](crate::Hedgeable::hedged)
/// accepts.
///
/// Implemented for [`Policy`] and `&Policy`.
pub trait AsPolicy {
    /// The policy's timer.
    type Timer: Timer;

    /// The policy itself.
    fn as_policy(&self) -> &Policy<Self::Timer>;
}

impl<T: Timer> AsPolicy for Policy<T> {
    type Timer = T;

    #[inline]
    fn as_policy(&self) -> &Policy<T> {
        self
    }
}

impl<T: Timer> AsPolicy for &Policy<T> {
    type Timer = T;

    #[inline]
    fn as_policy(&self) -> &Policy<T> {
        self
    }
}

impl<T> Settings<T> {
    /// The hash a call with `key` carries: none without keys, where it costs one check.
    #[inline]
    pub(crate) fn key_of<K: core::hash::Hash + ?Sized>(&self, key: &K) -> Option<Key> {
        self.keys.as_ref().map(|_| keyed::hash(key))
    }

    /// The kept entry of `key`, taking a place for it if it has none and one is free at
    /// `now`.
    #[inline]
    pub(crate) fn entry(&self, key: Option<Key>, now: Duration) -> Option<&Entry> {
        match (&self.keys, key) {
            (Some(keys), Some(key)) => keys.find_or_take(key, now),
            _ => None,
        }
    }

    /// The kept entry of `key`, if it has one, not marked used: for a call's end, whose
    /// key its lookups at the start marked.
    #[inline(always)]
    pub(crate) fn kept(&self, key: Option<Key>) -> Option<&Entry> {
        match (&self.keys, key) {
            (Some(keys), Some(key)) => keys.find(key),
            _ => None,
        }
    }

    /// The win rate that decides whether a call with `key` may hedge, at `now`.
    #[inline]
    pub(crate) fn win_rate_for(
        &self,
        key: Option<Key>,
        now: Duration,
    ) -> Option<(&Withhold, &WinRate)> {
        let withhold = self.withhold.as_ref()?;
        let rate = match self.entry(key, now) {
            Some(entry) => &entry.win_rate,
            None => &withhold.policy,
        };
        Some((withhold, rate))
    }

    /// Whether a call loses the hedge probability roll, and so runs one copy; a policy
    /// whose probability is 1 (or that never hedges) rolls nothing.
    #[inline]
    pub(crate) fn loses_roll(&self) -> bool {
        self.rolls && !self.roll()
    }

    /// Whether calls may hedge: see [`Policy::set_enabled`].
    #[inline]
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// The most copies a call capped at `cap` (at least 1) may start now: see
    /// [`Policy::copies_allowed`].
    #[inline]
    pub(crate) fn copies_allowed(&self, cap: usize) -> usize {
        match self.is_enabled() {
            true => cap.min(self.max_copies),
            false => 1,
        }
    }

    /// Asks the budget, if any, for one copy beyond the first; `Ok(true)` when the copy
    /// holds a `max_outstanding` slot. `first_ask`: the call has not asked before, so it
    /// stops earning.
    ///
    /// Credits the calls ended since the last credit first (see [`Budget::admit`]), so
    /// calls that never hedge cost the budget nothing on their own path.
    pub(crate) fn admit_hedge(
        &self,
        first_ask: bool,
        now: impl FnMut() -> Duration,
    ) -> Result<bool, Refused> {
        let Some(linked) = &self.budget else {
            return Ok(false);
        };
        linked.budget.admit(&linked.member, first_ask, now)
    }

    /// A copy won: a throttling budget earns tokens back.
    #[inline]
    pub(crate) fn copy_won(&self) {
        if let Some(throttle) = &self.throttle {
            throttle.copy_won();
        }
    }

    /// A copy failed: a throttling budget spends a token.
    #[inline]
    pub(crate) fn copy_failed(&self) {
        if let Some(throttle) = &self.throttle {
            throttle.copy_failed();
        }
    }

    /// Gives back `copies` slots of the budget's `max_outstanding`.
    #[cold]
    pub(crate) fn release_slots(&self, copies: u32) {
        if let Some(linked) = &self.budget {
            linked.budget.release(copies as usize);
        }
    }

    /// The one place a budget refusal is recorded, once per copy refused.
    #[cold]
    pub(crate) fn budget_refused(&self) {
        self.counters.add(&[Counter::BudgetDenied]);
    }

    fn roll(&self) -> bool {
        #[cfg(feature = "std")]
        let draw = fastrand::f64();
        #[cfg(not(feature = "std"))]
        let draw =
            fastrand::Rng::with_seed(self.rng_seed.fetch_add(0x9e37_79b9_7f4a_7c15, Relaxed)).f64();
        draw < self.hedge_probability
    }
}
