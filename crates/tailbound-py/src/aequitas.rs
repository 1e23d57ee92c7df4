//! Binding of `tailbound_core::control::aequitas`: the admission control as `_core.AequitasAdmission`
//! (the draw and the time passed in by the caller) and the RNL tail over the middle of a run.

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use tailbound_core::control::aequitas::{rnl, Admission, Config, Rules};

use crate::error::to_py;

/// Aequitas' admission control (`tailbound_core::control::aequitas::Admission`).
#[pyclass(name = "AequitasAdmission", module = "tailbound._core")]
pub struct PyAequitasAdmission {
    inner: Admission,
}

#[pymethods]
impl PyAequitasAdmission {
    /// A controller; the arguments are the core's `Config` fields (errors name them:
    /// `FieldError("latency_target_s[1]", …)`), `start_s` when the increase windows start.
    #[new]
    #[pyo3(signature = (
        latency_target_s, target_percentile=None, increment_window_s=None, alpha=0.01,
        beta=0.01, floor=0.1, per_mtu=true, rules="paper", start_s=0.0
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        latency_target_s: Vec<f64>,
        target_percentile: Option<Vec<f64>>,
        increment_window_s: Option<Vec<f64>>,
        alpha: f64,
        beta: f64,
        floor: f64,
        per_mtu: bool,
        rules: &str,
        start_s: f64,
    ) -> PyResult<Self> {
        let mut config = Config::new(latency_target_s);
        if let Some(p) = target_percentile {
            config.target_percentile = p;
        }
        config.increment_window_s = increment_window_s;
        config.alpha = alpha;
        config.beta = beta;
        config.floor = floor;
        config.per_mtu = per_mtu;
        config.rules = rules.parse::<Rules>().map_err(to_py)?;
        Ok(Self { inner: Admission::new(config, start_s).map_err(to_py)? })
    }

    /// Number of classes, the lowest included.
    #[getter]
    fn classes(&self) -> u32 {
        self.inner.config().classes()
    }

    /// Issue an RPC requesting `cls` on `(src, dst)` with the uniform draw `u` in [0, 1):
    /// `(class_run, downgraded)`.
    fn admit(&mut self, src: u32, dst: u32, cls: u32, u: f64) -> PyResult<(u32, bool)> {
        let a = self.inner.admit(src, dst, cls, u).map_err(to_py)?;
        Ok((a.class_run, a.downgraded))
    }

    /// Report a completion: RNL `latency_s`, `size_mtus`, at `now` seconds; returns what it did
    /// (`increased`, `held`, `decreased`, `uncontrolled`).
    fn complete(
        &mut self,
        src: u32,
        dst: u32,
        class_run: u32,
        latency_s: f64,
        size_mtus: f64,
        now: f64,
    ) -> PyResult<&'static str> {
        let o = self.inner.complete(src, dst, class_run, latency_s, size_mtus, now);
        Ok(o.map_err(to_py)?.name())
    }

    /// `p_admit` of `(src, dst)` at `cls` (1 for an unseen channel and the lowest class).
    fn p_admit(&self, src: u32, dst: u32, cls: u32) -> f64 {
        self.inner.p_admit(src, dst, cls)
    }
}

/// The size in MTUs of an RPC of `size_bytes` payload with `mss_bytes` a packet (`⌈·⌉`).
#[pyfunction]
fn rpc_size_mtus(size_bytes: f64, mss_bytes: f64) -> PyResult<f64> {
    rnl::size_in_mtus(size_bytes, mss_bytes).map_err(to_py)
}

/// The `p`-percentile (inverted CDF) of `values` over the RPCs whose rank by `start_s` lies in
/// the middle fraction `keep` (NaN when none is kept).
#[pyfunction]
#[pyo3(signature = (start_s, values, p, keep=0.8))]
fn rnl_tail(
    start_s: PyReadonlyArray1<'_, f64>,
    values: PyReadonlyArray1<'_, f64>,
    p: f64,
    keep: f64,
) -> PyResult<f64> {
    rnl::tail_over_middle(start_s.as_slice()?, values.as_slice()?, p, keep).map_err(to_py)
}

/// Register `AequitasAdmission`, `rpc_size_mtus`, `rnl_tail` and the authors' packet payload
/// `AEQUITAS_ARTIFACT_MSS_BYTES` (5120 − 40 bytes).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("AEQUITAS_ARTIFACT_MSS_BYTES", rnl::ARTIFACT_MSS_BYTES)?;
    m.add_class::<PyAequitasAdmission>()?;
    m.add_function(wrap_pyfunction!(rpc_size_mtus, m)?)?;
    m.add_function(wrap_pyfunction!(rnl_tail, m)?)?;
    Ok(())
}
