//! HdrHistogram interval logs, through the `hdrhistogram` crate's log reader and
//! deserializer: each interval's histogram is added to the whole, and, for the replay, a
//! bounded sample of it is spread over the interval's time.

use std::io::{BufRead, Read};
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::for_each_line;
use crate::error::InputError;
use crate::latencies::Latencies;
use crate::unit::Unit;

/// The most calls of one interval the replay's timeline is given.
const PER_INTERVAL: u64 = 2_000;
/// An encoded histogram's cookie, uncompressed and compressed (V2).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// The bytes of a V2 encoding before its counts.
const V2_HEADER: usize = 40;
/// The most bytes one interval's histogram may inflate to.
const MOST_INFLATED: u64 = 64 << 20;

/// Reads an interval log whose values are in `unit`.
pub(super) fn read(input: impl BufRead, unit: Unit) -> Result<Latencies, InputError> {
    let mut latencies = Latencies::new();
    let mut base_time = Duration::ZERO;
    let mut deserializer = Deserializer::new();
    let mut with_end = String::new();
    for_each_line(input, |number, line| {
        if line.trim().is_empty() {
            return Ok(());
        }
        // The crate's parser reads whole lines: give it this one with its end.
        with_end.clear();
        with_end.push_str(line);
        with_end.push('\n');
        for entry in IntervalLogIterator::new(with_end.as_bytes()) {
            let entry = entry.map_err(|_| {
                InputError::at(
                    number,
                    1,
                    "expected an HdrHistogram interval log line: a #comment, the legend, or \
                     StartTimestamp,Interval_Length,Interval_Max,Interval_Compressed_Histogram",
                )
            })?;
            match entry {
                LogEntry::BaseTime(time) => base_time = time,
                LogEntry::StartTime(_) => {}
                LogEntry::Interval(interval) => {
                    let encoded = interval.encoded_histogram();
                    let column = line.len() - line.trim_start().len() + line.trim().len()
                        - encoded.len()
                        + 1;
                    let histogram = decode(encoded, &mut deserializer)
                        .map_err(|problem| InputError::at(number, column as u64, problem))?;
                    // A start past `Duration::MAX` saturates, as its nanoseconds do in `add`.
                    let start = base_time.saturating_add(interval.start_timestamp());
                    add(
                        &mut latencies,
                        &histogram,
                        unit,
                        start,
                        interval.duration(),
                        number,
                    )?;
                }
            }
        }
        Ok(())
    })?;
    Ok(latencies)
}

/// The histogram `encoded` holds (base64 of a V2 encoding, compressed or not), or what is
/// wrong with it.
fn decode(encoded: &str, deserializer: &mut Deserializer) -> Result<Histogram<u64>, String> {
    let truncated =
        "expected a whole encoded histogram, found one cut short or damaged (a truncated log?)";
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|_| {
            "expected a base64 encoded histogram, found one cut short or damaged (a truncated log?)"
                .to_string()
        })?;
    let word = |bytes: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    // The deserializer sets aside the length the encoding declares before reading it:
    // check it against the bytes there are, so a damaged one cannot ask for gigabytes.
    let whole_encoding = |bytes: &[u8]| {
        word(bytes, 4)
            .is_some_and(|declared| declared as usize <= bytes.len().saturating_sub(V2_HEADER))
    };
    let plain = match word(&bytes, 0) {
        Some(V2_COOKIE) => bytes,
        Some(V2_COMPRESSED_COOKIE) => {
            let length = word(&bytes, 4).ok_or(truncated)? as usize;
            let compressed = bytes.get(8..8 + length).ok_or(truncated)?;
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(compressed)
                .take(MOST_INFLATED)
                .read_to_end(&mut inflated)
                .map_err(|_| truncated.to_string())?;
            inflated
        }
        _ => return Err("expected an encoded HdrHistogram (V2), found another encoding".into()),
    };
    if word(&plain, 0) != Some(V2_COOKIE) || !whole_encoding(&plain) {
        return Err(truncated.into());
    }
    deserializer
        .deserialize(&mut plain.as_slice())
        .map_err(|error| format!("{truncated} ({error:?})"))
}

/// Adds an interval's histogram, its values in `unit`, and spreads up to
/// [`PER_INTERVAL`] of its calls evenly over its time for the replay.
fn add(
    latencies: &mut Latencies,
    histogram: &Histogram<u64>,
    unit: Unit,
    start: Duration,
    length: Duration,
    line: u64,
) -> Result<(), InputError> {
    let scale = unit.nanos();
    let nanos_of = |value: u64| {
        value.checked_mul(scale).ok_or_else(|| {
            InputError::at_line(
                line,
                format!("a latency of {value} {unit} is too long to count"),
            )
        })
    };
    for value in histogram.iter_recorded() {
        let nanos = nanos_of(histogram.highest_equivalent(value.value_iterated_to()))?;
        latencies.record(nanos, value.count_at_value(), line)?;
    }
    // The replay's share of this interval: calls at evenly spaced ranks, made at evenly
    // spaced moments in an order shuffled by the interval's start, so slow and fast calls
    // mix within it as they did.
    let total = histogram.len();
    let kept = total.min(PER_INTERVAL);
    if kept == 0 {
        return Ok(());
    }
    let mut ranked: Vec<u64> = (0..kept)
        .map(|index| {
            let quantile = (index as f64 + 0.5) / kept as f64;
            histogram.value_at_quantile(quantile)
        })
        .collect();
    fastrand::Rng::with_seed(start.as_nanos() as u64).shuffle(&mut ranked);
    let start = u64::try_from(start.as_nanos()).unwrap_or(u64::MAX);
    let step = u64::try_from(length.as_nanos()).unwrap_or(u64::MAX) / kept;
    for (index, value) in ranked.into_iter().enumerate() {
        let at = start.saturating_add(step.saturating_mul(index as u64));
        latencies.timeline_only(at, nanos_of(histogram.highest_equivalent(value))?);
    }
    Ok(())
}
