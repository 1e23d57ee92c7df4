//! Binding of `tailbound_core::snc`: numpy arrays in and out, the GIL released while computing.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use tailbound_core::snc_fast::Plan;

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

/// The independent two-hop flows of an SNC network prepared for SNC-Meister's theta search
/// (`tailbound_core::snc_fast::Plan`): its MMPP sources, its flows and their second queues'
/// feeders, added once; `search()` then runs every flow's search in the core.
#[pyclass(name = "SncNetwork", module = "tailbound._core")]
#[derive(Default)]
struct PySncNetwork {
    plan: Plan,
}

#[pymethods]
impl PySncNetwork {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Add an MMPP source: generator `G = P - I` (n × n), per-step request probabilities `p`
    /// and work rates `mu`. Returns its index.
    fn add_source(
        &mut self,
        generator: PyReadonlyArray2<'_, f64>,
        p: PyReadonlyArray1<'_, f64>,
        mu: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<usize> {
        let g = generator.as_array();
        if g.nrows() != g.ncols() {
            return Err(to_py(tailbound_core::Error::Invalid(format!(
                "the generator is {} × {}: expected a square matrix",
                g.nrows(),
                g.ncols()
            ))));
        }
        let g = g.iter().copied().collect();
        self.plan.add_source(g, floats(&p), floats(&mu)).map_err(to_py)
    }

    /// Add a two-hop flow (queue rates `c1`, `c2` in work per step, violation probability `eps`,
    /// `pole` the smallest `mu` of its sources) with the sources of its arrivals (`own`), of the
    /// flows sharing both its queues (`shared`) and of those sharing only its first queue
    /// (`first_only`). Returns its index.
    #[allow(clippy::too_many_arguments)]
    fn add_flow(
        &mut self,
        c1: f64,
        c2: f64,
        eps: f64,
        pole: f64,
        own: Vec<usize>,
        shared: Vec<usize>,
        first_only: Vec<usize>,
    ) -> PyResult<usize> {
        self.plan.add_flow(c1, c2, eps, pole, &own, &shared, &first_only).map_err(to_py)
    }

    /// Add a feeder of `flow`'s second queue: another first queue of rate `c` (work per step),
    /// the sources of its flows into the second queue (`into`) and of its other flows (`other`).
    /// Feeders come in the order of their flows.
    fn add_feeder(
        &mut self,
        flow: usize,
        c: f64,
        into: Vec<usize>,
        other: Vec<usize>,
    ) -> PyResult<()> {
        self.plan.add_feeder(flow, c, &into, &other).map_err(to_py)
    }

    /// Number of flows.
    #[getter]
    fn flows(&self) -> usize {
        self.plan.flows()
    }

    /// `(theta, latency_steps)` per flow: SNC-Meister's theta search for every flow.
    fn search<'py>(&self, py: Python<'py>) -> PyResult<ArrayPair<'py>> {
        let plan = &self.plan;
        let (theta, latency) =
            py.detach(|| tailbound_core::snc_fast::snc_meister_search(plan)).map_err(to_py)?;
        Ok((PyArray1::from_vec(py, theta), PyArray1::from_vec(py, latency)))
    }
}

fn floats(a: &PyReadonlyArray1<'_, f64>) -> Vec<f64> {
    a.as_array().iter().copied().collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(perron_roots, m)?)?;
    m.add_class::<PySncNetwork>()?;
    Ok(())
}
