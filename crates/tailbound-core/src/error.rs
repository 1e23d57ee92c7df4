//! The one error type of the core. The binding maps each variant onto a Python exception in
//! `crates/tailbound-py/src/error.rs`, so that users see a named file, line and field.

use std::fmt;

/// Errors raised by the core's algorithms.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A malformed record in an input: `line` is 1-based (a record number for binary formats),
    /// `field` names the column, `message` says what was wrong with it.
    Parse { line: usize, field: String, message: String },
    /// An argument outside its domain (negative rate, arrays of different lengths, ...).
    Invalid(String),
    /// Reading an input failed at the operating-system level.
    Io(String),
    /// A bad field of a configuration table: `field` is its dotted name inside the table
    /// (`priority.A`), `message` says what was wrong (the caller adds the file and the table).
    Field { field: String, message: String },
}

/// Result with the core's error.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for a parse error at `line` in `field`.
    pub fn parse(line: usize, field: &str, message: impl Into<String>) -> Self {
        Error::Parse { line, field: field.to_string(), message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse { line, field, message } => {
                write!(f, "line {line}, field {field}: {message}")
            }
            Error::Invalid(message) => write!(f, "invalid argument: {message}"),
            Error::Io(message) => write!(f, "i/o error: {message}"),
            Error::Field { field, message } => write!(f, "field {field}: {message}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_error_names_line_and_field() {
        let e = Error::parse(7, "size", "not a number: 'abc'");
        assert_eq!(e.to_string(), "line 7, field size: not a number: 'abc'");
    }
}
