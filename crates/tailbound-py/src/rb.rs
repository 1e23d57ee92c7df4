//! Binding of `tailbound_core::rb`: rbGen, the exact r-b curve and pruning on numpy arrays.
//!
//! Inputs are contiguous float64 arrays (the Python side converts); the GIL is released while
//! the core works.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tailbound_core::rb;

use crate::error::to_py;

type F64Array<'py> = Bound<'py, PyArray1<f64>>;
type I64Array<'py> = Bound<'py, PyArray1<i64>>;

/// `b(r)` per rate (thesis Algorithm 2.1).
#[pyfunction]
#[pyo3(signature = (time, tokens, rates, threads = 1))]
fn rbgen<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    tokens: PyReadonlyArray1<'py, f64>,
    rates: PyReadonlyArray1<'py, f64>,
    threads: usize,
) -> PyResult<F64Array<'py>> {
    let (t, w, r) = (time.as_slice()?, tokens.as_slice()?, rates.as_slice()?);
    let b = py.detach(|| rb::rbgen(t, w, r, threads)).map_err(to_py)?;
    Ok(b.into_pyarray(py))
}

/// `b(r)` per rate with the first and last request of the interval attaining it.
#[pyfunction]
#[pyo3(signature = (time, tokens, rates, threads = 1))]
fn rbgen_argmax<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    tokens: PyReadonlyArray1<'py, f64>,
    rates: PyReadonlyArray1<'py, f64>,
    threads: usize,
) -> PyResult<(F64Array<'py>, I64Array<'py>, I64Array<'py>)> {
    let (t, w, r) = (time.as_slice()?, tokens.as_slice()?, rates.as_slice()?);
    let m = py.detach(|| rb::rbgen_argmax(t, w, r, threads)).map_err(to_py)?;
    let b: Vec<f64> = m.iter().map(|x| x.0).collect();
    let first: Vec<i64> = m.iter().map(|x| x.1 as i64).collect();
    let last: Vec<i64> = m.iter().map(|x| x.2 as i64).collect();
    Ok((b.into_pyarray(py), first.into_pyarray(py), last.into_pyarray(py)))
}

/// The exact curve: `(rates, buckets, work, duration, passes, evaluations, method)`, where
/// `work - r * duration` is the line of the segment starting at each vertex and `method` the
/// route that produced it (`"tangents"` or `"hull"`).
#[pyfunction]
#[pyo3(signature = (time, tokens, min_rate, threads = 1, method = "auto"))]
#[allow(clippy::type_complexity)]
fn exact_rb_curve<'py>(
    py: Python<'py>,
    time: PyReadonlyArray1<'py, f64>,
    tokens: PyReadonlyArray1<'py, f64>,
    min_rate: f64,
    threads: usize,
    method: &str,
) -> PyResult<(
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    usize,
    usize,
    &'static str,
)> {
    let method = match method {
        "auto" => rb::Method::Auto,
        "tangents" => rb::Method::Tangents,
        "hull" => rb::Method::Hull,
        other => {
            return Err(PyValueError::new_err(format!(
                "method must be 'auto', 'tangents' or 'hull', not {other:?}"
            )))
        }
    };
    let (t, w) = (time.as_slice()?, tokens.as_slice()?);
    let c =
        py.detach(|| rb::exact_rb_curve_with(t, w, min_rate, threads, method)).map_err(to_py)?;
    let work: Vec<f64> = c.tangents.iter().map(|l| l.work).collect();
    let duration: Vec<f64> = c.tangents.iter().map(|l| l.duration).collect();
    Ok((
        c.rates.into_pyarray(py),
        c.buckets.into_pyarray(py),
        work.into_pyarray(py),
        duration.into_pyarray(py),
        c.passes,
        c.evaluations,
        if c.method == rb::Method::Hull { "hull" } else { "tangents" },
    ))
}

/// Indices of the vertices kept when pruning a curve to at most `k` segments.
#[pyfunction]
fn prune_rb_curve<'py>(
    py: Python<'py>,
    rates: PyReadonlyArray1<'py, f64>,
    buckets: PyReadonlyArray1<'py, f64>,
    k: usize,
) -> PyResult<I64Array<'py>> {
    let (r, b) = (rates.as_slice()?, buckets.as_slice()?);
    let kept = py.detach(|| rb::prune(r, b, k)).map_err(to_py)?;
    Ok(kept.into_iter().map(|i| i as i64).collect::<Vec<_>>().into_pyarray(py))
}

/// Register the r-b curve functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rbgen, m)?)?;
    m.add_function(wrap_pyfunction!(rbgen_argmax, m)?)?;
    m.add_function(wrap_pyfunction!(exact_rb_curve, m)?)?;
    m.add_function(wrap_pyfunction!(prune_rb_curve, m)?)?;
    Ok(())
}
