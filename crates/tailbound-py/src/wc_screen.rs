//! Binding of `tailbound_core::wc_screen`: WorkloadCompactor's cluster screen and certificate
//! store, each server's arrays kept on the Rust side (`tailbound.policies.cluster_screen` and
//! `certificate_store` wrap these classes).

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tailbound_core::wc_screen::cluster::ClusterScreen;
use tailbound_core::wc_screen::store::{Certificate, CertificateStore};
use tailbound_core::wc_screen::{Tenant, Vertices, STAGES};

use crate::error::to_py;

fn table(a: &PyReadonlyArray2<'_, f64>, what: &str) -> PyResult<Vec<f64>> {
    let v = a.as_array();
    if v.shape()[0] != STAGES {
        return Err(PyValueError::new_err(format!(
            "{what} must have shape (3, K), not {:?}",
            v.shape()
        )));
    }
    Ok(v.iter().copied().collect())
}

fn indices(servers: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
    servers
        .as_array()
        .iter()
        .map(|&i| {
            usize::try_from(i)
                .map_err(|_| PyValueError::new_err(format!("servers: negative index {i}")))
        })
        .collect()
}

/// One tenant as both screens need it, prepared once per workload (caches its terms per level).
#[pyclass(name = "WcScreenTenant", module = "tailbound._core", frozen)]
pub struct PyTenant {
    inner: Arc<Tenant>,
}

#[pymethods]
impl PyTenant {
    #[new]
    #[pyo3(signature = (slo_s, rates, buckets, region_rates = None, region_buckets = None))]
    fn new(
        slo_s: f64,
        rates: PyReadonlyArray2<'_, f64>,
        buckets: PyReadonlyArray2<'_, f64>,
        region_rates: Option<PyReadonlyArray2<'_, f64>>,
        region_buckets: Option<PyReadonlyArray2<'_, f64>>,
    ) -> PyResult<Self> {
        let curve = Vertices::new(table(&rates, "rates")?, table(&buckets, "buckets")?, "curve")
            .map_err(to_py)?;
        let region = match (region_rates, region_buckets) {
            (Some(r), Some(b)) => Some(
                Vertices::new(table(&r, "region_rates")?, table(&b, "region_buckets")?, "region")
                    .map_err(to_py)?,
            ),
            (None, None) => None,
            _ => {
                return Err(PyValueError::new_err(
                    "region_rates and region_buckets must both be given or both be None",
                ))
            }
        };
        Ok(Self { inner: Arc::new(Tenant::new(slo_s, curve, region).map_err(to_py)?) })
    }

    /// The tenant's SLO (s).
    #[getter]
    fn slo_s(&self) -> f64 {
        self.inner.slo
    }

    /// `h` at `level` (s): shape `(3, W·L)` flattened stage-major.
    fn terms<'py>(&self, py: Python<'py>, level: f64) -> Bound<'py, PyArray1<f64>> {
        self.inner.terms(level).to_vec().into_pyarray(py)
    }
}

fn tenants_of(tenants: Vec<(PyRef<'_, PyTenant>, usize)>) -> Vec<(Arc<Tenant>, usize)> {
    tenants.into_iter().map(|(t, k)| (t.inner.clone(), k)).collect()
}

/// Per-server sums of the cluster screen (`tailbound.policies.cluster_screen`).
#[pyclass(name = "WcClusterScreen", module = "tailbound._core")]
pub struct PyClusterScreen {
    inner: ClusterScreen,
}

#[pymethods]
impl PyClusterScreen {
    #[new]
    fn new(max_devices: usize, max_levels: usize, tolerance: f64) -> PyResult<Self> {
        Ok(Self { inner: ClusterScreen::new(max_devices, max_levels, tolerance).map_err(to_py)? })
    }

    /// Whether the screen still proves anything.
    #[getter]
    fn active(&self) -> bool {
        self.inner.active()
    }

    /// The levels (distinct SLOs, s) in the order seen.
    #[getter]
    fn levels(&self) -> Vec<f64> {
        self.inner.levels().to_vec()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// An independent copy (servers shared until one side changes them).
    fn fork(&self) -> Self {
        Self { inner: self.inner.clone() }
    }

    fn add_server(&mut self, devices: usize) -> PyResult<()> {
        self.inner.add_server(devices).map_err(to_py)
    }

    fn set_server(
        &mut self,
        i: usize,
        tenants: Vec<(PyRef<'_, PyTenant>, usize)>,
        devices: usize,
    ) -> PyResult<()> {
        self.inner.set_server(i, tenants_of(tenants), devices).map_err(to_py)
    }

    fn infeasible<'py>(
        &mut self,
        py: Python<'py>,
        tenant: PyRef<'_, PyTenant>,
        device: usize,
        servers: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let servers = indices(&servers)?;
        let out = self.inner.infeasible(&tenant.inner, device, &servers).map_err(to_py)?;
        Ok(out.into_pyarray(py))
    }
}

/// Every server's kept certificates (`tailbound.policies.certificate_store`).
#[pyclass(name = "WcCertificateStore", module = "tailbound._core")]
pub struct PyCertificateStore {
    inner: CertificateStore,
}

#[pymethods]
impl PyCertificateStore {
    #[new]
    fn new(max_devices: usize, keep: usize, margin: f64) -> PyResult<Self> {
        Ok(Self { inner: CertificateStore::new(max_devices, keep, margin).map_err(to_py)? })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// An independent copy (servers shared until one side changes them).
    fn fork(&self) -> Self {
        Self { inner: self.inner.clone() }
    }

    fn add_server(&mut self) {
        self.inner.add_server();
    }

    /// Keeps one certificate of server `i` (overwriting its oldest).
    #[pyo3(signature = (i, constant, scale, cap, level, device, rb, eq57, only = None))]
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        i: usize,
        constant: f64,
        scale: f64,
        cap: PyReadonlyArray1<'_, f64>,
        level: PyReadonlyArray1<'_, f64>,
        device: PyReadonlyArray1<'_, i64>,
        rb: PyReadonlyArray2<'_, f64>,
        eq57: PyReadonlyArray1<'_, f64>,
        only: Option<(f64, usize)>,
    ) -> PyResult<()> {
        let rb_view = rb.as_array();
        if rb_view.ndim() != 2 || rb_view.shape()[1] != STAGES {
            return Err(PyValueError::new_err(format!(
                "certificate: rb must have shape (V, 3), not {:?}",
                rb_view.shape()
            )));
        }
        let rb = rb_view.rows().into_iter().map(|r| [r[0], r[1], r[2]]).collect();
        let device = indices(&device)
            .map_err(|_| PyValueError::new_err("certificate: device must be >= 0"))?;
        let cert = Certificate {
            constant,
            scale,
            cap: cap.as_array().to_vec(),
            level: level.as_array().to_vec(),
            device,
            rb,
            eq57: eq57.as_array().to_vec(),
            only,
        };
        self.inner.add(i, vec![cert]).map_err(to_py)
    }

    fn clear(&mut self, i: usize) -> PyResult<()> {
        self.inner.clear(i).map_err(to_py)
    }

    fn joined(&mut self, i: usize, tenant: PyRef<'_, PyTenant>, device: usize) -> PyResult<()> {
        self.inner.joined(i, &tenant.inner, device).map_err(to_py)
    }

    fn refuted<'py>(
        &self,
        py: Python<'py>,
        tenant: PyRef<'_, PyTenant>,
        device: usize,
        servers: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let servers = indices(&servers)?;
        let out = self.inner.refuted(&tenant.inner, device, &servers).map_err(to_py)?;
        Ok(out.into_pyarray(py))
    }

    /// `L(y)` of each slot of server `i` (`-inf` for empty slots and, unless `every`,
    /// certificates that do not apply).
    fn bounds<'py>(
        &self,
        py: Python<'py>,
        tenant: PyRef<'_, PyTenant>,
        device: usize,
        i: usize,
        every: bool,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let out = self.inner.bounds(&tenant.inner, device, i, every).map_err(to_py)?;
        Ok(out.into_pyarray(py))
    }
}

/// Register the classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTenant>()?;
    m.add_class::<PyClusterScreen>()?;
    m.add_class::<PyCertificateStore>()?;
    Ok(())
}
