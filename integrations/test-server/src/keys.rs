//! What the integrations' keys tests share: a fast backend's and a slow one's latency,
//! and a policy that learns each key's p95 from its first ten latencies.

use std::time::Duration;

use hedging::timer::ManualTimer;
use hedging::Policy;

use crate::VirtualClock;

/// The fast backend's latency.
pub const FAST: Duration = Duration::from_millis(2);
/// The slow backend's latency.
pub const SLOW: Duration = Duration::from_millis(40);
/// The fixed delay, a key's until its window holds enough latencies: far above both.
pub const FIXED: Duration = Duration::from_secs(1);
/// The latencies a key's window holds before its own estimate is used.
pub const SAMPLES: u32 = 10;
/// Places for keys. Loopback ports, and so the keys that name them, change from run to
/// run: with 256 places, a second key finds both its places held by the first once in
/// 65,536.
pub const KEYS: usize = 256;
/// A quarter of the default adaptive window: each estimate is recomputed when one ends.
pub const QUARTER: Duration = Duration::from_millis(2500);

/// A policy of two copies learning the p95 of each of up to `keys` keys (none: `0`)
/// from its first [`SAMPLES`] latencies, [`FIXED`] until then, on `clock`.
pub fn keyed_policy(clock: &VirtualClock, keys: usize) -> Policy<ManualTimer> {
    Policy::builder()
        .max_copies(2)
        .delay(FIXED)
        .adaptive_delay(0.95)
        .adaptive_min_samples(SAMPLES)
        .adaptive_keys(keys)
        .timer(clock.timer())
        .build()
}

/// Whether `delay` is within 5% of `latency`: a p95 learnt from latencies of `latency`.
pub fn near(delay: Option<Duration>, latency: Duration) -> bool {
    let delay = delay.expect("a delay").as_secs_f64();
    (delay / latency.as_secs_f64() - 1.0).abs() < 0.05
}
