//! [`PolicyBuilder`]: every setting of a [`Policy`], clamped as each method says.

use alloc::borrow::Cow;
use alloc::sync::Arc;
use core::fmt;
use core::time::Duration;

use crate::adaptive::{AdaptiveConfig, Choice, LatencyTracker, TrackerSeed};
use crate::attempt::Attempt;
use crate::budget::Budget;
use crate::keyed::{Keys, Withhold};
use crate::policy::{HedgeHook, Policy, PolicyBudget, Settings};
use crate::schedule::{Delays, Schedule};
use crate::stats::Counters;
use crate::sync::AtomicBool;
use crate::timer::{DefaultTimer, Timer};

mod adaptive;

impl Policy {
    /// A builder with the defaults listed on [`PolicyBuilder`] and the default timer.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::new()
    }
}

impl<T: Timer + Default> Default for Policy<T> {
    /// The policy [`PolicyBuilder`]'s defaults describe, with `T::default()` as its timer.
    fn default() -> Self {
        PolicyBuilder::new().timer(T::default()).build()
    }
}

/// Builds a [`Policy`]. Every input is accepted; out-of-range values are clamped as each
/// method says.
///
/// # Default
///
/// | setting | default |
/// |---|---|
/// | [`name`](Self::name) | none |
/// | [`enabled`](Self::enabled) | `true` |
/// | [`max_copies`](Self::max_copies) | 2 (the original and one hedge) |
/// | [`delay`](Self::delay) | 10 ms |
/// | [`max_delay`](Self::max_delay) | none |
/// | [`adaptive_delay`](Self::adaptive_delay), [`optimal_delay`](Self::optimal_delay) | off (the delay is fixed) |
/// | [`min_delay`](Self::min_delay) | 1 ms (bounds the adaptive delay only) |
/// | [`adaptive_min_samples`](Self::adaptive_min_samples) | 100 |
/// | [`adaptive_window`](Self::adaptive_window) | 10 s |
/// | [`adaptive_keys`](Self::adaptive_keys) | 0 (one estimate for every call) |
/// | [`min_win_rate`](Self::min_win_rate) | 0 (hedges are never withheld) |
/// | [`budget`](Self::budget) | none (no limit on extra copies) |
/// | [`hedge_probability`](Self::hedge_probability) | 1.0 (every call may hedge) |
/// | [`on_hedge`](Self::on_hedge) | none |
/// | `catch_unwind` | off |
/// | [`replace_failed`](Self::replace_failed) | off |
#[doc = crate::feature_doc::with_futures_timer!(
    "| [`timer`](Self::timer) | [`DefaultTimer`]: [`FuturesTimer`](crate::timer::FuturesTimer) with the `futures-timer` feature |",
    "| [`timer`](Self::timer) | [`DefaultTimer`]: `FuturesTimer` with the `futures-timer` feature |"
)]
///
/// The mode methods ([`delay`](Self::delay), [`parallel`](Self::parallel),
/// [`fallback`](Self::fallback), [`delay_fn`](Self::delay_fn)) replace each other: the
/// last one called decides. [`adaptive_delay`](Self::adaptive_delay) makes the `delay`
/// mode follow observed latencies (with `delay` as its starting point); `parallel`,
/// `fallback` and `delay_fn` turn it off.
pub struct PolicyBuilder<T = DefaultTimer> {
    pub(crate) settings: Chosen,
    timer: T,
}

/// The settings chosen on a [`PolicyBuilder`], all but its timer: what `timer` carries over
/// and `clone` copies, written once.
#[derive(Clone)]
pub(crate) struct Chosen {
    name: Option<Cow<'static, str>>,
    enabled: bool,
    max_copies: usize,
    delays: Delays,
    max_delay: Option<Duration>,
    hedge_probability: f64,
    on_hedge: Option<HedgeHook>,
    catch_unwind: bool,
    replace_failed: bool,
    adaptive: Option<AdaptiveConfig>,
    min_delay: Duration,
    min_samples: u32,
    window: Duration,
    budget: Option<Budget>,
    /// `adaptive_keys`, unclamped: 0 is off.
    pub(crate) keys: usize,
    pub(crate) min_win_rate: f64,
}

/// The default of [`PolicyBuilder::min_delay`].
const DEFAULT_MIN_DELAY: Duration = Duration::from_millis(1);
/// The default of [`PolicyBuilder::adaptive_min_samples`].
const DEFAULT_MIN_SAMPLES: u32 = 100;
/// The default of [`PolicyBuilder::adaptive_window`].
const DEFAULT_WINDOW: Duration = Duration::from_secs(10);
/// The shortest [`PolicyBuilder::adaptive_window`].
const MIN_WINDOW: Duration = Duration::from_millis(100);
/// What [`PolicyBuilder::adaptive_delay`] makes of a NaN quantile.
const DEFAULT_QUANTILE: f64 = 0.95;
/// What [`PolicyBuilder::optimal_delay`] makes of a NaN quantile.
const DEFAULT_TARGET: f64 = 0.99;

impl PolicyBuilder {
    /// The defaults listed above, with the default timer.
    pub fn new() -> Self {
        PolicyBuilder {
            settings: Chosen {
                name: None,
                enabled: true,
                max_copies: 2,
                delays: Delays::Fixed(Duration::from_millis(10)),
                max_delay: None,
                hedge_probability: 1.0,
                on_hedge: None,
                catch_unwind: false,
                replace_failed: false,
                adaptive: None,
                min_delay: DEFAULT_MIN_DELAY,
                min_samples: DEFAULT_MIN_SAMPLES,
                window: DEFAULT_WINDOW,
                budget: None,
                keys: 0,
                min_win_rate: 0.0,
            },
            timer: DefaultTimer::default(),
        }
    }
}

impl Default for PolicyBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> PolicyBuilder<T> {
    /// The largest [`max_copies`](Self::max_copies) accepted; larger values are clamped
    /// to it. A call sizes its set of copies by `max_copies` when its first hedge starts.
    pub const MAX_COPIES: usize = 64;

    /// The largest [`adaptive_keys`](Self::adaptive_keys) accepted; larger values are
    /// clamped to it.
    pub const MAX_KEYS: usize = crate::keyed::MAX_KEYS;

    /// A label for the policy: `tracing` events carry it as the field `policy`, and
    /// metrics exporters (such as `hedging-opentelemetry`) as an attribute. Use a short,
    /// fixed name per kind of call (`"user-reads"`), not a per-request value.
    ///
    /// A `&'static str` is kept as it is; a `String` (a name read from a configuration
    /// file) is kept once, with the policy. A call never touches the name unless it emits
    /// a `tracing` event.
    pub fn name(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.settings.name = Some(name.into());
        self
    }

    /// Whether the policy starts enabled: `false` builds it switched off, every call running
    /// its original alone until [`Policy::set_enabled(true)`](Policy::set_enabled). The
    /// kill switch of a configuration file (`enabled = false`). Default `true`.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.settings.enabled = enabled;
        self
    }

    /// The most copies a call may start, the original included. Clamped to
    /// `1..=`[`MAX_COPIES`](Self::MAX_COPIES): `0` becomes `1`, which turns hedging off.
    pub fn max_copies(mut self, max_copies: usize) -> Self {
        self.settings.max_copies = max_copies.clamp(1, Self::MAX_COPIES);
        self
    }

    /// Starts copy k (k ≥ 1) `delay` after copy k-1 started. A zero delay is the same as
    /// [`parallel`](Self::parallel). With [`adaptive_delay`](Self::adaptive_delay), the
    /// delay used until enough latencies are recorded.
    ///
    /// Choose a delay near the backend's 95th-percentile latency: below its median,
    /// hedging mostly doubles the load.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.settings.delays = Delays::Fixed(delay);
        self
    }

    /// The latest a copy may be due, counted from the original's start. Once the schedule
    /// would pass it, the remaining copies start `max(delay / 4, 1 ms)` apart. A
    /// `max_delay` below a fixed [`delay`](Self::delay) is raised to that delay.
    pub fn max_delay(mut self, max_delay: Duration) -> Self {
        self.settings.max_delay = Some(max_delay);
        self
    }

    /// Starts every copy at once (no timer is ever armed). Turns off
    /// [`adaptive_delay`](Self::adaptive_delay).
    pub fn parallel(mut self) -> Self {
        self.settings.delays = Delays::Fixed(Duration::ZERO);
        self.settings.adaptive = None;
        self
    }

    /// Sequential failover: the next copy starts only when every copy in flight has
    /// failed. No timer is ever armed. Turns off [`adaptive_delay`](Self::adaptive_delay).
    pub fn fallback(mut self) -> Self {
        self.settings.delays = Delays::Fallback;
        self.settings.adaptive = None;
        self
    }

    /// The delay before copy k, counted from the start of copy k-1; `None` stops the
    /// timed copies (a failure still starts the next copy at once).
    ///
    /// The function runs once per copy, only when that copy may be needed; it must not
    /// block. Turns off [`adaptive_delay`](Self::adaptive_delay).
    pub fn delay_fn<F>(mut self, delay_for: F) -> Self
    where
        F: Fn(usize) -> Option<Duration> + Send + Sync + 'static,
    {
        self.settings.delays = Delays::PerCopy(Arc::new(delay_for));
        self.settings.adaptive = None;
        self
    }

    /// Bounds the extra copies of this policy (and every other policy given the same
    /// budget), and funds them with the calls of each that need no copy, whichever policy
    /// asks next: see [`Budget`]. No budget by default.
    pub fn budget(mut self, budget: &Budget) -> Self {
        self.settings.budget = Some(budget.clone());
        self
    }

    /// The chance that a call may hedge at all, rolled once per call; a miss runs the
    /// original copy alone. Clamped to `0.0..=1.0`; NaN counts as `1.0`, the default.
    pub fn hedge_probability(mut self, probability: f64) -> Self {
        self.settings.hedge_probability = if probability.is_nan() {
            1.0
        } else {
            probability.clamp(0.0, 1.0)
        };
        self
    }

    /// Runs `hook` synchronously just before each copy beyond the first starts (logging,
    /// metrics). It must not block. A panic in it unwinds through the caller's `poll`,
    /// whatever `catch_unwind` says.
    pub fn on_hedge<F>(mut self, hook: F) -> Self
    where
        F: Fn(&Attempt) + Send + Sync + 'static,
    {
        self.settings.on_hedge = Some(Arc::new(hook));
        self
    }

    /// Whether a panicking copy counts as a failed copy instead of unwinding through the
    /// caller. Off by default (Rust convention: a panic propagates).
    ///
    /// With it on, a panic is caught where the copy is made or polled and the race goes
    /// on. If the race ends with no win and no error to return, the lowest-index panic
    /// resumes, after every copy is dropped.
    #[cfg(feature = "std")]
    #[cfg_attr(docsrs, doc(cfg(feature = "std")))]
    pub fn catch_unwind(mut self, catch_unwind: bool) -> Self {
        self.settings.catch_unwind = catch_unwind;
        self
    }

    /// Whether every failed copy starts the next one at once, while the others keep
    /// running (Polly's and resilience's hedging; gRPC A6 for non-fatal codes). Off by
    /// default: a failure starts the next copy early only when nothing else is in flight.
    ///
    /// Any failure counts (a [`Retry`](crate::Verdict::Retry) verdict, a caught panic, an
    /// attempt timeout, a stream that ended empty), and each starts at most one copy, if
    /// copies remain and the budget allows. A [`RetryAfter`](crate::Verdict::RetryAfter)
    /// or [`Stop`](crate::Verdict::Stop) verdict decides for itself instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use hedging::Policy;
    /// // Two copies at once, and a third the moment either fails.
    /// let policy = Policy::builder()
    ///     .max_copies(3)
    ///     .delay_fn(|copy| (copy == 1).then_some(Duration::ZERO))
    ///     .replace_failed(true)
    ///     .build();
    /// # let _ = policy;
    /// ```
    pub fn replace_failed(mut self, replace_failed: bool) -> Self {
        self.settings.replace_failed = replace_failed;
        self
    }

    #[doc = crate::feature_doc::with_std!(
        "The clock that times the copies, such as [`ManualTimer`](crate::timer::ManualTimer) in tests.",
        "The clock that times the copies, such as `ManualTimer` (feature `std`) in tests."
    )]
    pub fn timer<U: Timer>(self, timer: U) -> PolicyBuilder<U> {
        PolicyBuilder {
            settings: self.settings,
            timer,
        }
    }

    /// The policy.
    pub fn build(self) -> Policy<T>
    where
        T: Timer,
    {
        let budget = self.settings.budget.clone().map(PolicyBudget::new);
        let counters = budget
            .as_ref()
            .map_or_else(Counters::new, PolicyBudget::counters);
        let mut seed = None;
        let (delays, max_delay) = match (self.settings.delays, self.settings.adaptive) {
            (Delays::Fixed(fallback), Some(adaptive)) => {
                let max_delay = self
                    .settings
                    .max_delay
                    .map(|max_delay| max_delay.max(self.settings.min_delay));
                let choice = match adaptive.choice {
                    // The copies a call may start, as the policy is built.
                    Choice::Optimal { .. } => Choice::Optimal {
                        copies: self.settings.max_copies as u8,
                    },
                    Choice::Quantile => Choice::Quantile,
                };
                let config = AdaptiveConfig {
                    min_samples: self.settings.min_samples,
                    window: self.settings.window,
                    choice,
                    ..adaptive
                };
                let tracker_seed = TrackerSeed {
                    config,
                    fallback,
                    min_delay: self.settings.min_delay,
                    max_delay: max_delay.unwrap_or(Duration::MAX),
                    budget: self.settings.budget.clone(),
                };
                let tracker = LatencyTracker::new(&tracker_seed);
                // The model predicts copies for every call, the budget is funded by every
                // call: calls answered at their first poll count, as answering at once.
                let tracker = match choice {
                    Choice::Optimal { .. } => tracker.counting_answers(counters.cells()),
                    Choice::Quantile => tracker,
                };
                seed = Some(tracker_seed);
                (Delays::Adaptive(Arc::new(tracker)), max_delay)
            }
            (Delays::Fixed(delay), _) => (
                Delays::Fixed(delay),
                self.settings.max_delay.map(|max| max.max(delay)),
            ),
            (delays, _) => (delays, self.settings.max_delay),
        };
        Policy::from_settings(Settings {
            name: self.settings.name,
            max_copies: self.settings.max_copies,
            schedule: Schedule { delays, max_delay },
            hedge_probability: self.settings.hedge_probability,
            rolls: self.settings.max_copies > 1 && self.settings.hedge_probability < 1.0,
            enabled: AtomicBool::new(self.settings.enabled),
            on_hedge: self.settings.on_hedge,
            catch_unwind: self.settings.catch_unwind,
            replace_failed: self.settings.replace_failed,
            timer: self.timer,
            counters,
            #[cfg(not(feature = "std"))]
            rng_seed: core::sync::atomic::AtomicU64::new(0x853c_49e6_748f_ea9b),
            throttle: self
                .settings
                .budget
                .clone()
                .filter(|budget| budget.counts_outcomes()),
            budget,
            keys: (self.settings.keys > 0)
                .then(|| Keys::new(self.settings.keys, seed.as_ref(), self.settings.window)),
            withhold: Withhold::new(self.settings.min_win_rate),
        })
    }
}

impl<T: Clone> Clone for PolicyBuilder<T> {
    fn clone(&self) -> Self {
        PolicyBuilder {
            settings: self.settings.clone(),
            timer: self.timer.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for PolicyBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyBuilder")
            .field("name", &self.settings.name)
            .field("enabled", &self.settings.enabled)
            .field("max_copies", &self.settings.max_copies)
            .field("delays", &self.settings.delays)
            .field("max_delay", &self.settings.max_delay)
            .field("hedge_probability", &self.settings.hedge_probability)
            .field("on_hedge", &self.settings.on_hedge.is_some())
            .field("catch_unwind", &self.settings.catch_unwind)
            .field("replace_failed", &self.settings.replace_failed)
            .field("adaptive", &self.settings.adaptive)
            .field("min_delay", &self.settings.min_delay)
            .field("adaptive_min_samples", &self.settings.min_samples)
            .field("adaptive_window", &self.settings.window)
            .field("budget", &self.settings.budget)
            .field("adaptive_keys", &self.settings.keys)
            .field("min_win_rate", &self.settings.min_win_rate)
            .field("timer", &self.timer)
            .finish()
    }
}
