//! One latency a line: `12.5`, `12.5ms`; blank lines and `#` comments are skipped.

use std::io::BufRead;

use super::for_each_line;
use crate::error::InputError;
use crate::latencies::Latencies;
use crate::unit::{parse_nanos, Unit};

/// Reads one latency a line, in `unit` unless the line has a suffix.
pub(super) fn read(input: impl BufRead, unit: Unit) -> Result<Latencies, InputError> {
    let mut latencies = Latencies::new();
    for_each_line(input, |number, line| {
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        let column = line.chars().take_while(|c| c.is_whitespace()).count() as u64 + 1;
        let nanos = parse_nanos(text, unit)
            .map_err(|problem| InputError::at(number, column, problem.explain(text)))?;
        latencies.record(nanos, 1, number)
    })?;
    Ok(latencies)
}
