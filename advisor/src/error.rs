//! What went wrong reading an input: where (line, and column where one is known) and what
//! was expected there.

use std::fmt;

/// An input the advisor cannot read, with the place it went wrong and what was expected.
///
/// Its `Display` is one line: `line 3, column 1: expected a latency such as 12.5 or
/// 12.5ms, found "abc"`. The binary prefixes the file name and exits with status 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The line (from 1) the problem is on, or `None` for the input as a whole (a file
    /// that holds no latency).
    pub line: Option<u64>,
    /// The column (from 1): a character position for text lines, a field number for CSV.
    pub column: Option<u64>,
    /// What was expected, and what was found.
    pub message: String,
}

impl InputError {
    /// A problem at `line` (from 1).
    pub fn at_line(line: u64, message: impl Into<String>) -> InputError {
        InputError {
            line: Some(line),
            column: None,
            message: message.into(),
        }
    }

    /// A problem at `line` and `column` (both from 1).
    pub fn at(line: u64, column: u64, message: impl Into<String>) -> InputError {
        InputError {
            line: Some(line),
            column: Some(column),
            message: message.into(),
        }
    }

    /// A problem of the input as a whole.
    pub fn whole(message: impl Into<String>) -> InputError {
        InputError {
            line: None,
            column: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}: ")?,
            (Some(line), None) => write!(f, "line {line}: ")?,
            _ => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for InputError {}
