//! [`Budget`]: bounds the extra copies of every policy sharing it, as a token bucket whose
//! savings follow the traffic or as gRPC's retry throttling, with an optional cap on copies
//! in flight and a floor per second.

use core::fmt;
use core::time::Duration;

use crate::sync::{Arc, AtomicU64, Ordering::Relaxed};

mod decide;
mod members;
mod recent;

pub(crate) use self::members::Member;
#[cfg(feature = "std")]
use self::members::Members;
use self::recent::Recent;

/// Token units per token: balances are kept in millionths, so deposits stay exact integers.
const UNIT: u64 = 1_000_000;
/// The tokens a token bucket starts with, and the least it may save whatever the traffic.
const DEFAULT_BURST: u64 = 10;
/// A token bucket saves at most what the calls of this many nanoseconds earn (one second).
const SAVINGS_WINDOW: u64 = 1_000_000_000;
/// `max_outstanding` when none is set.
const UNCAPPED: u64 = u64::MAX;
/// The range of [`Budget::throttling`]'s `max_tokens`, in units: gRPC's `(0, 1000]`, at
/// its precision of three decimals.
const THROTTLING_TOKENS: (u64, u64) = (UNIT / 1000, 1000 * UNIT);

/// A hedge budget: bounds the extra copies sent by every policy given it, so hedging cannot
/// multiply the load on a backend that slows down.
///
/// Two kinds:
///
/// - [`Budget::new(ratio)`](Budget::new), a token bucket: every call that ends without
///   asking for a copy beyond its first (or asking only for copies due with the call, as
///   [`parallel()`](crate::PolicyBuilder::parallel) sends them) earns `ratio` tokens, into
///   the budget every policy given it shares; each copy beyond the first
///   withdraws one, and without a token the copy is not started (the call goes on with the
///   copies it has). Copies started at once after a failure draw from it too. What the
///   bucket may save follows the traffic: one second of calls' worth (see
///   [How it decides](Budget#how-it-decides)).
/// - [`Budget::throttling(max_tokens, token_ratio)`](Budget::throttling), gRPC's retry
///   throttling: failures spend tokens, wins earn them back, and no copy beyond the first
///   starts while the tokens are at or below half of `max_tokens`.
///
/// Either may add [`max_outstanding`](Budget::max_outstanding), a cap on extra copies in
/// flight across every call, and [`min_per_second`](Budget::min_per_second), a floor of
/// extra copies per second that lets a quiet service hedge whatever the tokens say. Every
/// operation on a call's path is a lock-free atomic update; a refusal is counted in
/// [`Stats::budget_denied`](crate::Stats::budget_denied).
///
/// Clone it (a reference-count bump) to share one budget between policies. The
/// configuring methods return a new, unshared budget: configure first, then share.
///
/// ```
/// use std::time::Duration;
/// use hedging::{Budget, Hedgeable, Policy};
/// # futures::executor::block_on(async {
/// // At most 10% extra copies over time, at most 20 in flight, across both policies.
/// let budget = Budget::new(0.10).max_outstanding(20);
/// let reads = Policy::builder().delay(Duration::from_millis(5)).budget(&budget).build();
/// let lists = Policy::builder().delay(Duration::from_millis(50)).budget(&budget).build();
///
/// let row: Result<u32, ()> = (|| async { Ok(1) }).hedged(&reads).await;
/// assert_eq!(row, Ok(1));
/// assert_eq!(budget.tokens(), 10.0); // what it starts with: nothing spent yet
/// # let _ = lists;
/// # });
/// ```
///
/// # How it decides
///
/// A token bucket answers three questions, each with one atomic update:
///
/// - **What a call earns.** A call that ends without asking for a copy beyond its first
///   earns `ratio` tokens; a call that asked after waiting or after a failure (whether
///   its copy started or was refused) earns nothing. The calls that needed no hedge pay
///   for the ones that do, so extra copies stay at or below `ratio` of all calls over
///   time, and in a brownout, where every call asks, the bucket earns nothing and soon
///   refuses all but the [floor](Budget::min_per_second). A copy due with the call
///   itself (a zero delay: every copy of a
///   [`parallel()`](crate::PolicyBuilder::parallel) policy) is how the call is sent, not
///   a sign that it ran slow: asking for it does not stop the call earning. So a parallel
///   policy with a budget of its own sends a second copy with about `ratio` of its calls,
///   in a brownout as at any time.
/// - **What it may save.** At most what one second of calls earns: `ratio` × the calls
///   that ended in the last second (counted in eighths of a second), and never less than
///   10 tokens, which is also what it starts with. A cluster of slow calls (a replica's GC
///   pause stalls everything queued on it at once) may so spend what the calls of the last
///   second earned, however large the traffic, while no quiet hour can save up for a
///   flood. An explicit [`burst`](Budget::burst) replaces this with a fixed cap.
/// - **What a copy costs.** One token. A copy that finds less than a whole token is
///   refused, unless the floor lets it through. Savings above what the last second's
///   traffic may save have expired: when the traffic falls, the copy that asks next finds
///   them trimmed.
///
/// So in normal operation, where calls ask for copies at a steady share below `ratio`, the
/// bucket holds a second of savings and refuses almost nothing, even when the slow calls
/// come together; in a brownout it spends at most about a second's savings, then holds
/// the extra copies to what the calls that still answer in time earn. Give the ratio
/// headroom over the share of calls your delay hedges: a delay at the p95 of latencies
/// hedges about 5% of calls, and a 10% budget leaves it room for the clusters; a 5% one
/// refuses whenever that share runs above its average.
///
/// # When deposits land
///
/// A call that needs no hedge does no work for a token bucket: its policy's stats count
/// it, and the budget reads the counts later. A policy credits its calls that ended since
/// its last credit when one of its calls asks for a copy; when a copy finds the bucket
/// short, the calls of every policy sharing the budget are credited first, and the copy
/// asks again. For one policy this is exactly a deposit per earning call, capped at the
/// savings, made once the call ended; with several, the calls of a policy that never
/// asks fund the others' copies as soon as they need them. Calls credited after a long
/// quiet spell count toward the last second's traffic only in proportion (a minute's
/// calls credited at once count as a sixtieth). The calls a policy ended before it was
/// dropped are credited too: the next policy given the budget takes its place, so a
/// budget keeps one place (about 4 KiB) per policy alive at once, however many come and
/// go. Without the `std` feature a policy's calls are credited at its own asks only.
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

/// How a budget decides; fixed when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Each call deposits the ratio, each extra copy withdraws a token.
    Bucket,
    /// gRPC A6: failed copies spend a token, winning copies earn the ratio back.
    Throttling,
}

/// What is fixed when a budget is made; its ratio is not: see [`Budget::set_ratio`].
#[derive(Clone, Copy, Debug)]
struct Config {
    kind: Kind,
    /// The units held at the start, and the most held: a fixed cap for throttling and an
    /// explicit burst, else the least the savings cap falls to.
    max_units: u64,
    /// Whether a bucket's savings follow the traffic (no explicit burst).
    follows_traffic: bool,
    /// The most extra copies in flight, or [`UNCAPPED`].
    max_outstanding: u64,
    /// Extra copies per second let through whatever the tokens say; 0 for none.
    min_per_second: u32,
}

struct Inner {
    config: Config,
    /// Units deposited per earning call (a bucket) or per winning copy (throttling).
    ratio_units: AtomicU64,
    /// The tokens, in units. With `outstanding`, the one line every policy sharing the
    /// budget writes: only where a call asks for a copy (a few calls in a hundred), never
    /// where it answers in time, so more cores contend on it only as hedges come together.
    balance: AtomicU64,
    /// The calls credited in each slot of the last second, for the savings cap.
    recent: Recent,
    outstanding: AtomicU64,
    /// [`Budget::min_per_second`]'s schedule (a generic cell rate algorithm): the
    /// theoretical time, in nanoseconds of the asking policy's clock, at which the floor
    /// is next fully rested.
    floor_at: AtomicU64,
    /// The policies given the budget, whose ended calls it credits (with `std`).
    #[cfg(feature = "std")]
    members: Members,
}

impl Budget {
    /// A token bucket that lets through `ratio` extra copies per call over time (`0.05`:
    /// 5%), starting full with the default burst of 10 tokens and no cap on copies in
    /// flight.
    ///
    /// A negative or NaN `ratio` is clamped to `0.0`: no deposits, so only the initial
    /// burst can be spent. An infinite one fills the bucket on every call.
    pub fn new(ratio: f64) -> Self {
        Budget::with(
            Kind::Bucket.ratio_units(ratio),
            Config {
                kind: Kind::Bucket,
                max_units: DEFAULT_BURST * UNIT,
                follows_traffic: true,
                max_outstanding: UNCAPPED,
                min_per_second: 0,
            },
        )
    }

    /// gRPC's retry throttling (proposal A6, `retryThrottling`), counted per copy as A6
    /// counts attempts: every copy that fails without being fatal (a
    /// [`Retry`](crate::Verdict::Retry), [`RetryAfter`](crate::Verdict::RetryAfter) or
    /// [`Stop`](crate::Verdict::Stop) verdict, an attempt timeout, a caught panic, a stream
    /// that ended empty) spends one token, every winning copy earns `token_ratio` back (up
    /// to `max_tokens`), a [`Fatal`](crate::Verdict::Fatal) or withdrawn one neither; no
    /// copy beyond the first starts while the tokens are at or below `max_tokens / 2`.
    /// The tokens start at `max_tokens`. The original copy of a call always starts.
    ///
    /// As in A6, `max_tokens` is clamped to `0.001..=1000.0` and `token_ratio` to at least
    /// `0.001` (A6 keeps three decimals); NaN counts as the lowest value, the most
    /// cautious.
    ///
    /// ```
    /// use hedging::{Budget, Policy};
    /// // A6's example: {"maxTokens": 10, "tokenRatio": 0.1}
    /// let budget = Budget::throttling(10.0, 0.1);
    /// let policy = Policy::builder().max_copies(3).budget(&budget).build();
    /// assert_eq!(budget.tokens(), 10.0);
    /// # let _ = policy;
    /// ```
    pub fn throttling(max_tokens: f64, token_ratio: f64) -> Self {
        let (lowest, highest) = THROTTLING_TOKENS;
        let max_units = if max_tokens.is_nan() {
            lowest
        } else {
            units(max_tokens).clamp(lowest, highest)
        };
        Budget::with(
            Kind::Throttling.ratio_units(token_ratio),
            Config {
                kind: Kind::Throttling,
                max_units,
                follows_traffic: false,
                max_outstanding: UNCAPPED,
                min_per_second: 0,
            },
        )
    }

    fn with(ratio_units: u64, config: Config) -> Self {
        Budget {
            inner: Arc::new(Inner {
                config,
                ratio_units: AtomicU64::new(ratio_units),
                balance: AtomicU64::new(config.max_units),
                recent: Recent::new(),
                outstanding: AtomicU64::new(0),
                floor_at: AtomicU64::new(0),
                #[cfg(feature = "std")]
                members: Members::default(),
            }),
        }
    }

    /// Copies the configuration and the ratio, with one change, into a new, full budget.
    fn reconfigured(&self, change: impl FnOnce(&mut Config)) -> Self {
        let mut config = self.inner.config;
        change(&mut config);
        Budget::with(self.ratio_units(), config)
    }

    /// A fixed cap on the tokens a token bucket holds, which it also starts with: how many
    /// extra copies a quiet period can save up for a burst, whatever the traffic. Without
    /// it the cap follows the traffic: a second of calls' earnings, at least 10 tokens
    /// (see [How it decides](Budget#how-it-decides)).
    ///
    /// Clamped to at least `1.0` (a copy needs a whole token); NaN counts as 10. A
    /// throttling budget keeps its `max_tokens`: this changes nothing there. Returns a new,
    /// full budget.
    pub fn burst(self, tokens: f64) -> Self {
        let tokens = if tokens.is_nan() {
            DEFAULT_BURST as f64
        } else {
            tokens.max(1.0)
        };
        self.reconfigured(|config| {
            if config.kind == Kind::Bucket {
                config.max_units = units(tokens);
                config.follows_traffic = false;
            }
        })
    }

    /// Caps the extra copies in flight at once across every call sharing the budget.
    /// Uncapped by default. A copy holds its slot exactly while it is alive: it is given
    /// back on the poll of its call that sees it finish (or when the call ends or is
    /// dropped, after the copy is dropped).
    ///
    /// `0` is clamped to `1`; to turn hedging off, use
    /// [`max_copies(1)`](crate::PolicyBuilder::max_copies). Returns a new, full budget.
    pub fn max_outstanding(self, copies: usize) -> Self {
        let copies = (copies as u64).max(1);
        self.reconfigured(|config| config.max_outstanding = copies)
    }

    /// A floor: `copies` extra copies per second (of the asking policy's clock) are let
    /// through when the tokens alone would refuse them, so a service with few calls can
    /// still hedge (Envoy's `min_retry_concurrency`, Finagle's `minRetriesPerSec`). Up to
    /// one second's worth may go out at once after a quiet second. The floor never lifts
    /// [`max_outstanding`](Budget::max_outstanding). Default 0, no floor. Returns a new,
    /// full budget.
    ///
    /// ```
    /// use hedging::Budget;
    /// // 1% extra copies, but at least 5 a second however few calls there are.
    /// let budget = Budget::new(0.01).min_per_second(5);
    /// # let _ = budget;
    /// ```
    pub fn min_per_second(self, copies: u32) -> Self {
        self.reconfigured(|config| config.min_per_second = copies)
    }

    /// The tokens each call that asked for no extra copy deposits (a token bucket), or each
    /// winning copy earns back (throttling), after clamping: as made, or as last
    /// [set](Budget::set_ratio).
    pub fn ratio(&self) -> f64 {
        self.ratio_units() as f64 / UNIT as f64
    }

    /// Changes the ratio of this budget, shared by every policy and clone that holds it,
    /// for what comes next: a token bucket's `ratio` (clamped as [`Budget::new`] clamps
    /// it), or a throttling budget's `token_ratio` (clamped as
    /// [`Budget::throttling`] clamps it). One atomic store: calls in flight go on, the
    /// tokens and every other setting are kept, and the policies' stats are untouched.
    ///
    /// For a token bucket, following [How it decides](Budget#how-it-decides): every
    /// earning call credited from now on deposits the new ratio (calls that ended but are
    /// not credited yet too: see [When deposits land](Budget#when-deposits-land)), and
    /// what the bucket may save is the new ratio × the last second's calls (at least 10
    /// tokens, or the explicit [`burst`](Budget::burst)) at once. Lowering the ratio so
    /// trims savings above the new cap when a copy next asks; raising it adds no tokens,
    /// it lets the bucket earn and save more from now on. For throttling, each winning
    /// copy earns the new `token_ratio` back; `max_tokens` is kept.
    ///
    /// ```
    /// use hedging::Budget;
    /// let budget = Budget::new(0.10);
    /// let shared = budget.clone(); // held by a policy, say
    /// budget.set_ratio(0.02);      // a backend in trouble: hedge less
    /// assert_eq!(shared.ratio(), 0.02);
    /// budget.set_ratio(-1.0);      // clamped as `Budget::new` clamps
    /// assert_eq!(shared.ratio(), 0.0);
    /// ```
    pub fn set_ratio(&self, ratio: f64) {
        let units = self.inner.config.kind.ratio_units(ratio);
        self.inner.ratio_units.store(units, Relaxed);
    }

    /// The extra copies per call a token bucket lets through over time (its ratio), or
    /// `None` for a throttling budget, whose tokens follow failures, not calls.
    pub(crate) fn extra_ratio(&self) -> Option<f64> {
        (self.inner.config.kind == Kind::Bucket).then(|| self.ratio())
    }

    /// The ratio in units.
    fn ratio_units(&self) -> u64 {
        self.inner.ratio_units.load(Relaxed)
    }

    /// The tokens now. For a token bucket, calls not yet credited are not included (see
    /// [When deposits land](Budget#when-deposits-land)), and savings above what the last
    /// second's traffic may save are trimmed only when a copy next asks.
    pub fn tokens(&self) -> f64 {
        self.inner.balance.load(Relaxed) as f64 / UNIT as f64
    }

    /// The extra copies in flight now that hold a slot of
    /// [`max_outstanding`](Budget::max_outstanding); always 0 without that cap.
    pub fn outstanding(&self) -> usize {
        self.inner.outstanding.load(Relaxed) as usize
    }
}

impl Kind {
    /// A ratio in units, clamped as the kind's constructor says: a bucket's to at least
    /// 0 (NaN: 0), throttling's `token_ratio` to at least 0.001 (NaN: 0.001).
    fn ratio_units(self, ratio: f64) -> u64 {
        match self {
            Kind::Bucket if ratio.is_nan() => 0,
            Kind::Bucket => units(ratio.max(0.0)),
            Kind::Throttling => {
                let (lowest, _) = THROTTLING_TOKENS;
                if ratio.is_nan() {
                    lowest
                } else {
                    units(ratio).max(lowest)
                }
            }
        }
    }
}

/// `duration` in nanoseconds, saturating.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// `value` in units, rounded; the conversion saturates, so infinity is `u64::MAX`.
fn units(value: f64) -> u64 {
    (value * UNIT as f64 + 0.5) as u64
}

/// The budget had no token, or no slot for another copy in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused;

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = &self.inner.config;
        let mut debug = f.debug_struct("Budget");
        let max = config.max_units as f64 / UNIT as f64;
        match config.kind {
            Kind::Bucket if config.follows_traffic => debug
                .field("ratio", &self.ratio())
                .field("burst", &"a second of calls' earnings, at least 10"),
            Kind::Bucket => debug.field("ratio", &self.ratio()).field("burst", &max),
            Kind::Throttling => debug
                .field("max_tokens", &max)
                .field("token_ratio", &self.ratio()),
        };
        debug.field("tokens", &self.tokens());
        if config.max_outstanding != UNCAPPED {
            debug
                .field("max_outstanding", &config.max_outstanding)
                .field("outstanding", &self.outstanding());
        }
        if config.min_per_second > 0 {
            debug.field("min_per_second", &config.min_per_second);
        }
        debug.finish()
    }
}
