//! Maps the core's `Error` onto Python exceptions; the only place that does.
//!
//! `ParseError(line, field, message)` is caught by the Python readers, which add the file name
//! and re-raise `tailbound.errors.TraceFormatError`; `FieldError(field, message)` by the scenario
//! reader, which adds the file and the table and re-raises `tailbound.errors.ConfigError`.

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use tailbound_core::Error;

create_exception!(
    _core,
    FieldError,
    PyValueError,
    "A bad field of a configuration table: args are (field, message)."
);

create_exception!(
    _core,
    ParseError,
    PyValueError,
    "A malformed record: args are (line, field, message)."
);

/// Convert a core error into the matching Python exception.
pub fn to_py(err: Error) -> PyErr {
    match err {
        Error::Parse { line, field, message } => ParseError::new_err((line, field, message)),
        Error::Invalid(message) => PyValueError::new_err(message),
        Error::Io(message) => PyOSError::new_err(message),
        Error::Field { field, message } => FieldError::new_err((field, message)),
    }
}

/// Register the exception types on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ParseError", m.py().get_type::<ParseError>())?;
    m.add("FieldError", m.py().get_type::<FieldError>())?;
    Ok(())
}
