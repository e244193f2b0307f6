//! The readers: one latency a line, CSV with a header, HdrHistogram interval logs and the
//! Prometheus text exposition of a classic histogram, each streamed into [`Latencies`].
//!
//! Every reader reads its input once, front to back, and keeps what the histogram keeps
//! (and, with timestamps, the bounded timeline the replay reads), so memory does not
//! grow with the input. A problem is an [`InputError`] naming the line, the column where
//! one is known, and what was expected there; no input makes a reader panic.

use std::io::{self, BufRead, BufReader, Read};
use std::str::FromStr;

use crate::error::InputError;
use crate::latencies::Latencies;
use crate::unit::Unit;

mod csv;
mod hdr;
mod lines;
mod prometheus;

/// How an input is laid out (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Told by content: see [`Format::detect`].
    #[default]
    Auto,
    /// One latency a line.
    Lines,
    /// CSV with a header line.
    Csv,
    /// An HdrHistogram interval log.
    Hdr,
    /// The Prometheus text exposition of a classic histogram.
    Prometheus,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Format, String> {
        Ok(match text {
            "auto" => Format::Auto,
            "lines" => Format::Lines,
            "csv" => Format::Csv,
            "hdr" => Format::Hdr,
            "prometheus" => Format::Prometheus,
            _ => {
                return Err(format!(
                    "expected auto, lines, csv, hdr or prometheus, found {text:?}"
                ))
            }
        })
    }
}

impl Format {
    /// The format of an input that begins with `head`: an HdrHistogram log if it has the
    /// log's header or an encoded histogram (`HISTF...`), Prometheus if a line names a
    /// `_bucket{` series, CSV if its first line that is not a comment has a comma, else
    /// one latency a line.
    pub fn detect(head: &[u8]) -> Format {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
        if text.contains("HISTF")
            || text.contains("#[StartTime")
            || text.contains("#[BaseTime")
            || text.contains("\"StartTimestamp\"")
        {
            return Format::Hdr;
        }
        if text
            .lines()
            .any(|line| !line.starts_with('#') && line.contains("_bucket{"))
        {
            return Format::Prometheus;
        }
        match lines.find(|line| !line.starts_with('#')) {
            Some(first) if first.contains(',') => Format::Csv,
            _ => Format::Lines,
        }
    }

    /// The unit of a latency written without one, unless `--unit` says: milliseconds in
    /// text and CSV, nanoseconds in an HdrHistogram log (as most recorders write them),
    /// seconds in Prometheus (its convention for `le`).
    pub const fn default_unit(self) -> Unit {
        match self {
            Format::Hdr => Unit::Nanos,
            Format::Prometheus => Unit::Seconds,
            Format::Auto | Format::Lines | Format::Csv => Unit::Millis,
        }
    }

    /// The name `--format` takes.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Lines => "lines",
            Format::Csv => "csv",
            Format::Hdr => "hdr",
            Format::Prometheus => "prometheus",
        }
    }
}

/// How to read an input: the options of the command line that concern the readers.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// The layout, or [`Format::Auto`].
    pub format: Format,
    /// The unit of latencies written without one; `None`: the format's
    /// [default](Format::default_unit).
    pub unit: Option<Unit>,
    /// CSV: the latency column's name.
    pub column: Option<String>,
    /// CSV: the timestamp column's name (else one named `timestamp`, `time`, `ts`,
    /// `start` or `started_at`, if present).
    pub timestamp: Option<String>,
    /// Prometheus: the histogram's name, when the input has several.
    pub metric: Option<String>,
}

/// How many bytes [`read`] looks at to tell the format.
const SNIFF: usize = 64 * 1024;

/// Reads `input` to its end into [`Latencies`], as `options` say. Returns the format it
/// read (the one detected, with [`Format::Auto`]).
///
/// A file that holds no latency is an error too.
pub fn read(input: impl Read, options: &ReadOptions) -> Result<(Latencies, Format), InputError> {
    let mut input = BufReader::with_capacity(SNIFF, input);
    let format = match options.format {
        Format::Auto => {
            let mut head = Vec::new();
            // A pipe may hand over less than the buffer holds: gather up to SNIFF bytes.
            (&mut input)
                .take(SNIFF as u64)
                .read_to_end(&mut head)
                .map_err(io_error)?;
            let format = Format::detect(&head);
            return read_as(io::Cursor::new(head).chain(input), format, options)
                .map(|latencies| (latencies, format));
        }
        format => format,
    };
    read_as(input, format, options).map(|latencies| (latencies, format))
}

fn read_as(
    input: impl BufRead,
    format: Format,
    options: &ReadOptions,
) -> Result<Latencies, InputError> {
    let unit = options.unit.unwrap_or(format.default_unit());
    let mut latencies = match format {
        Format::Auto | Format::Lines => lines::read(input, unit)?,
        Format::Csv => csv::read(input, unit, options)?,
        Format::Hdr => hdr::read(input, unit)?,
        Format::Prometheus => prometheus::read(input, unit, options)?,
    };
    if latencies.is_empty() {
        return Err(InputError::whole(format!(
            "no latency found: expected {}",
            match format {
                Format::Auto | Format::Lines => "one latency a line, such as 12.5 or 12.5ms",
                Format::Csv => "a header line, then a latency in each row",
                Format::Hdr => "an HdrHistogram interval log with at least one value",
                Format::Prometheus =>
                    "a classic histogram: name_bucket{le=\"0.1\"} 42 lines with counts",
            }
        )));
    }
    latencies.finish();
    Ok(latencies)
}

/// An input that could not be read at all.
pub(crate) fn io_error(error: io::Error) -> InputError {
    InputError::whole(format!("cannot read the input: {error}"))
}

/// Reads `input` a line at a time into `line` (without its end), calling `each` with the
/// line's number; stops at the first error. Lines that are not UTF-8 are an error.
pub(crate) fn for_each_line(
    mut input: impl BufRead,
    mut each: impl FnMut(u64, &str) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let mut bytes = Vec::new();
    let mut number = 0;
    loop {
        bytes.clear();
        if input.read_until(b'\n', &mut bytes).map_err(io_error)? == 0 {
            return Ok(());
        }
        number += 1;
        let text = std::str::from_utf8(&bytes).map_err(|error| {
            InputError::at(
                number,
                error.valid_up_to() as u64 + 1,
                "expected text (UTF-8), found a byte that is not",
            )
        })?;
        each(number, text.trim_end_matches(['\n', '\r']))?;
    }
}
