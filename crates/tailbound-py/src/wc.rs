//! Binding of `tailbound_core::wc`: WorkloadCompactor's one prepared tenant (`WcTenant`, also
//! what the cluster screen and the certificate store of `wc_screen.rs` take), its per-server LP
//! as CSR arrays, the exact latency check and the infeasibility screen.
//!
//! A server's tenants arrive as a list of `WcTenant` and a list of their devices; rates and
//! buckets as `(n, 3)` float64 arrays; the server model as its `(n, 3)` constants (`None`: the
//! reference system) and `shares_levels`.

use std::borrow::Cow;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use tailbound_core::wc::{self, ModelTerms, Placed, WcTenant};
use tailbound_core::Error;

use crate::error::to_py;
use crate::wc_screen::tables;

type F64Array<'py> = Bound<'py, PyArray1<f64>>;
type F64Array2<'py> = Bound<'py, PyArray2<f64>>;
type I32Array<'py> = Bound<'py, PyArray1<i32>>;

/// A tenant prepared once for everything WorkloadCompactor does with it
/// (`tailbound_core::wc::WcTenant`: the per-server arithmetic and both exact screens): built
/// from its SLO (s) and its r-b curve per stage (`net_in`, `storage`, `net_out`);
/// `tailbound.policies.wc_tenant.prepared` keeps one per workload.
#[pyclass(name = "WcTenant", module = "tailbound._core", frozen)]
pub struct PyWcTenant {
    pub inner: WcTenant,
}

#[pymethods]
impl PyWcTenant {
    #[new]
    fn new(
        slo_s: f64,
        rates: Vec<PyReadonlyArray1<'_, f64>>,
        buckets: Vec<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<Self> {
        if rates.len() != 3 || buckets.len() != 3 {
            return Err(to_py(Error::Invalid(format!(
                "WcTenant needs three stages' rates and buckets, got {} and {}",
                rates.len(),
                buckets.len()
            ))));
        }
        let (r, b) = ([0, 1, 2].map(|s| values(&rates[s])), [0, 1, 2].map(|s| values(&buckets[s])));
        let (r, b) = ([0, 1, 2].map(|s| &*r[s]), [0, 1, 2].map(|s| &*b[s]));
        Ok(PyWcTenant { inner: WcTenant::new(slo_s, r, b).map_err(to_py)? })
    }

    /// The SLO (s).
    #[getter]
    fn slo_s(&self) -> f64 {
        self.inner.slo_s
    }

    /// Whether a column's lower bound exceeds its upper one (no server takes the tenant).
    #[getter]
    fn out_of_bounds(&self) -> bool {
        self.inner.out_of_bounds()
    }

    /// The tenant's LP block: column bounds of its six columns, then its curve rows (local rate
    /// column, coefficient of `r`, right-hand side).
    #[allow(clippy::type_complexity)]
    fn block<'py>(
        &self,
        py: Python<'py>,
    ) -> (F64Array<'py>, F64Array<'py>, Bound<'py, PyArray1<i64>>, F64Array<'py>, F64Array<'py>)
    {
        let t = &self.inner;
        let mut cols = Vec::new();
        let (mut coefs, mut rhss) = (Vec::new(), Vec::new());
        for (s, seg) in t.segments.iter().enumerate() {
            cols.extend(std::iter::repeat_n(2 * s as i64, seg.coef.len()));
            coefs.extend_from_slice(&seg.coef);
            rhss.extend_from_slice(&seg.rhs);
        }
        (
            t.lower.to_vec().into_pyarray(py),
            t.upper.to_vec().into_pyarray(py),
            cols.into_pyarray(py),
            coefs.into_pyarray(py),
            rhss.into_pyarray(py),
        )
    }

    /// Each stage's curve points (those with `r < 0.999` and the point at `0.999`), rates and
    /// buckets as `(3, K)` arrays, `K` the longest stage or 16 if larger, padded by repeating
    /// each stage's last point: the screens' vertices.
    fn vertices<'py>(&self, py: Python<'py>) -> PyResult<(F64Array2<'py>, F64Array2<'py>)> {
        tables(py, self.inner.screen.curve())
    }

    /// The region's vertices `(rates, buckets)`, each `(3, K)`; `None` if it is empty (the
    /// tenant cannot meet its SLO alone).
    fn region<'py>(&self, py: Python<'py>) -> PyResult<Option<(F64Array2<'py>, F64Array2<'py>)>> {
        self.inner.screen.region.as_ref().map(|v| tables(py, v)).transpose()
    }

    /// The cluster screen's `h` at `level` (s): shape `(3, W·L)` flattened stage-major (cached).
    fn terms<'py>(&self, py: Python<'py>, level: f64) -> F64Array<'py> {
        self.inner.screen.terms(level).to_vec().into_pyarray(py)
    }

    /// The arrival curve at `stage` (0–2): breakpoints `xs`, `ys` and the tail rate.
    fn arrival<'py>(
        &self,
        py: Python<'py>,
        stage: usize,
    ) -> PyResult<(F64Array<'py>, F64Array<'py>, f64)> {
        let a = self.inner.arrival.get(stage).ok_or_else(|| {
            to_py(Error::Invalid(format!("stage {stage}: a tenant has stages 0, 1 and 2")))
        })?;
        Ok((a.xs.clone().into_pyarray(py), a.ys.clone().into_pyarray(py), a.tail))
    }
}

/// An array's values: borrowed when contiguous, copied otherwise (a reversed view, a column).
fn values<'a>(a: &'a PyReadonlyArray1<'_, f64>) -> Cow<'a, [f64]> {
    a.as_slice().map_or_else(|_| Cow::Owned(a.as_array().to_vec()), Cow::Borrowed)
}

/// The placed tenants of one server from the two lists (an error unless equally long).
fn placed<'a>(
    tenants: &'a [PyRef<'_, PyWcTenant>],
    devices: &[usize],
) -> PyResult<Vec<Placed<'a>>> {
    if tenants.len() != devices.len() {
        return Err(to_py(Error::Invalid(format!(
            "{} tenants and {} devices",
            tenants.len(),
            devices.len()
        ))));
    }
    Ok(tenants
        .iter()
        .zip(devices)
        .map(|(t, &device)| Placed { tenant: &t.inner, device })
        .collect())
}

/// The rows of an `(n, 3)` array (`what` names it in the error).
fn rows3(a: &PyReadonlyArray2<'_, f64>, what: &str) -> PyResult<Vec<[f64; 3]>> {
    let v = a.as_array();
    if v.ncols() != 3 {
        return Err(to_py(Error::Invalid(format!(
            "{what} has shape ({}, {}): expected (n, 3)",
            v.nrows(),
            v.ncols()
        ))));
    }
    Ok(v.rows().into_iter().map(|r| [r[0], r[1], r[2]]).collect())
}

/// An `(n, 3)` float64 array of `rows`.
fn array3<'py>(py: Python<'py>, rows: &[[f64; 3]]) -> PyResult<F64Array2<'py>> {
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    flat.into_pyarray(py).reshape([rows.len(), 3])
}

/// The LP of a server's tenants: `(cost, col_lower, col_upper, row_lower, row_upper, start,
/// index, value, r_vars)` (`tailbound.policies.wc_lp.build_lp`).
#[pyfunction]
#[pyo3(signature = (tenants, devices, constants = None, shares_levels = false))]
#[allow(clippy::type_complexity)]
fn wc_build_lp<'py>(
    py: Python<'py>,
    tenants: Vec<PyRef<'py, PyWcTenant>>,
    devices: Vec<usize>,
    constants: Option<PyReadonlyArray2<'py, f64>>,
    shares_levels: bool,
) -> PyResult<(
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    F64Array<'py>,
    I32Array<'py>,
    I32Array<'py>,
    F64Array<'py>,
    Vec<(f64, usize)>,
)> {
    let placed = placed(&tenants, &devices)?;
    let c = constants.as_ref().map(|a| rows3(a, "constants")).transpose()?;
    let model = ModelTerms { constants: c.as_deref(), shares_levels };
    let (lp, r_vars) = wc::build_lp(&placed, model).map_err(to_py)?;
    Ok((
        lp.cost.into_pyarray(py),
        lp.col_lower.into_pyarray(py),
        lp.col_upper.into_pyarray(py),
        lp.row_lower.into_pyarray(py),
        lp.row_upper.into_pyarray(py),
        lp.start.into_pyarray(py),
        lp.index.into_pyarray(py),
        lp.value.into_pyarray(py),
        r_vars,
    ))
}

/// A solution's columns as `(rate, bucket, r_values)`: rates `(n, 3)` clipped to
/// `[0, 0.999]`, buckets `(n, 3)` at least 0, and the `R` columns' values.
#[pyfunction]
fn wc_split_solution<'py>(
    py: Python<'py>,
    x: Vec<f64>,
    n: usize,
) -> PyResult<(F64Array2<'py>, F64Array2<'py>, Vec<f64>)> {
    let (rate, bucket, r) = wc::split_solution(&x, n).map_err(to_py)?;
    Ok((array3(py, &rate)?, array3(py, &bucket)?, r))
}

/// Configured rate sums per queue `[net_in, net_out, storage_0, ..]`.
#[pyfunction]
fn wc_queue_rate_sums<'py>(
    py: Python<'py>,
    devices: Vec<usize>,
    rate: PyReadonlyArray2<'py, f64>,
    n_devices: usize,
) -> PyResult<F64Array<'py>> {
    let rate = rows3(&rate, "rate")?;
    Ok(wc::queue_rate_sums(&devices, &rate, n_devices).map_err(to_py)?.into_pyarray(py))
}

/// Eq. 5.1 per tenant and stage, `(n, 3)`.
#[pyfunction]
#[pyo3(signature = (tenants, devices, rate, bucket, constants = None, shares_levels = false))]
fn wc_queue_delays<'py>(
    py: Python<'py>,
    tenants: Vec<PyRef<'py, PyWcTenant>>,
    devices: Vec<usize>,
    rate: PyReadonlyArray2<'py, f64>,
    bucket: PyReadonlyArray2<'py, f64>,
    constants: Option<PyReadonlyArray2<'py, f64>>,
    shares_levels: bool,
) -> PyResult<F64Array2<'py>> {
    let placed = placed(&tenants, &devices)?;
    let (rate, bucket) = (rows3(&rate, "rate")?, rows3(&bucket, "bucket")?);
    let c = constants.as_ref().map(|a| rows3(a, "constants")).transpose()?;
    let model = ModelTerms { constants: c.as_deref(), shares_levels };
    array3(py, &wc::queue_delays(&placed, &rate, &bucket, model).map_err(to_py)?)
}

/// Each tenant's delay in its own shaper per stage, `(n, 3)`.
#[pyfunction]
fn wc_shaper_delays<'py>(
    py: Python<'py>,
    tenants: Vec<PyRef<'py, PyWcTenant>>,
    rate: PyReadonlyArray2<'py, f64>,
    bucket: PyReadonlyArray2<'py, f64>,
) -> PyResult<F64Array2<'py>> {
    let devices = vec![0; tenants.len()];
    let placed = placed(&tenants, &devices)?;
    let (rate, bucket) = (rows3(&rate, "rate")?, rows3(&bucket, "bucket")?);
    array3(py, &wc::shaper_delays(&placed, &rate, &bucket).map_err(to_py)?)
}

/// Each tenant's latency bound (s): queue and shaper delays over its three stages.
#[pyfunction]
#[pyo3(signature = (tenants, devices, rate, bucket, constants = None, shares_levels = false))]
fn wc_latency_bounds<'py>(
    py: Python<'py>,
    tenants: Vec<PyRef<'py, PyWcTenant>>,
    devices: Vec<usize>,
    rate: PyReadonlyArray2<'py, f64>,
    bucket: PyReadonlyArray2<'py, f64>,
    constants: Option<PyReadonlyArray2<'py, f64>>,
    shares_levels: bool,
) -> PyResult<F64Array<'py>> {
    let placed = placed(&tenants, &devices)?;
    let (rate, bucket) = (rows3(&rate, "rate")?, rows3(&bucket, "bucket")?);
    let c = constants.as_ref().map(|a| rows3(a, "constants")).transpose()?;
    let model = ModelTerms { constants: c.as_deref(), shares_levels };
    Ok(wc::latency_bounds(&placed, &rate, &bucket, model).map_err(to_py)?.into_pyarray(py))
}

/// The wcLatencyChecker: every queue within capacity and every bound within its SLO.
#[pyfunction]
#[pyo3(signature = (tenants, devices, rate, bucket, n_devices, constants = None, shares_levels = false))]
#[allow(clippy::too_many_arguments)]
fn wc_check<'py>(
    tenants: Vec<PyRef<'py, PyWcTenant>>,
    devices: Vec<usize>,
    rate: PyReadonlyArray2<'py, f64>,
    bucket: PyReadonlyArray2<'py, f64>,
    n_devices: usize,
    constants: Option<PyReadonlyArray2<'py, f64>>,
    shares_levels: bool,
) -> PyResult<bool> {
    let placed = placed(&tenants, &devices)?;
    let (rate, bucket) = (rows3(&rate, "rate")?, rows3(&bucket, "bucket")?);
    let c = constants.as_ref().map(|a| rows3(a, "constants")).transpose()?;
    let model = ModelTerms { constants: c.as_deref(), shares_levels };
    wc::check(&placed, &rate, &bucket, n_devices, model).map_err(to_py)
}

/// Whether the weak-duality screen proves the server's LP infeasible (levels at or below the
/// newcomer's).
#[pyfunction]
fn wc_certainly_infeasible(
    tenants: Vec<PyRef<'_, PyWcTenant>>,
    devices: Vec<usize>,
    newcomer: usize,
) -> PyResult<bool> {
    let placed = placed(&tenants, &devices)?;
    wc::certainly_infeasible(&placed, newcomer).map_err(to_py)
}

/// The arrival curve `min_i (r_i t + b_i)` of token buckets: breakpoints and tail rate.
#[pyfunction]
fn wc_arrival_points<'py>(
    py: Python<'py>,
    rates: PyReadonlyArray1<'py, f64>,
    buckets: PyReadonlyArray1<'py, f64>,
) -> PyResult<(F64Array<'py>, F64Array<'py>, f64)> {
    let (r, b) = (rates.as_slice()?, buckets.as_slice()?);
    if r.is_empty() || r.len() != b.len() || r.iter().chain(b).any(|x| !x.is_finite() || *x < 0.0) {
        return Err(to_py(Error::Invalid(
            "arrival points need equally long, non-empty, finite, non-negative rates and buckets"
                .into(),
        )));
    }
    let a = wc::arrival_points(r, b);
    Ok((a.xs.into_pyarray(py), a.ys.into_pyarray(py), a.tail))
}

/// Register WorkloadCompactor's class and functions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyWcTenant>()?;
    m.add_function(wrap_pyfunction!(wc_build_lp, m)?)?;
    m.add_function(wrap_pyfunction!(wc_split_solution, m)?)?;
    m.add_function(wrap_pyfunction!(wc_queue_rate_sums, m)?)?;
    m.add_function(wrap_pyfunction!(wc_queue_delays, m)?)?;
    m.add_function(wrap_pyfunction!(wc_shaper_delays, m)?)?;
    m.add_function(wrap_pyfunction!(wc_latency_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(wc_check, m)?)?;
    m.add_function(wrap_pyfunction!(wc_certainly_infeasible, m)?)?;
    m.add_function(wrap_pyfunction!(wc_arrival_points, m)?)?;
    Ok(())
}
