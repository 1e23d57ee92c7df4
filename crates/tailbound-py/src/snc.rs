//! Binding of `tailbound_core::snc`: numpy arrays in and out, the GIL released while computing.

use numpy::{PyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use crate::error::to_py;

/// Perron roots of `diag(1 + e) G + diag(e)` for each row `e` of `excess` (see the core).
#[pyfunction]
fn perron_roots<'py>(
    py: Python<'py>,
    generator: PyReadonlyArray2<'py, f64>,
    excess: PyReadonlyArray2<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (g_view, e_view) = (generator.as_array(), excess.as_array());
    let n = g_view.nrows();
    if g_view.ncols() != n || e_view.ncols() != n {
        return Err(to_py(tailbound_core::Error::Invalid(format!(
            "generator is {} × {} and excess has {} columns: expected n × n and n",
            n,
            g_view.ncols(),
            e_view.ncols()
        ))));
    }
    let g = g_view.iter().copied().collect::<Vec<f64>>();
    let e = e_view.iter().copied().collect::<Vec<f64>>();
    let roots = py.detach(|| tailbound_core::snc::perron_roots(&g, n, &e)).map_err(to_py)?;
    Ok(PyArray1::from_vec(py, roots))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(perron_roots, m)?)?;
    Ok(())
}
