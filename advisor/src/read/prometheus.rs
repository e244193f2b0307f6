//! The Prometheus text exposition of a classic histogram: `name_bucket{le="0.1"} 42`
//! lines, cumulative in `le`. Each series (the labels besides `le`) is checked on its own
//! and the series are summed; the `+Inf` bucket's calls past the last finite edge are
//! counted as only known to have run past it.

use std::collections::BTreeMap;
use std::io::BufRead;

use super::{for_each_line, ReadOptions};
use crate::error::InputError;
use crate::latencies::Latencies;
use crate::unit::{parse_nanos, Unit};

/// One bucket line: its upper edge in nanoseconds (`None`: `+Inf`), its cumulative
/// count, and the line it is on.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    le: Option<u64>,
    count: u64,
    line: u64,
}

/// Reads the histogram `options.metric` names (or the only one), its `le` in `unit`.
pub(super) fn read(
    input: impl BufRead,
    unit: Unit,
    options: &ReadOptions,
) -> Result<Latencies, InputError> {
    // Metric name -> series (its labels besides `le`) -> buckets. A text exposition is a
    // page of a scrape, small next to a log: the buckets are kept until it is read.
    let mut metrics: BTreeMap<String, BTreeMap<String, Vec<Bucket>>> = BTreeMap::new();
    let wanted = options
        .metric
        .as_deref()
        .map(|name| name.strip_suffix("_bucket").unwrap_or(name));
    for_each_line(input, |number, line| {
        let text = line.trim_start();
        let indent = (line.len() - text.len()) as u64;
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        let name_end = text.find(['{', ' ', '\t']).unwrap_or(text.len());
        let Some(metric) = text[..name_end].strip_suffix("_bucket") else {
            return Ok(());
        };
        if wanted.is_some_and(|wanted| wanted != metric) {
            return Ok(());
        }
        let at = |offset: usize| indent + offset as u64 + 1;
        let rest = &text[name_end..];
        let (labels, value_at) = match rest.strip_prefix('{') {
            Some(inner) => {
                let close = closing_brace(inner).ok_or_else(|| {
                    InputError::at(number, at(name_end), "expected the labels to end with }")
                })?;
                (&inner[..close], name_end + 1 + close + 1)
            }
            None => ("", name_end),
        };
        let (le, series) = split_le(labels)
            .map_err(|message| InputError::at(number, at(name_end + 1), message))?;
        let le = le.ok_or_else(|| {
            InputError::at(
                number,
                at(name_end),
                "expected an le=\"...\" label on a _bucket line",
            )
        })?;
        let le_nanos = match le.as_str() {
            "+Inf" | "Inf" | "inf" | "+inf" => None,
            text => Some(parse_nanos(text, unit).map_err(|problem| {
                InputError::at(
                    number,
                    at(name_end + 1),
                    format!("le: {}", problem.explain(text)),
                )
            })?),
        };
        let value_text = text[value_at..].split_whitespace().next().unwrap_or("");
        let value_column =
            at(value_at + text[value_at..].len() - text[value_at..].trim_start().len());
        let count = count_of(value_text).ok_or_else(|| {
            InputError::at(
                number,
                value_column,
                format!("expected a bucket's count, a whole number of zero or more, found {value_text:?}"),
            )
        })?;
        metrics
            .entry(metric.to_string())
            .or_default()
            .entry(series)
            .or_default()
            .push(Bucket {
                le: le_nanos,
                count,
                line: number,
            });
        Ok(())
    })?;

    let series = match (wanted, metrics.len()) {
        (_, 1) => metrics.into_values().next().unwrap_or_default(),
        (Some(wanted), 0) => {
            return Err(InputError::whole(format!(
                "expected a histogram named {wanted:?} (--metric): no {wanted}_bucket lines found"
            )))
        }
        (None, 0) => BTreeMap::new(),
        _ => {
            let names: Vec<&String> = metrics.keys().collect();
            return Err(InputError::whole(format!(
                "expected one histogram, found several: pass --metric with one of {names:?}"
            )));
        }
    };
    let mut latencies = Latencies::new();
    for buckets in series.into_values() {
        add_series(&mut latencies, buckets)?;
    }
    Ok(latencies)
}

/// Adds one series' buckets: each bucket's calls at its upper edge, `+Inf`'s past the
/// last finite edge; refuses buckets that are not cumulative.
fn add_series(latencies: &mut Latencies, mut buckets: Vec<Bucket>) -> Result<(), InputError> {
    buckets.sort_by_key(|bucket| (bucket.le.is_none(), bucket.le));
    let mut below = 0;
    let mut last_edge = None;
    let mut previous: Option<Bucket> = None;
    for bucket in buckets {
        if let Some(previous) = previous {
            if bucket.le == previous.le {
                return Err(InputError::at_line(
                    bucket.line,
                    format!(
                        "expected one bucket per le, found a second for the one on line {}",
                        previous.line
                    ),
                ));
            }
        }
        let Some(calls) = bucket.count.checked_sub(below) else {
            let previous = previous.expect("a count below a first bucket's is below zero");
            return Err(InputError::at_line(
                bucket.line,
                format!(
                    "expected cumulative buckets (each count at least the one below it): this \
                     bucket holds {}, fewer than the {} of the bucket with a lower le on line {}",
                    bucket.count, below, previous.line
                ),
            ));
        };
        match bucket.le {
            Some(edge) => {
                latencies.record_bucket(edge, calls);
                last_edge = Some(edge);
            }
            // Past every finite edge: known only to have run past the last one.
            None => latencies.censor(last_edge.unwrap_or(0), calls),
        }
        below = bucket.count;
        previous = Some(bucket);
    }
    Ok(())
}

/// The position of the `}` that closes labels, skipping quoted values.
fn closing_brace(labels: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in labels.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(at),
            _ => {}
        }
    }
    None
}

/// The `le` label's value and the other labels (the series), from the text between
/// braces.
fn split_le(labels: &str) -> Result<(Option<String>, String), String> {
    let mut le = None;
    let mut series = Vec::new();
    let mut rest = labels.trim();
    while !rest.is_empty() {
        let equals = rest
            .find('=')
            .ok_or_else(|| format!("expected name=\"value\" labels, found {rest:?}"))?;
        let name = rest[..equals].trim();
        let after = rest[equals + 1..].trim_start();
        let inner = after
            .strip_prefix('"')
            .ok_or_else(|| format!("expected a quoted label value after {name}="))?;
        let mut value = String::new();
        let mut escaped = false;
        let mut end = None;
        for (at, c) in inner.char_indices() {
            match c {
                _ if escaped => {
                    value.push(c);
                    escaped = false;
                }
                '\\' => escaped = true,
                '"' => {
                    end = Some(at);
                    break;
                }
                _ => value.push(c),
            }
        }
        let end = end.ok_or_else(|| format!("expected the value of {name} to end with \""))?;
        if name == "le" {
            le = Some(value);
        } else {
            series.push(format!("{name}={value:?}"));
        }
        rest = inner[end + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    series.sort();
    Ok((le, series.join(",")))
}

/// A bucket count: a whole number, possibly written as a float (`1.5e+03`).
fn count_of(text: &str) -> Option<u64> {
    if let Ok(count) = text.parse::<u64>() {
        return Some(count);
    }
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value < u64::MAX as f64)
        .then_some(value as u64)
}
