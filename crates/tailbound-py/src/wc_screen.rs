//! Binding of `tailbound_core::wc_screen`: WorkloadCompactor's cluster screen and certificate
//! store, each server's arrays kept on the Rust side (`tailbound.policies.cluster_screen` and
//! `certificate_store` wrap these classes). Tenants arrive as the one prepared tenant,
//! `WcTenant` (`wc.rs`), whose screens' part the servers share.

use std::sync::Arc;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tailbound_core::wc_screen::certify::{self, LpRows};
use tailbound_core::wc_screen::cluster::ClusterScreen;
use tailbound_core::wc_screen::store::{Certificate, CertificateStore};
use tailbound_core::wc_screen::{Tenant, Vertices, STAGES};

use crate::error::to_py;
use crate::wc::PyWcTenant;

type F64Array<'py> = Bound<'py, PyArray1<f64>>;

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

type F64Table<'py> = Bound<'py, PyArray2<f64>>;

/// A `(3, K)` table as its rates and buckets arrays.
pub(crate) fn tables<'py>(
    py: Python<'py>,
    v: &Vertices,
) -> PyResult<(F64Table<'py>, F64Table<'py>)> {
    let shape = (STAGES, v.k);
    let r = Array2::from_shape_vec(shape, v.rates.clone()).map_err(shape_error)?;
    let b = Array2::from_shape_vec(shape, v.buckets.clone()).map_err(shape_error)?;
    Ok((r.into_pyarray(py), b.into_pyarray(py)))
}

fn shape_error(e: numpy::ndarray::ShapeError) -> PyErr {
    PyValueError::new_err(format!("vertex table: {e}"))
}

/// The certificates of a server's infeasible LP from HiGHS's dual ray: per certificate
/// `(constant, scale, cap, rb (V, 3), eq57, only)` (`only`: kept for newcomers of the last
/// tenant's SLO and device only).
#[pyfunction]
#[pyo3(signature = (tenants, r_level, r_device, devices, start, index, value, row_upper, ray, margin))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn wc_certificates<'py>(
    py: Python<'py>,
    tenants: Vec<(PyRef<'_, PyWcTenant>, usize)>,
    r_level: PyReadonlyArray1<'_, f64>,
    r_device: PyReadonlyArray1<'_, i64>,
    devices: usize,
    start: PyReadonlyArray1<'_, i64>,
    index: PyReadonlyArray1<'_, i64>,
    value: PyReadonlyArray1<'_, f64>,
    row_upper: PyReadonlyArray1<'_, f64>,
    ray: PyReadonlyArray1<'_, f64>,
    margin: f64,
) -> PyResult<Vec<(f64, f64, F64Array<'py>, F64Table<'py>, F64Array<'py>, bool)>> {
    let ts: Vec<(&Tenant, usize)> = tenants.iter().map(|(t, d)| (&*t.inner.screen, *d)).collect();
    let (level, device) = (r_level.as_array(), indices(&r_device)?);
    if level.len() != device.len() {
        return Err(PyValueError::new_err("r_level and r_device must have one length"));
    }
    let r_vars: Vec<(f64, usize)> = level.iter().copied().zip(device).collect();
    let (start, index, value, row_upper, ray) = (
        start.as_slice()?,
        index.as_slice()?,
        value.as_slice()?,
        row_upper.as_slice()?,
        ray.as_slice()?,
    );
    let lp = LpRows { start, index, value, row_upper };
    let certs = certify::from_dual_ray(&ts, &r_vars, devices, lp, ray, margin).map_err(to_py)?;
    certs
        .into_iter()
        .map(|c| {
            let v = c.rb.len();
            let rb = Array2::from_shape_vec((v, STAGES), c.rb.concat()).map_err(shape_error)?;
            Ok((
                c.constant,
                c.scale,
                c.cap.into_pyarray(py),
                rb.into_pyarray(py),
                c.eq57.into_pyarray(py),
                c.only.is_some(),
            ))
        })
        .collect()
}

fn tenants_of(tenants: Vec<(PyRef<'_, PyWcTenant>, usize)>) -> Vec<(Arc<Tenant>, usize)> {
    tenants.into_iter().map(|(t, k)| (t.inner.screen.clone(), k)).collect()
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
        tenants: Vec<(PyRef<'_, PyWcTenant>, usize)>,
        devices: usize,
    ) -> PyResult<()> {
        self.inner.set_server(i, tenants_of(tenants), devices).map_err(to_py)
    }

    fn infeasible<'py>(
        &mut self,
        py: Python<'py>,
        tenant: PyRef<'_, PyWcTenant>,
        device: usize,
        servers: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let servers = indices(&servers)?;
        let out = self.inner.infeasible(&tenant.inner.screen, device, &servers).map_err(to_py)?;
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

    fn joined(&mut self, i: usize, tenant: PyRef<'_, PyWcTenant>, device: usize) -> PyResult<()> {
        self.inner.joined(i, &tenant.inner.screen, device).map_err(to_py)
    }

    fn refuted<'py>(
        &self,
        py: Python<'py>,
        tenant: PyRef<'_, PyWcTenant>,
        device: usize,
        servers: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let servers = indices(&servers)?;
        let out = self.inner.refuted(&tenant.inner.screen, device, &servers).map_err(to_py)?;
        Ok(out.into_pyarray(py))
    }

    /// `L(y)` of each slot of server `i` (`-inf` for empty slots and, unless `every`,
    /// certificates that do not apply).
    fn bounds<'py>(
        &self,
        py: Python<'py>,
        tenant: PyRef<'_, PyWcTenant>,
        device: usize,
        i: usize,
        every: bool,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let out = self.inner.bounds(&tenant.inner.screen, device, i, every).map_err(to_py)?;
        Ok(out.into_pyarray(py))
    }
}

/// Register the classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyClusterScreen>()?;
    m.add_class::<PyCertificateStore>()?;
    m.add_function(wrap_pyfunction!(wc_certificates, m)?)?;
    Ok(())
}
