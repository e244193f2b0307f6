//! The adaptive delay's histogram arithmetic: log-linear buckets of microseconds (16 per
//! power of two from 16 µs, exact below: at most 6.25% relative error), the quantile of a
//! window of counts, and whether a slot's slow calls are a queue.

use core::time::Duration;

/// Values below this many microseconds get a bucket each.
const LINEAR: u64 = 16;
/// Buckets per power of two above [`LINEAR`] (as a shift: 16 buckets).
const SUB_BITS: u32 = 4;
/// Microsecond values at or above `1 << MAX_BITS` (about 12.7 days) share the last bucket.
#[cfg(not(loom))]
const MAX_BITS: u32 = 40;
/// Under `loom`, 16 buckets a row: a model's ring whose every counter loom can follow.
#[cfg(loom)]
const MAX_BITS: u32 = SUB_BITS;
/// Buckets per slot.
pub(super) const BUCKETS: usize =
    LINEAR as usize + ((MAX_BITS - SUB_BITS) as usize) * (1 << SUB_BITS);
/// A latency over this many times the window's median is slow...
const CROWD_MEDIANS: u64 = 4;
/// ...and when more than one latency in this many is that slow, the slow calls are a
/// queue, not stragglers.
const CROWD_ONE_IN: u64 = 10;

/// The bucket of a latency, counted in whole microseconds.
#[inline]
pub(super) fn bucket_of(latency: Duration) -> usize {
    // Whole seconds are clamped first so the multiplication cannot overflow.
    let secs = latency.as_secs().min(1 << MAX_BITS);
    let micros = (secs * 1_000_000 + u64::from(latency.subsec_micros())).min((1 << MAX_BITS) - 1);
    if micros < LINEAR {
        return micros as usize;
    }
    let power = 63 - micros.leading_zeros();
    let sub = (micros >> (power - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    LINEAR as usize + ((power - SUB_BITS) as usize) * (1 << SUB_BITS) + sub as usize
}

/// The upper edge of every bucket in nanoseconds: the classes of the model
/// ([`Survival`](crate::model::Survival)) a window's counts are read as.
pub(super) static EDGES_NANOS: [u64; BUCKETS] = {
    let mut edges = [0; BUCKETS];
    let mut bucket = 0;
    while bucket < BUCKETS {
        edges[bucket] = upper_edge_micros(bucket) * 1000;
        bucket += 1;
    }
    edges
};

/// The median of a slot's or window's counts, in microseconds (0 when empty).
pub(super) fn median_micros(window: &[u64; BUCKETS]) -> u64 {
    let total: u64 = window.iter().sum();
    if total == 0 {
        return 0;
    }
    bucket_at(window, total, 0.5)
}

/// The upper edge of a bucket in microseconds: the delay a quantile in it maps to, so the
/// delay errs long (fewer hedges), by at most one bucket.
const fn upper_edge_micros(bucket: usize) -> u64 {
    if bucket < LINEAR as usize {
        return bucket as u64 + 1;
    }
    let above = bucket - LINEAR as usize;
    let power = (above >> SUB_BITS) as u32 + SUB_BITS;
    let sub = (above & ((1 << SUB_BITS) - 1)) as u64;
    ((1 << SUB_BITS) + sub + 1) << (power - SUB_BITS)
}

/// The delay a window of counts per bucket suggests, in microseconds: the upper edge of
/// the bucket holding the `quantile`, or `None` with fewer than `min_samples` samples.
pub(super) fn window_delay(
    window: &[u64; BUCKETS],
    quantile: f64,
    min_samples: u32,
) -> Option<u64> {
    let total: u64 = window.iter().sum();
    if total == 0 || total < u64::from(min_samples) {
        return None;
    }
    Some(bucket_at(window, total, quantile))
}

/// Whether a slot's slow calls are a queue rather than stragglers: more than one latency
/// in [`CROWD_ONE_IN`] over [`CROWD_MEDIANS`] times the median. The slot has samples.
pub(super) fn is_queue(slot: &[u64; BUCKETS]) -> bool {
    let total: u64 = slot.iter().sum();
    let slow_above = bucket_at(slot, total, 0.5).saturating_mul(CROWD_MEDIANS);
    let slow: u64 = (0..BUCKETS)
        .filter(|&bucket| upper_edge_micros(bucket) > slow_above)
        .map(|bucket| slot[bucket])
        .sum();
    slow.saturating_mul(CROWD_ONE_IN) > total
}

/// The upper edge of the bucket holding the nearest-rank `quantile` of the `total` counts:
/// the smallest value with at least `quantile` of them at or below it.
fn bucket_at(window: &[u64; BUCKETS], total: u64, quantile: f64) -> u64 {
    // In parts per million, so 0.95 * 100 is exactly rank 95.
    let parts = (quantile * 1e6 + 0.5) as u128;
    let rank = (parts * u128::from(total)).div_ceil(1_000_000) as u64;
    let rank = rank.clamp(1, total);
    let mut seen = 0;
    let bucket = (0..BUCKETS)
        .find(|&bucket| {
            seen += window[bucket];
            seen >= rank
        })
        .expect("the rank is at most the total");
    upper_edge_micros(bucket)
}

#[cfg(test)]
mod tests {
    use core::time::Duration;

    use super::*;

    #[test]
    fn buckets_are_monotonic_and_their_edges_bound_their_values() {
        let mut previous = 0;
        for micros in
            (0..100_000u64).chain([1 << 20, 1 << 30, (1 << 40) - 1, 1 << 41, u64::MAX / 1000])
        {
            let bucket = bucket_of(Duration::from_micros(micros));
            assert!(bucket >= previous, "{micros}");
            assert!(bucket < BUCKETS, "{micros} -> {bucket}");
            previous = bucket;
            if micros < (1 << MAX_BITS) {
                let edge = upper_edge_micros(bucket);
                assert!(edge > micros, "{micros} -> edge {edge}");
                // At most one sixteenth above the value (or 1 µs in the linear range).
                assert!(
                    edge - micros <= (micros / 16).max(1),
                    "{micros} -> edge {edge}"
                );
            }
        }
    }
}
