//! Binding of `tailbound_core::snc`: numpy arrays in and out, the GIL released while computing.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use tailbound_core::snc_fast::{Csr, Plan, Source};

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

/// `(theta, latency_steps)` per flow.
type ArrayPair<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);

fn indexes(a: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    a.as_array()
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .map_err(|_| to_py(tailbound_core::Error::Invalid(format!("negative index {v}"))))
        })
        .collect()
}

fn floats(a: &PyReadonlyArray1<'_, f64>) -> Vec<f64> {
    a.as_array().iter().copied().collect()
}

fn csr(ptr: &PyReadonlyArray1<'_, i64>, idx: &PyReadonlyArray1<'_, i64>) -> PyResult<Csr> {
    Ok(Csr { ptr: indexes(ptr)?, idx: indexes(idx)? })
}

/// SNC-Meister's theta search for every independent two-hop flow (see `tailbound_core::snc_fast`).
/// Sources are given by their state counts `sizes` and concatenated `generators` (row-major),
/// `p` and `mu`; each `*_ptr`/`*_idx` pair lists source indexes per flow (w, x, y) or per pair
/// (z, r). Returns `(theta, latency_steps)` per flow.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (sizes, generators, p, mu, c1, c2, eps, pole, w_ptr, w_idx, x_ptr, x_idx,
                    y_ptr, y_idx, pair_flow, pair_c, z_ptr, z_idx, r_ptr, r_idx))]
fn snc_meister_search<'py>(
    py: Python<'py>,
    sizes: PyReadonlyArray1<'py, i64>,
    generators: PyReadonlyArray1<'py, f64>,
    p: PyReadonlyArray1<'py, f64>,
    mu: PyReadonlyArray1<'py, f64>,
    c1: PyReadonlyArray1<'py, f64>,
    c2: PyReadonlyArray1<'py, f64>,
    eps: PyReadonlyArray1<'py, f64>,
    pole: PyReadonlyArray1<'py, f64>,
    w_ptr: PyReadonlyArray1<'py, i64>,
    w_idx: PyReadonlyArray1<'py, i64>,
    x_ptr: PyReadonlyArray1<'py, i64>,
    x_idx: PyReadonlyArray1<'py, i64>,
    y_ptr: PyReadonlyArray1<'py, i64>,
    y_idx: PyReadonlyArray1<'py, i64>,
    pair_flow: PyReadonlyArray1<'py, i64>,
    pair_c: PyReadonlyArray1<'py, f64>,
    z_ptr: PyReadonlyArray1<'py, i64>,
    z_idx: PyReadonlyArray1<'py, i64>,
    r_ptr: PyReadonlyArray1<'py, i64>,
    r_idx: PyReadonlyArray1<'py, i64>,
) -> PyResult<ArrayPair<'py>> {
    let sizes = indexes(&sizes)?;
    let (g, pv, muv) = (floats(&generators), floats(&p), floats(&mu));
    let (mut at_g, mut at_s) = (0, 0);
    let mut sources = Vec::with_capacity(sizes.len());
    for &n in &sizes {
        if at_g + n * n > g.len() || at_s + n > pv.len() || at_s + n > muv.len() {
            return Err(to_py(tailbound_core::Error::Invalid(
                "source arrays shorter than their sizes".into(),
            )));
        }
        sources.push(Source {
            n,
            generator: g[at_g..at_g + n * n].to_vec(),
            p: pv[at_s..at_s + n].to_vec(),
            mu: muv[at_s..at_s + n].to_vec(),
        });
        at_g += n * n;
        at_s += n;
    }
    let plan = Plan {
        sources,
        c1: floats(&c1),
        c2: floats(&c2),
        eps: floats(&eps),
        pole: floats(&pole),
        w: csr(&w_ptr, &w_idx)?,
        x: csr(&x_ptr, &x_idx)?,
        y: csr(&y_ptr, &y_idx)?,
        pair_flow: indexes(&pair_flow)?,
        pair_c: floats(&pair_c),
        z: csr(&z_ptr, &z_idx)?,
        r: csr(&r_ptr, &r_idx)?,
    };
    let (theta, latency) =
        py.detach(|| tailbound_core::snc_fast::snc_meister_search(&plan)).map_err(to_py)?;
    Ok((PyArray1::from_vec(py, theta), PyArray1::from_vec(py, latency)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(perron_roots, m)?)?;
    m.add_function(wrap_pyfunction!(snc_meister_search, m)?)?;
    Ok(())
}
