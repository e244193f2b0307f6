//! CSV with a header line: the latency column (`--column`, else the one whose name says
//! latency, duration or elapsed, else the only one besides the timestamp), and a timestamp
//! column if present.

use std::io::BufRead;

use ::csv::{ByteRecord, ReaderBuilder, Trim};

use super::ReadOptions;
use crate::error::InputError;
use crate::latencies::Latencies;
use crate::timestamp::parse_timestamp;
use crate::unit::{parse_nanos, Unit};

/// Names a timestamp column is found by when `--timestamp` is not given.
const TIMESTAMP_NAMES: [&str; 6] = [
    "timestamp",
    "time",
    "ts",
    "start",
    "started_at",
    "start_time",
];
/// Words a latency column's name is found by when `--column` is not given.
const LATENCY_WORDS: [&str; 4] = ["latency", "duration", "elapsed", "response_time"];

/// Reads a CSV whose latencies are in `unit` unless suffixed; timestamps are seconds
/// unless suffixed.
pub(super) fn read(
    input: impl BufRead,
    unit: Unit,
    options: &ReadOptions,
) -> Result<Latencies, InputError> {
    let mut reader = ReaderBuilder::new()
        .has_headers(true)
        .trim(Trim::All)
        .comment(Some(b'#'))
        .from_reader(input);
    let header = reader.byte_headers().map_err(csv_error)?.clone();
    let names: Vec<String> = header
        .iter()
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    let header_line = header.position().map_or(1, |position| position.line());
    let timestamp = match &options.timestamp {
        Some(wanted) => Some(find(&names, wanted).ok_or_else(|| {
            InputError::at_line(
                header_line,
                format!("expected a column named {wanted:?} (--timestamp), found {names:?}"),
            )
        })?),
        None => names.iter().position(|name| {
            TIMESTAMP_NAMES
                .iter()
                .any(|known| name.eq_ignore_ascii_case(known))
        }),
    };
    let column = latency_column(&names, timestamp, options.column.as_deref())
        .map_err(|message| InputError::at_line(header_line, message))?;

    let mut latencies = Latencies::new();
    let mut record = ByteRecord::new();
    while reader.read_byte_record(&mut record).map_err(csv_error)? {
        let line = record.position().map_or(0, |position| position.line());
        let field = |index: usize| -> Result<&str, InputError> {
            let bytes = record.get(index).unwrap_or_default();
            std::str::from_utf8(bytes).map_err(|_| {
                InputError::at(
                    line,
                    index as u64 + 1,
                    format!("expected text (UTF-8) in column {:?}", names[index]),
                )
            })
        };
        let text = field(column)?;
        let nanos = parse_nanos(text, unit).map_err(|problem| {
            InputError::at(
                line,
                column as u64 + 1,
                format!("column {:?}: {}", names[column], problem.explain(text)),
            )
        })?;
        match timestamp {
            Some(index) => {
                let text = field(index)?;
                let at = parse_timestamp(text).ok_or_else(|| {
                    InputError::at(
                        line,
                        index as u64 + 1,
                        format!(
                            "column {:?}: expected a timestamp in seconds such as \
                             1733356800.125 (or with a unit: 1733356800125ms) or an RFC 3339 \
                             time such as 2024-12-05T00:00:00.125Z, found {text:?}",
                            names[index]
                        ),
                    )
                })?;
                latencies.record_at(at, nanos, line)?;
            }
            None => latencies.record(nanos, 1, line)?,
        }
    }
    Ok(latencies)
}

/// The column named `wanted`, ignoring case.
fn find(names: &[String], wanted: &str) -> Option<usize> {
    names
        .iter()
        .position(|name| name.eq_ignore_ascii_case(wanted))
}

/// The latency column: the one named, else the one whose name says latency, else the
/// only one that is not the timestamp.
fn latency_column(
    names: &[String],
    timestamp: Option<usize>,
    wanted: Option<&str>,
) -> Result<usize, String> {
    if let Some(wanted) = wanted {
        return find(names, wanted).ok_or_else(|| {
            format!("expected a column named {wanted:?} (--column), found {names:?}")
        });
    }
    let said = names.iter().position(|name| {
        let name = name.to_ascii_lowercase();
        LATENCY_WORDS.iter().any(|word| name.contains(word))
    });
    let others: Vec<usize> = (0..names.len())
        .filter(|&index| Some(index) != timestamp)
        .collect();
    match (said, others.as_slice()) {
        (Some(index), _) => Ok(index),
        (None, &[only]) => Ok(only),
        _ => Err(format!(
            "expected --column NAME to say which column holds the latency, found the columns {names:?}"
        )),
    }
}

/// A CSV the `csv` crate could not split, at the line it stopped.
fn csv_error(error: ::csv::Error) -> InputError {
    let line = error.position().map(|position| position.line());
    let message = match error.kind() {
        ::csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            format!("expected {expected_len} fields as in the header, found {len}")
        }
        ::csv::ErrorKind::Utf8 { .. } => "expected text (UTF-8), found a byte that is not".into(),
        ::csv::ErrorKind::Io(error) => format!("cannot read the input: {error}"),
        _ => format!("expected CSV: {error}"),
    };
    match line {
        Some(line) => InputError::at_line(line, message),
        None => InputError::whole(message),
    }
}
