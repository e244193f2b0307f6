//! What the readers accumulate: every latency in a histogram (memory bounded by its
//! resolution, not by the input), and, where the input says when each call was made, a
//! bounded timeline for the replay.

use hdrhistogram::Histogram;

use crate::error::InputError;

/// Significant digits the histogram keeps: a latency is known to 0.1%.
const SIGNIFICANT_DIGITS: u8 = 3;

/// The most calls the timeline keeps; past it, every other one is dropped and then only
/// every second call read is kept, and so on, so the timeline stays evenly thinned.
pub const TIMELINE_CAP: usize = 100_000;

/// The latencies read from an input, in nanoseconds.
#[derive(Debug)]
pub struct Latencies {
    histogram: Histogram<u64>,
    /// Calls counted at an exact edge (a Prometheus bucket's `le`): edge -> calls.
    buckets: std::collections::BTreeMap<u64, u64>,
    /// Calls only known to have run past an edge (a Prometheus `+Inf` bucket): the edge
    /// and how many.
    censored: Option<(u64, u64)>,
    timeline: Timeline,
}

/// The latency classes the model reads: each class's upper edge (nanoseconds,
/// ascending), the calls that ended in it, and those only known to have run past it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Classes {
    /// Upper edges, in nanoseconds, ascending.
    pub edges: Vec<u64>,
    /// Calls that ended in each class.
    pub ended: Vec<u64>,
    /// Calls only known to have run past each class's edge.
    pub censored: Vec<u64>,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

impl Latencies {
    /// Nothing read yet.
    pub fn new() -> Latencies {
        let mut histogram =
            Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid");
        histogram.auto(true);
        Latencies {
            histogram,
            buckets: Default::default(),
            censored: None,
            timeline: Timeline::default(),
        }
    }

    /// Counts `count` calls of `nanos`; `line` says where, should the value be out of the
    /// histogram's range.
    pub fn record(&mut self, nanos: u64, count: u64, line: u64) -> Result<(), InputError> {
        self.histogram.record_n(nanos, count).map_err(|_| {
            InputError::at_line(
                line,
                format!("a latency of {nanos} ns is too long to count"),
            )
        })
    }

    /// Counts one call of `nanos` made at `at` nanoseconds (any origin), kept in the
    /// timeline the replay reads.
    pub fn record_at(&mut self, at: u64, nanos: u64, line: u64) -> Result<(), InputError> {
        self.record(nanos, 1, line)?;
        self.timeline.push(at, nanos);
        Ok(())
    }

    /// Gives the replay's timeline a call of `nanos` made at `at`, without counting it
    /// (an interval log counts its calls from the interval's histogram).
    pub fn timeline_only(&mut self, at: u64, nanos: u64) {
        self.timeline.push(at, nanos);
    }

    /// Counts `count` calls that ended at or below `edge` nanoseconds, above the edge
    /// below it: a bucket, whose edge is kept exactly rather than to the histogram's
    /// resolution.
    pub fn record_bucket(&mut self, edge: u64, count: u64) {
        if count > 0 {
            let calls = self.buckets.entry(edge).or_default();
            *calls = calls.saturating_add(count);
        }
    }

    /// Counts `count` calls only known to have run past `edge` nanoseconds.
    pub fn censor(&mut self, edge: u64, count: u64) {
        if count > 0 {
            let (_, before) = self.censored.unwrap_or((edge, 0));
            self.censored = Some((edge, before.saturating_add(count)));
        }
    }

    /// Merges the latencies of another histogram, kept at its own resolution.
    pub fn add_histogram(&mut self, other: &Histogram<u64>, line: u64) -> Result<(), InputError> {
        self.histogram.add(other).map_err(|_| {
            InputError::at_line(line, "a histogram whose values are too long to count")
        })
    }

    /// Calls counted, whether they ended or were only known to have run past an edge.
    pub fn samples(&self) -> u64 {
        self.buckets
            .values()
            .fold(self.histogram.len(), |total, &calls| {
                total.saturating_add(calls)
            })
            .saturating_add(self.censored.map_or(0, |(_, count)| count))
    }

    /// Whether no call was counted.
    pub fn is_empty(&self) -> bool {
        self.samples() == 0
    }

    /// The histogram of every latency that ended.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// The timeline the replay reads: calls with the moment each was made, in order.
    pub fn timeline(&self) -> &Timeline {
        &self.timeline
    }

    /// The timeline, sorted by the moment each call was made (the readers call this once
    /// they are done).
    pub fn finish(&mut self) {
        self.timeline.sort();
    }

    /// The classes the model reads: one per distinct value of the histogram, its edge the
    /// highest latency that value stands for (so predictions err long), and a class at
    /// the censored edge.
    pub fn classes(&self) -> Classes {
        let mut classes = Classes::default();
        for value in self.histogram.iter_recorded() {
            classes
                .edges
                .push(self.histogram.highest_equivalent(value.value_iterated_to()));
            classes.ended.push(value.count_at_value());
            classes.censored.push(0);
        }
        for (&edge, &calls) in &self.buckets {
            let at = classes.edges.partition_point(|&known| known < edge);
            if classes.edges.get(at) == Some(&edge) {
                classes.ended[at] += calls;
            } else {
                classes.edges.insert(at, edge);
                classes.ended.insert(at, calls);
                classes.censored.insert(at, 0);
            }
        }
        if let Some((edge, count)) = self.censored {
            let at = classes.edges.partition_point(|&known| known < edge);
            if classes.edges.get(at) == Some(&edge) {
                classes.censored[at] += count;
            } else {
                classes.edges.insert(at, edge);
                classes.ended.insert(at, 0);
                classes.censored.insert(at, count);
            }
        }
        classes
    }
}

/// Calls with the moment each was made, thinned evenly to at most [`TIMELINE_CAP`].
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// (made at, latency), both in nanoseconds.
    calls: Vec<(u64, u64)>,
    /// Keep one call in this many read.
    stride: u64,
    /// Calls offered to the timeline.
    offered: u64,
}

impl Timeline {
    fn push(&mut self, at: u64, nanos: u64) {
        let stride = self.stride.max(1);
        if self.offered.is_multiple_of(stride) {
            if self.calls.len() == TIMELINE_CAP {
                let mut index = 0;
                self.calls.retain(|_| {
                    index += 1;
                    index % 2 == 1
                });
                self.stride = stride * 2;
                if !self.offered.is_multiple_of(self.stride) {
                    self.offered += 1;
                    return;
                }
            }
            self.calls.push((at, nanos));
        }
        self.offered += 1;
    }

    fn sort(&mut self) {
        self.calls.sort_by_key(|&(at, _)| at);
    }

    /// The calls kept, (made at, latency) in nanoseconds, by the moment they were made.
    pub fn calls(&self) -> &[(u64, u64)] {
        &self.calls
    }

    /// Whether the input said when calls were made.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Calls that were offered, kept or not.
    pub fn offered(&self) -> u64 {
        self.offered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_stays_bounded_and_evenly_thinned() {
        let mut latencies = Latencies::new();
        let calls = TIMELINE_CAP as u64 * 5 + 7;
        for call in 0..calls {
            latencies.record_at(call, 1_000, 1).unwrap();
        }
        latencies.finish();
        let kept = latencies.timeline().calls();
        assert!(kept.len() <= TIMELINE_CAP);
        assert!(kept.len() > TIMELINE_CAP / 4);
        let gaps: Vec<u64> = kept.windows(2).map(|pair| pair[1].0 - pair[0].0).collect();
        assert!(gaps.iter().all(|&gap| gap == gaps[0]), "even thinning");
        assert_eq!(latencies.samples(), calls);
    }

    #[test]
    fn censored_calls_get_a_class_at_their_edge() {
        let mut latencies = Latencies::new();
        latencies.record(1_000_000, 9, 1).unwrap();
        latencies.censor(2_000_000, 1);
        let classes = latencies.classes();
        assert_eq!(classes.ended.iter().sum::<u64>(), 9);
        assert_eq!(classes.censored.iter().sum::<u64>(), 1);
        assert_eq!(*classes.edges.last().unwrap(), 2_000_000);
        assert_eq!(latencies.samples(), 10);
    }
}
