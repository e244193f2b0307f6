//! The builder methods of what a policy learns from its calls: the adaptive delay and its
//! bounds, the delay per key, and the win rate below which hedges are withheld.

use core::time::Duration;

use super::{PolicyBuilder, DEFAULT_QUANTILE, DEFAULT_TARGET, MIN_WINDOW};
use crate::adaptive::{AdaptiveConfig, Choice};
use crate::schedule::Delays;

impl<T> PolicyBuilder<T> {
    /// Makes the delay follow the `quantile` (`0.95`: the 95th percentile) of the latencies
    /// of recent calls, bounded by [`min_delay`](Self::min_delay) and
    /// [`max_delay`](Self::max_delay). Until the last
    /// [`adaptive_window`](Self::adaptive_window) holds
    /// [`adaptive_min_samples`](Self::adaptive_min_samples) latencies, the
    /// [`delay`](Self::delay) is used (clamped to the same bounds).
    ///
    /// `quantile` is clamped to `0.0..=1.0`; NaN counts as `0.95`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use hedging::{Hedgeable, Policy, timer::ManualTimer};
    /// # futures::executor::block_on(async {
    /// let clock = ManualTimer::new();
    /// let policy = Policy::builder()
    ///     .adaptive_delay(0.95)                 // hedge at the recent p95
    ///     .delay(Duration::from_millis(20))     // until 100 latencies are known
    ///     .min_delay(Duration::from_millis(2))
    ///     .max_delay(Duration::from_millis(500))
    ///     .timer(clock.clone())
    ///     .build();
    /// assert_eq!(policy.delay(), Some(Duration::from_millis(20)));
    /// # });
    /// ```
    ///
    /// # What is recorded
    ///
    /// The latency of each call's *original* copy, from its first `Pending` to its end:
    ///
    /// - an original that wins is recorded exactly;
    /// - an original dropped because a hedge won is recorded at its age when dropped, a
    ///   lower bound. It was hedged, so that bound already exceeds the delay: it counts on
    ///   the right side of the quantile being tracked, which is all a quantile needs.
    ///   Dropping such copies instead would bias the delay low, and a lower delay hedges
    ///   more calls, dropping more slow copies: a feedback loop;
    /// - hedges are not recorded: they start only when a call is already slow and are
    ///   seen finishing only when they win, a biased sample;
    /// - an original that fails, or answers on its first poll (no clock is read then, to
    ///   keep the fast path free of work), is not recorded.
    ///
    /// Recording is one relaxed atomic increment plus one read of the clock when the call
    /// ends (`benches/adaptive.rs`). The histogram takes about 47 KiB per policy (12 KiB
    /// without `std`): four stripes of five quarter-window slots.
    ///
    /// # Decay
    ///
    /// Latencies are kept per quarter of the [`adaptive_window`](Self::adaptive_window).
    /// Each time a quarter completes, the delay is recomputed from the last four, so it
    /// reflects the last window and follows a shift within 1¼ windows. The first estimate
    /// comes with the `adaptive_min_samples`-th latency, not with a quarter's end. After
    /// an idle gap longer than a window the delay is [`delay`](Self::delay) again until
    /// `adaptive_min_samples` new latencies arrive ([`Policy::delay`](crate::Policy::delay) says so too).
    ///
    /// # Queueing
    ///
    /// The delay hedges stragglers, not a queue. When, in each of the two newest quarter
    /// windows that hold latencies (or the only one so far), more than a tenth of the
    /// latencies exceed four times that quarter's median,
    /// the slow calls are a crowd: the backend is queueing, and extra copies would only
    /// lengthen its queues, unless the window's hedges showed otherwise: most hedged calls
    /// were won by a hedge, most of those hedges answered at the healthy pace (within
    /// twice the window's median, counted from their own start: they did not queue as the
    /// originals had), and the median did not rise with the share of calls hedged (by a
    /// quarter and 100 µs: the copies did not load a queue). Then the slowness was a
    /// replica's (a pause, a GC) and hedging goes on. A queue's delay is the window's
    /// slowest latency (within `min_delay..=max_delay`), so only calls slower than any
    /// recent one are hedged; one quarter window in four it is the window's p98, so a few
    /// hedges keep showing what they do. A service whose latencies spread that wide on
    /// their own (a log-normal σ above about 1.1) and whose hedges do no better is then
    /// rarely hedged: give it a fixed [`delay`](Self::delay).
    pub fn adaptive_delay(self, quantile: f64) -> Self {
        self.learn_delay(quantile, DEFAULT_QUANTILE, Choice::Quantile)
    }

    /// Makes the delay the one the recent latencies predict minimises the `quantile`
    /// (`0.99`: the p99) of call latency, within the budget: what a person would pick by
    /// looking at the latency histogram, chosen again each quarter of the
    /// [`adaptive_window`](Self::adaptive_window) (per key with
    /// [`adaptive_keys`](Self::adaptive_keys)). [`min_delay`](Self::min_delay),
    /// [`max_delay`](Self::max_delay), [`delay`](Self::delay) (until
    /// [`adaptive_min_samples`](Self::adaptive_min_samples) latencies are known),
    /// `adaptive_window` and `adaptive_min_samples` apply as to
    /// [`adaptive_delay`](Self::adaptive_delay); so does what is recorded, but for a
    /// dropped original, kept as censored (below).
    ///
    /// `quantile` is clamped to `0.0..=1.0`; NaN counts as `0.99`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use hedging::{Budget, Policy};
    /// let policy = Policy::builder()
    ///     .optimal_delay(0.99)                  // the delay that cuts the p99 most...
    ///     .budget(&Budget::new(0.10))           // ...for at most 10% extra copies
    ///     .delay(Duration::from_millis(10))     // until 100 latencies are known
    ///     .build();
    /// assert_eq!(policy.delay(), Some(Duration::from_millis(10)));
    /// ```
    ///
    /// # How the delay is chosen
    ///
    /// The model ([`hedging::model`](crate::model), the code `hedging-advisor` predicts
    /// with) takes each copy's latency as an independent draw from the window's
    /// latencies, and predicts, for every delay the histogram can tell apart, the
    /// `quantile` of call latency and the extra copies with up to
    /// [`max_copies`](Self::max_copies) copies. The delays considered are those whose
    /// extra copies the budget allows: with a token-bucket [`Budget`](crate::Budget),
    /// every delay, predicted with the copies it would refuse (it grants its ratio of the
    /// calls that ask for no copy), and with that ratio lowered where a quarter window
    /// saw more refusals than predicted (slow calls that come together empty a bucket
    /// sooner than its ratio says); without one, or with a throttling budget, the
    /// delays predicted to start at most 5% extra copies. Of the delays whose predicted
    /// tail is within 5% of the best, the one that asks for the fewest copies wins
    /// (granted or refused: a delay the budget would refuse is not cheap).
    ///
    /// The first estimate is made again as the time observed doubles, until its quarter
    /// window completes: see [`adaptive_min_samples`](Self::adaptive_min_samples).
    ///
    /// # Queueing
    ///
    /// As for [`adaptive_delay`](Self::adaptive_delay): a crowd of slow calls is a queue
    /// unless the hedges showed otherwise (most hedged calls won by a hedge answering at
    /// the healthy pace, and a median that did not rise with the share of calls hedged).
    /// A queue is hedged past its slowest recent latency, and probed past its p98 one
    /// quarter window in four.
    ///
    /// # Assumptions
    ///
    /// Copies are assumed independent: a copy sent to another replica, or the same one
    /// later, is as likely to be slow as any call. Slowness the request carries (a heavy
    /// query) makes every copy slow: that is what [`min_win_rate`](Self::min_win_rate) is
    /// for.
    ///
    /// # Censored latencies
    ///
    /// An original dropped because a hedge won is only known to have taken longer than
    /// its age then. It is kept as such (censored), and the survival the model reads is the
    /// Kaplan–Meier estimate: a censored latency counts among the calls still running up
    /// to its age, never as one that ended. So hedging, which drops the slow originals,
    /// does not talk the estimate of the slowness it cuts down, and the delay it chose
    /// holds from window to window. The censored counts take one stripe of the histogram
    /// more: about 12 KiB per policy and per key.
    ///
    /// # Bounds
    ///
    /// Once the model chooses, `min_delay` and `max_delay` are guard rails, not the
    /// choice: the default 1 ms `min_delay` keeps a timer from firing below its
    /// resolution; lower it (to 100 µs, say, on a timer that keeps to it) for a backend
    /// that answers in well under a millisecond, whose best delay may be below 1 ms. A
    /// `max_delay` caps how late the slowest calls are hedged.
    pub fn optimal_delay(self, quantile: f64) -> Self {
        // The copies are those of the policy as built.
        self.learn_delay(quantile, DEFAULT_TARGET, Choice::Optimal { copies: 0 })
    }

    /// Makes the `delay` mode learn its delay from latencies, as `choice` says, at
    /// `quantile` (clamped to `0.0..=1.0`; NaN counts as `nan`).
    fn learn_delay(mut self, quantile: f64, nan: f64, choice: Choice) -> Self {
        let quantile = if quantile.is_nan() {
            nan
        } else {
            quantile.clamp(0.0, 1.0)
        };
        if !matches!(self.settings.delays, Delays::Fixed(_)) {
            self.settings.delays = Delays::Fixed(Duration::from_millis(10));
        }
        self.settings.adaptive = Some(AdaptiveConfig {
            quantile,
            min_samples: 0,
            window: Duration::ZERO,
            choice,
        });
        self
    }

    /// The shortest adaptive delay. Default 1 ms: timers are not precise below that. Applies
    /// to [`adaptive_delay`](Self::adaptive_delay) only; a `min_delay` above
    /// [`max_delay`](Self::max_delay) raises `max_delay` to it.
    ///
    /// The adaptive delay holds at most `u64::MAX - 1` nanoseconds (about 584 years): a
    /// longer `min_delay` or `max_delay` is clamped to that, so both stay exact bounds.
    pub fn min_delay(mut self, min_delay: Duration) -> Self {
        self.settings.min_delay = min_delay;
        self
    }

    /// How many latencies the last window must hold before the
    /// [`adaptive_delay`](Self::adaptive_delay) replaces [`delay`](Self::delay): the first
    /// estimate is published with the latency that makes that many, without waiting for
    /// its quarter window to complete. Default 100; `0` is clamped to `1`.
    ///
    /// Those are the calls that ended soonest (a slow call still running is not among
    /// them), so until the quarter completes the estimate is made again each time the
    /// time observed about doubles: at the quarter's start plus each of ..., 1/8, 1/4 and
    /// 1/2 of it that comes after the first estimate, from at least four times
    /// `samples` latencies (fewer would move it with their noise). Until the first turn no
    /// estimate takes its latencies for a queue: one slot's first latencies cannot tell a
    /// queue from a pause that has not ended.
    pub fn adaptive_min_samples(mut self, samples: u32) -> Self {
        self.settings.min_samples = samples.max(1);
        self
    }

    /// How far back the [`adaptive_delay`](Self::adaptive_delay) looks: latencies older
    /// than about a window are forgotten. Default 10 s; clamped to at least 100 ms.
    ///
    /// A shorter window follows a shifting workload sooner; it needs enough calls per
    /// window (see [`adaptive_min_samples`](Self::adaptive_min_samples)) to mean anything.
    pub fn adaptive_window(mut self, window: Duration) -> Self {
        self.settings.window = window.max(MIN_WINDOW);
        self
    }

    /// Learns the delay, and the hedges' win rate, per key: a call names its key with
    /// [`Hedge::key`](crate::Hedge::key) (or [`HedgeStream::key`](crate::HedgeStream::key)),
    /// and at most `keys` keys are tracked at once. For one client in front of several
    /// backends (hosts, methods, sizes of read), each of which is fast or slow in its own
    /// way: one estimate over all of them hedges the fast ones late and the slow ones
    /// often. Clamped to `1..=`[`MAX_KEYS`](Self::MAX_KEYS) (4096); default 0, no keys (every call uses the
    /// policy-wide estimate, and `key` changes nothing and costs nothing).
    ///
    /// With [`adaptive_delay`](Self::adaptive_delay), a key's delay is its own estimate
    /// once its window holds [`adaptive_min_samples`](Self::adaptive_min_samples)
    /// latencies, and the fixed [`delay`](Self::delay) before that, as for a new policy.
    /// A call without a key, or whose key is not kept, uses the policy-wide estimate,
    /// which learns from every call, keyed or not. With
    /// [`min_win_rate`](Self::min_win_rate), each key's hedges are withheld on its own
    /// record. [`Policy::delay_for`](crate::Policy::delay_for) tells a key's delay.
    ///
    /// ```
    /// use std::time::Duration;
    /// use hedging::{Hedgeable, Policy};
    /// # futures::executor::block_on(async {
    /// let policy = Policy::builder()
    ///     .adaptive_delay(0.95)
    ///     .adaptive_keys(64) // one estimate per backend, for up to 64 backends
    ///     .delay(Duration::from_millis(20))
    ///     .build();
    /// let host = "api-1.internal:443";
    /// let row = (|| async { Ok::<_, ()>(7) }).hedged(&policy).key(host).await;
    /// assert_eq!(row, Ok(7));
    /// // Too few latencies of that host yet: its calls hedge at the fixed delay.
    /// assert_eq!(policy.delay_for(host), Some(Duration::from_millis(20)));
    /// # });
    /// ```
    ///
    /// # Which keys are kept
    ///
    /// A key may sit in one of two places of a table of `keys` (two halves of its hash).
    /// A key not yet kept takes the first of them that is free, or whose key had no call
    /// end for a whole [`adaptive_window`](Self::adaptive_window); when both hold keys in
    /// use, the key is not kept, its calls use the policy-wide estimate, and a later call
    /// tries again. So a policy keeps the keys in use, up to about `keys` of them (two
    /// busy keys may share both places before the table is full). A key is looked up
    /// when its call first needs its delay or its record: a call answered before any of
    /// it never touches the table.
    ///
    /// # Memory
    ///
    /// The table is made with the policy: per key, 216 bytes (on a 64-bit target), and
    /// with an adaptive delay its own histogram, about 12 KiB (a quarter of the
    /// policy-wide one, which stripes its counters over four cache-line sets for threads
    /// recording at once), twice that with [`optimal_delay`](Self::optimal_delay) (its
    /// censored latencies). 64 keys with an adaptive delay: about 760 KiB (1.5 MiB).
    pub fn adaptive_keys(mut self, keys: usize) -> Self {
        self.settings.keys = keys;
        self
    }

    /// Withholds hedges that have stopped winning: where fewer than `rate` of a key's
    /// (or, for calls without a kept key, the policy's) recent hedged calls were won by
    /// a hedge, the calls that would hedge do not, but for probes, one in 20 of them,
    /// which show when hedges win again; then hedging resumes. For slowness that every
    /// copy shares (a heavy query, a hot key, a backend slow for every request): there an
    /// extra copy is only load. Clamped to `0.0..=1.0`; default 0 (off; NaN too).
    ///
    /// "Recent" is a moving average over hedged calls, each moving it 1/32 of the way to
    /// won or not; it starts at 1 (a new key hedges), and a probe counts for the 20
    /// calls it stands for, and one probe that wins lifts it to `rate` at least, so hedging
    /// comes back at once whatever the `rate`. Only
    /// copies the clock starts are withheld (in every mode: a fixed, adaptive or
    /// per-copy delay, or parallel copies); a copy after a failure is a retry and starts
    /// as before. A withheld call is counted in
    /// [`Stats::withheld`](crate::Stats::withheld); with the `tracing` feature a key (or
    /// the policy) starting and stopping to withhold is an `INFO` event. `0.05` to
    /// `0.1` suits most services: a hedge that beats a stall wins far more often.
    ///
    /// ```
    /// use hedging::Policy;
    /// let policy = Policy::builder().adaptive_delay(0.95).min_win_rate(0.05).build();
    /// assert_eq!(policy.stats().withheld, 0);
    /// ```
    pub fn min_win_rate(mut self, rate: f64) -> Self {
        self.settings.min_win_rate = rate;
        self
    }
}
