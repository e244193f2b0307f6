//! [`Budget`]: a token bucket that bounds the extra copies of every policy sharing it.

use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Token units per token: balances are kept in millionths, so deposits stay exact integers.
const UNIT: u64 = 1_000_000;
/// The default most tokens the bucket holds.
const DEFAULT_BURST: u64 = 10;
/// `max_outstanding` when none is set.
const UNCAPPED: u64 = u64::MAX;

/// A hedge budget: bounds the extra copies sent by every policy given it, so hedging cannot
/// multiply the load on a backend that slows down.
///
/// A token bucket: each call deposits `ratio` tokens, up to a [`burst`](Budget::burst);
/// each copy beyond the first withdraws one, and without a token the copy is not started
/// (the call goes on with the copies it has). Copies started at once after a failure draw
/// from it too. [`max_outstanding`](Budget::max_outstanding) also caps the extra copies in
/// flight across every call. Every operation is a lock-free atomic update; a refusal is
/// counted in [`Stats::budget_denied`](crate::Stats::budget_denied).
///
/// Clone it (a reference-count bump) to share one budget between policies. The
/// configuring methods return a new, unshared budget: configure first, then share.
///
/// ```
/// use std::time::Duration;
/// use hedging::{Budget, Hedgeable, Policy};
/// # futures::executor::block_on(async {
/// // At most 5% extra copies over time, at most 20 in flight, across both policies.
/// let budget = Budget::new(0.05).max_outstanding(20);
/// let reads = Policy::builder().delay(Duration::from_millis(5)).budget(&budget).build();
/// let lists = Policy::builder().delay(Duration::from_millis(50)).budget(&budget).build();
///
/// let row: Result<u32, ()> = (|| async { Ok(1) }).hedged(&reads).await;
/// assert_eq!(row, Ok(1));
/// assert_eq!(budget.tokens(), 10.0); // the burst: nothing spent yet
/// # let _ = lists;
/// # });
/// ```
///
/// # When deposits land
///
/// A call that needs no hedge does no work for the budget: a policy credits the calls that
/// ended since its last credit (from its stats) when it next considers a hedge. For one
/// policy this is exactly a deposit per call capped at the burst, made once the call
/// ended; with several policies sharing a budget, a policy's deposits wait until it next
/// considers a hedge.
#[derive(Clone)]
pub struct Budget {
    inner: Arc<Inner>,
}

struct Inner {
    /// Units deposited per call.
    ratio_units: u64,
    /// The most units the bucket holds.
    burst_units: u64,
    /// The most extra copies in flight, or [`UNCAPPED`].
    max_outstanding: u64,
    balance: AtomicU64,
    outstanding: AtomicU64,
}

impl Budget {
    /// A budget that lets through `ratio` extra copies per call over time (`0.05`: 5%),
    /// starting full with the default burst of 10 tokens and no cap on copies in flight.
    ///
    /// A negative or NaN `ratio` is clamped to `0.0`: no deposits, so only the initial
    /// burst can be spent. An infinite one fills the bucket on every call.
    pub fn new(ratio: f64) -> Self {
        let ratio = if ratio.is_nan() { 0.0 } else { ratio.max(0.0) };
        // Rounded; the conversion saturates, so infinity becomes u64::MAX.
        let ratio_units = (ratio * UNIT as f64 + 0.5) as u64;
        Budget::with(ratio_units, DEFAULT_BURST * UNIT, UNCAPPED)
    }

    fn with(ratio_units: u64, burst_units: u64, max_outstanding: u64) -> Self {
        Budget {
            inner: Arc::new(Inner {
                ratio_units,
                burst_units,
                max_outstanding,
                balance: AtomicU64::new(burst_units),
                outstanding: AtomicU64::new(0),
            }),
        }
    }

    /// The most tokens the bucket holds, and holds at the start: how many extra copies a
    /// quiet period can save up for a burst. Default 10.
    ///
    /// Clamped to at least `1.0` (a copy needs a whole token); NaN counts as the default.
    /// Returns a new, full budget.
    pub fn burst(self, tokens: f64) -> Self {
        let tokens = if tokens.is_nan() {
            DEFAULT_BURST as f64
        } else {
            tokens.max(1.0)
        };
        let burst_units = (tokens * UNIT as f64 + 0.5) as u64;
        Budget::with(
            self.inner.ratio_units,
            burst_units,
            self.inner.max_outstanding,
        )
    }

    /// Caps the extra copies in flight at once across every call sharing the budget.
    /// Uncapped by default. A copy holds its slot until a poll of its call sees it finish
    /// (or the call ends or is dropped).
    ///
    /// `0` is clamped to `1`; to turn hedging off, use
    /// [`max_copies(1)`](crate::PolicyBuilder::max_copies). Returns a new, full budget.
    pub fn max_outstanding(self, copies: usize) -> Self {
        let copies = (copies as u64).max(1);
        Budget::with(self.inner.ratio_units, self.inner.burst_units, copies)
    }

    /// The tokens each call deposits, after clamping.
    pub fn ratio(&self) -> f64 {
        self.inner.ratio_units as f64 / UNIT as f64
    }

    /// The tokens in the bucket now. Calls not yet credited are not included (see
    /// [When deposits land](Budget#when-deposits-land)).
    pub fn tokens(&self) -> f64 {
        self.inner.balance.load(Relaxed) as f64 / UNIT as f64
    }

    /// The extra copies in flight now that hold a slot of
    /// [`max_outstanding`](Budget::max_outstanding); always 0 without that cap.
    pub fn outstanding(&self) -> usize {
        self.inner.outstanding.load(Relaxed) as usize
    }

    /// Deposits `calls` calls' worth of tokens, capped at the burst.
    pub(crate) fn deposit_calls(&self, calls: u64) {
        let inner = &*self.inner;
        let deposit = calls.saturating_mul(inner.ratio_units);
        if deposit == 0 {
            return;
        }
        let _ = inner.balance.fetch_update(Relaxed, Relaxed, |balance| {
            (balance < inner.burst_units)
                .then(|| balance.saturating_add(deposit).min(inner.burst_units))
        });
    }

    /// Takes a slot of `max_outstanding` (if capped) and a token; takes neither on refusal.
    /// `Ok(true)` when the copy holds a slot it must [`release`](Budget::release).
    pub(crate) fn withdraw(&self) -> Result<bool, Refused> {
        let inner = &*self.inner;
        let capped = inner.max_outstanding != UNCAPPED;
        if capped {
            inner
                .outstanding
                .fetch_update(Relaxed, Relaxed, |held| {
                    (held < inner.max_outstanding).then_some(held + 1)
                })
                .map_err(|_| Refused)?;
        }
        let token = inner
            .balance
            .fetch_update(Relaxed, Relaxed, |balance| balance.checked_sub(UNIT));
        if token.is_err() {
            if capped {
                self.release(1);
            }
            return Err(Refused);
        }
        Ok(capped)
    }

    /// Gives back `copies` slots of `max_outstanding`.
    pub(crate) fn release(&self, copies: usize) {
        self.inner.outstanding.fetch_sub(copies as u64, Relaxed);
    }
}

/// The budget had no token, or no slot for another copy in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused;

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        let mut debug = f.debug_struct("Budget");
        debug
            .field("ratio", &self.ratio())
            .field("burst", &(inner.burst_units as f64 / UNIT as f64))
            .field("tokens", &self.tokens());
        if inner.max_outstanding != UNCAPPED {
            debug
                .field("max_outstanding", &inner.max_outstanding)
                .field("outstanding", &self.outstanding());
        }
        debug.finish()
    }
}
