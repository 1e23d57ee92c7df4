//! Binding of `tailbound_core::sim`: builds a `Simulation` from a JSON configuration and numpy
//! arrays, runs it with the GIL released, and returns its records as numpy arrays.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tailbound_core::control::pslo::Policy;
use tailbound_core::sched;
use tailbound_core::sim::config::param;
use tailbound_core::sim::control::ControlSpec;
use tailbound_core::sim::workload::Requests;
use tailbound_core::sim::{Queue, SimConfig, Simulation};
use tailbound_core::Error;

use crate::error::to_py;

type F64Array<'py> = Bound<'py, PyArray1<f64>>;

fn vec_f64(a: &PyReadonlyArray1<'_, f64>) -> PyResult<Vec<f64>> {
    Ok(a.as_slice()?.to_vec())
}

/// A simulation: `config_json` is the core's `SimConfig`; per workload `w`, `arrival[w]`,
/// `op[w]`, `size[w]` and `cost[w][stage]` are its request columns; `offset[w]` (optional, an
/// empty array when unknown) its byte offsets, read by a disk's rule for sequential writes;
/// `classes[w]` (optional, an empty array when none) each request's own class (`u32::MAX`:
/// none) and `deadline[w]` (optional, likewise) each request's own deadline in seconds after its
/// issue (`inf`: none).
#[pyclass(name = "Simulation", module = "tailbound._core")]
struct PySimulation {
    inner: Simulation,
}

#[pymethods]
impl PySimulation {
    #[new]
    #[pyo3(signature = (config_json, arrival, op, size, cost, offset=None, classes=None, deadline=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        config_json: &str,
        arrival: Vec<PyReadonlyArray1<'_, f64>>,
        op: Vec<PyReadonlyArray1<'_, u8>>,
        size: Vec<PyReadonlyArray1<'_, f64>>,
        cost: Vec<Vec<PyReadonlyArray1<'_, f64>>>,
        offset: Option<Vec<PyReadonlyArray1<'_, f64>>>,
        classes: Option<Vec<PyReadonlyArray1<'_, u32>>>,
        deadline: Option<Vec<PyReadonlyArray1<'_, f64>>>,
    ) -> PyResult<Self> {
        let config = SimConfig::from_json(config_json).map_err(to_py)?;
        let n = config.workloads.len();
        let offsets = offset.as_ref().map_or(n, Vec::len);
        let class_sets = classes.as_ref().map_or(n, Vec::len);
        let deadlines = deadline.as_ref().map_or(n, Vec::len);
        let counts =
            [arrival.len(), op.len(), size.len(), cost.len(), offsets, class_sets, deadlines];
        if counts.iter().any(|&k| k != n) {
            return Err(to_py(Error::Invalid(format!("need request arrays for {n} workloads"))));
        }
        let mut requests = Vec::with_capacity(n);
        for w in 0..n {
            requests.push(Requests {
                arrival: vec_f64(&arrival[w])?,
                op: op[w].as_slice()?.to_vec(),
                size: vec_f64(&size[w])?,
                offset: offset.as_ref().map(|o| vec_f64(&o[w])).transpose()?.unwrap_or_default(),
                cost: cost[w].iter().map(vec_f64).collect::<PyResult<_>>()?,
                class: match &classes {
                    Some(c) => c[w].as_slice()?.to_vec(),
                    None => Vec::new(),
                },
                deadline: deadline
                    .as_ref()
                    .map(|d| vec_f64(&d[w]))
                    .transpose()?
                    .unwrap_or_default(),
            });
        }
        let inner = Simulation::new(&config.topology, config.workloads, requests).map_err(to_py)?;
        Ok(Self { inner })
    }

    /// Process every event up to `until` seconds; returns the number of events processed.
    fn run(&mut self, py: Python<'_>, until: f64) -> u64 {
        let inner = &mut self.inner;
        py.detach(|| inner.run(until))
    }

    /// The simulated time in seconds.
    #[getter]
    fn now(&self) -> f64 {
        self.inner.now()
    }

    /// Events processed since the start.
    #[getter]
    fn events(&self) -> u64 {
        self.inner.events()
    }

    /// Change `workload`'s parameter `name` at queue `kind` (`"link"` or `"device"`) `index`.
    fn set_param(
        &mut self,
        kind: &str,
        index: u32,
        workload: u32,
        name: &str,
        values: Vec<f64>,
    ) -> PyResult<()> {
        let queue = match kind {
            "link" => Queue::Link(index),
            "device" => Queue::Device(index),
            other => return Err(to_py(Error::Invalid(format!("no queue kind {other:?}")))),
        };
        let p = param(name, &values).map_err(to_py)?;
        self.inner.set_param(queue, workload, p).map_err(to_py)
    }

    /// `(issue, exit, stages)`: issue times, the flat stage-exit times (`NaN` where not reached),
    /// and the number of stage columns of `exit`.
    fn records<'py>(&self, py: Python<'py>) -> (F64Array<'py>, F64Array<'py>, usize) {
        let r = self.inner.records();
        (r.issue.clone().into_pyarray(py), r.exit.clone().into_pyarray(py), r.stages)
    }

    /// The limits device `index`'s controller applied so far, in order, as arrays
    /// `(time, workload, rate, depth)`: seconds, workload index, requests per second and
    /// requests, `inf` where unlimited (empty arrays without a controller).
    #[allow(clippy::type_complexity)]
    fn control_log<'py>(
        &self,
        py: Python<'py>,
        index: u32,
    ) -> PyResult<(F64Array<'py>, Bound<'py, PyArray1<u32>>, F64Array<'py>, F64Array<'py>)> {
        let log = self.inner.control_log(index).map_err(to_py)?;
        let time: Vec<f64> = log.iter().map(|c| c.time).collect();
        let workload: Vec<u32> = log.iter().map(|c| c.workload).collect();
        let rate: Vec<f64> = log.iter().map(|c| c.limits.rate.unwrap_or(f64::INFINITY)).collect();
        let depth: Vec<f64> =
            log.iter().map(|c| c.limits.depth.map_or(f64::INFINITY, f64::from)).collect();
        Ok((
            time.into_pyarray(py),
            workload.into_pyarray(py),
            rate.into_pyarray(py),
            depth.into_pyarray(py),
        ))
    }

    /// `(first, end)` index range of each workload's requests in the records.
    fn workload_ranges(&self) -> Vec<(usize, usize)> {
        (0..self.inner.workload_count())
            .map(|w| {
                let r = self.inner.workload_range(w);
                (r.start, r.end)
            })
            .collect()
    }
}

/// Release times of a FIFO token-bucket shaper with `buckets` `(rate, size)` pairs.
#[pyfunction]
fn shape<'py>(
    py: Python<'py>,
    arrival: PyReadonlyArray1<'py, f64>,
    cost: PyReadonlyArray1<'py, f64>,
    buckets: Vec<(f64, f64)>,
) -> PyResult<F64Array<'py>> {
    let (a, c) = (arrival.as_slice()?, cost.as_slice()?);
    let out = py.detach(|| sched::shape(a, c, &buckets)).map_err(to_py)?;
    Ok(out.into_pyarray(py))
}

/// A device's controller (`tailbound_core::sim::control::ControlSpec`, JSON) checked as the
/// simulator checks it, with every parameter the controller defaults written out (JSON); raises
/// `FieldError(field, message)` naming the field at fault.
#[pyfunction]
fn control_config(spec: &str) -> PyResult<String> {
    ControlSpec::filled_json(spec).map_err(to_py)
}

/// Register the simulator's class and functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySimulation>()?;
    m.add("PSLO_POLICIES", PyTuple::new(m.py(), Policy::ALL.map(Policy::name))?)?;
    m.add_function(wrap_pyfunction!(shape, m)?)?;
    m.add_function(wrap_pyfunction!(control_config, m)?)?;
    Ok(())
}
