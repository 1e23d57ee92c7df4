//! Binding of `tailbound_core::decompose`: the response-time-threshold decomposition of a trace
//! on numpy arrays (contiguous float64; the GIL is released while the core works).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use tailbound_core::decompose;

use crate::error::to_py;

/// Which requests stay in the primary stream at `rate` with threshold `delta` (a bool per
/// request).
#[pyfunction]
fn decompose_primary<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    work: PyReadonlyArray1<'py, f64>,
    rate: f64,
    delta: f64,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let (t, w) = (time.as_slice()?, work.as_slice()?);
    let keep = py.detach(|| decompose::primary(t, w, rate, delta)).map_err(to_py)?;
    Ok(keep.into_pyarray(py))
}

/// How many requests stay in the primary stream at `rate` with threshold `delta`.
#[pyfunction]
fn decompose_count(
    py: Python<'_>,
    time: PyReadonlyArray1<'_, f64>,
    work: PyReadonlyArray1<'_, f64>,
    rate: f64,
    delta: f64,
) -> PyResult<usize> {
    let (t, w) = (time.as_slice()?, work.as_slice()?);
    py.detach(|| decompose::primary_count(t, w, rate, delta)).map_err(to_py)
}

/// Register the decomposition functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decompose_primary, m)?)?;
    m.add_function(wrap_pyfunction!(decompose_count, m)?)?;
    Ok(())
}
