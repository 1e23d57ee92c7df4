//! Binding of `tailbound_core::snc`: numpy arrays in and out, the GIL released while computing.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use tailbound_core::snc_fast::Plan;
use tailbound_core::snc_tree::{Kind, Tree};

use crate::error::to_py;
use crate::mmpp::PyMmpp;

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

/// A square matrix's entries, row by row; an error for any other shape.
fn square(generator: &PyReadonlyArray2<'_, f64>) -> PyResult<Vec<f64>> {
    let g = generator.as_array();
    if g.nrows() != g.ncols() {
        return Err(to_py(tailbound_core::Error::Invalid(format!(
            "the generator is {} × {}: expected a square matrix",
            g.nrows(),
            g.ncols()
        ))));
    }
    Ok(g.iter().copied().collect())
}

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
        let g = square(&generator)?;
        self.plan.add_source(g, floats(&p), floats(&mu)).map_err(to_py)
    }

    /// Add a fitted MMPP (`_core.Mmpp`) as a source: its generator, request probabilities and
    /// work rates, taken in Rust (no arrays cross into Python). Returns its index.
    fn add_mmpp(&mut self, model: PyRef<'_, PyMmpp>) -> PyResult<usize> {
        let m = &model.model;
        self.plan.add_source(m.generator(), m.p_request.clone(), m.mu.clone()).map_err(to_py)
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

    /// `(theta, latency_steps)` per flow: SNC-Meister's theta search for every flow (lists:
    /// `tailbound bound` reads them without numpy).
    fn search(&self, py: Python<'_>) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let plan = &self.plan;
        py.detach(|| tailbound_core::snc_fast::snc_meister_search(plan)).map_err(to_py)
    }
}

/// `(latency_steps, theta, x, evaluations)` of a tree's search.
type Found<'py> = (f64, f64, Bound<'py, PyArray1<f64>>, usize);

/// One flow's SNC latency expression with Hölder parameters (`tailbound_core::snc_tree::Tree`),
/// built leaf by leaf and operator by operator (children before parents), then evaluated at
/// points or searched deterministically over `theta` and the parameters.
#[pyclass(name = "SncTree", module = "tailbound._core")]
#[derive(Default)]
struct PySncTree {
    tree: Tree,
}

#[pymethods]
impl PySncTree {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Add an MMPP source (generator `G = P - I`, `p`, `mu`); its index.
    fn add_source(
        &mut self,
        generator: PyReadonlyArray2<'_, f64>,
        p: PyReadonlyArray1<'_, f64>,
        mu: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<usize> {
        let g = square(&generator)?;
        self.tree.add_source(g, floats(&p), floats(&mu)).map_err(to_py)
    }

    /// A leaf reading source `source`; its node index.
    fn add_leaf(&mut self, source: usize) -> PyResult<usize> {
        self.tree.add_leaf(source).map_err(to_py)
    }

    /// A constant-rate server (work per step); its node index.
    fn add_constant(&mut self, rate_per_step: f64) -> PyResult<usize> {
        self.tree.add_constant(rate_per_step).map_err(to_py)
    }

    /// An operator (0 aggregate, 1 leftover, 2 output, 3 convolution) on nodes `first` (at
    /// `x theta`) and `second` (at `y theta`), with Hölder parameter `param` or `None`.
    fn add_op(
        &mut self,
        kind: u8,
        first: usize,
        second: usize,
        param: Option<usize>,
    ) -> PyResult<usize> {
        let kind = Kind::from_code(kind).map_err(to_py)?;
        self.tree.add_op(kind, first, second, param).map_err(to_py)
    }

    /// The root: latency of `arrival` through `service` at violation probability `eps`.
    fn set_root(
        &mut self,
        arrival: usize,
        service: usize,
        param: Option<usize>,
        eps: f64,
    ) -> PyResult<()> {
        self.tree.set_root(arrival, service, param, eps).map_err(to_py)
    }

    /// Number of Hölder parameters.
    #[getter]
    fn params(&self) -> usize {
        self.tree.params()
    }

    /// Latencies (steps) at `thetas[i]` with parameters `xs[i]` (shape `(n, params)`).
    fn latencies<'py>(
        &self,
        py: Python<'py>,
        thetas: PyReadonlyArray1<'py, f64>,
        xs: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let t = floats(&thetas);
        let x = xs.as_array().iter().copied().collect::<Vec<f64>>();
        let tree = &self.tree;
        let out = py.detach(|| tree.latencies(&t, &x)).map_err(to_py)?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// The deterministic search: `(latency_steps, theta, x, evaluations)`.
    fn search<'py>(&self, py: Python<'py>) -> PyResult<Found<'py>> {
        let tree = &self.tree;
        let found = py.detach(|| tree.search()).map_err(to_py)?;
        Ok((found.latency_steps, found.theta, PyArray1::from_vec(py, found.x), found.evaluations))
    }
}

fn floats(a: &PyReadonlyArray1<'_, f64>) -> Vec<f64> {
    a.as_array().iter().copied().collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(perron_roots, m)?)?;
    m.add_class::<PySncNetwork>()?;
    m.add_class::<PySncTree>()?;
    Ok(())
}
