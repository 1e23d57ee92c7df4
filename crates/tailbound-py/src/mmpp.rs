//! Binding of `tailbound_core::mmpp`: the MMPP fit, from numpy arrays or straight from a trace
//! file. A fitted model is a `_core.Mmpp` holding its arrays in Rust and handing them out as
//! Python lists, so that `tailbound bound` fits and bounds without importing numpy.

use std::path::PathBuf;

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use tailbound_core::mmpp::{self, Message, Mmpp};
use tailbound_core::parse::{msr, spc, wc};

use crate::error::to_py;

/// A fitted Markov-modulated Bernoulli process with exponential work
/// (`tailbound_core::mmpp::Mmpp`); `tailbound.snc.mmpp.MmppModel` wraps it.
#[pyclass(name = "Mmpp", module = "tailbound._core", frozen)]
pub struct PyMmpp {
    pub model: Mmpp,
}

#[pymethods]
impl PyMmpp {
    /// A model from its parts: `transition` row-major (`n × n`), the others `n` long;
    /// `state_of_interval` may be empty.
    #[new]
    fn new(
        transition: Vec<f64>,
        p_request: Vec<f64>,
        mu: Vec<f64>,
        lambdas: Vec<f64>,
        a: f64,
        state_of_interval: Vec<i64>,
    ) -> PyResult<Self> {
        let model =
            Mmpp::new(transition, p_request, mu, lambdas, a, state_of_interval).map_err(to_py)?;
        Ok(PyMmpp { model })
    }

    /// Number of states.
    #[getter]
    fn states(&self) -> usize {
        self.model.n
    }

    /// Per-step transition probabilities, row-major.
    #[getter]
    fn transition(&self) -> Vec<f64> {
        self.model.transition.clone()
    }

    #[getter]
    fn p_request(&self) -> Vec<f64> {
        self.model.p_request.clone()
    }

    #[getter]
    fn mu(&self) -> Vec<f64> {
        self.model.mu.clone()
    }

    #[getter]
    fn lambdas(&self) -> Vec<f64> {
        self.model.lambdas.clone()
    }

    #[getter]
    fn a(&self) -> f64 {
        self.model.a
    }

    /// Each interval's state (empty when not fitted from a trace).
    #[getter]
    fn state_of_interval(&self) -> Vec<i64> {
        self.model.state_of_interval.clone()
    }

    /// `G = P - I`, row-major, rows summing to 0.
    fn generator(&self) -> Vec<f64> {
        self.model.generator()
    }

    /// The smallest `mu`.
    fn pole(&self) -> f64 {
        self.model.pole()
    }
}

/// Fit the reference MMPP to arrivals (integer ns) and each request's work.
#[pyfunction]
fn fit_mmpp(
    py: Python<'_>,
    arrival_ns: PyReadonlyArray1<'_, i64>,
    work: PyReadonlyArray1<'_, f64>,
    interval_ns: i64,
    step_s: f64,
) -> PyResult<PyMmpp> {
    let arrival_ns = arrival_ns.as_array().iter().copied().collect::<Vec<i64>>();
    let work = work.as_array().iter().copied().collect::<Vec<f64>>();
    let model = py.detach(|| mmpp::fit(&arrival_ns, &work, interval_ns, step_s)).map_err(to_py)?;
    Ok(PyMmpp { model })
}

/// One fit per message model `(overhead_bytes, read_factor, write_factor)` of the trace file
/// `path` in `format` (`wc`, `msr` or `spc`: the formats parsed here without options), read
/// and fitted with the GIL released; `None` when the file must go through the Python reader
/// instead: another format, a file it cannot read or parse, or a trace it would reject or sort
/// (`tailbound_core::mmpp::fit_columns`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn fit_trace_file(
    py: Python<'_>,
    path: PathBuf,
    format: &str,
    max_time_s: f64,
    max_request_bytes: i64,
    messages: Vec<(f64, f64, f64)>,
    interval_ns: i64,
    step_s: f64,
) -> PyResult<Option<Vec<PyMmpp>>> {
    let parse = match format {
        "wc" => wc::parse,
        "msr" => msr::parse,
        "spc" => spc::parse,
        _ => return Ok(None),
    };
    let messages: Vec<Message> = messages
        .into_iter()
        .map(|(overhead_bytes, read_factor, write_factor)| Message {
            overhead_bytes,
            read_factor,
            write_factor,
        })
        .collect();
    let fits = py.detach(|| {
        let Ok(data) = std::fs::read(&path) else { return Ok(None) };
        let Ok(columns) = parse(&data) else { return Ok(None) };
        mmpp::fit_columns(&columns, max_time_s, max_request_bytes, &messages, interval_ns, step_s)
    });
    let fits = fits.map_err(to_py)?;
    Ok(fits.map(|fits| fits.into_iter().map(|model| PyMmpp { model }).collect()))
}

/// The fit's steps, one by one (`tailbound_core::mmpp`): arrivals per interval.
#[pyfunction]
fn mmpp_interval_counts(arrival_ns: Vec<i64>, interval_ns: i64) -> PyResult<Vec<i64>> {
    if interval_ns <= 0 || arrival_ns.iter().any(|&t| t < 0) {
        return Err(to_py(tailbound_core::Error::Invalid(
            "arrivals must not be negative and the interval must be positive".into(),
        )));
    }
    Ok(mmpp::interval_counts(&arrival_ns, interval_ns))
}

/// The states' rates (ascending) and the width `a` for interval counts.
#[pyfunction]
fn mmpp_place_states(counts: Vec<i64>, max_states: usize) -> PyResult<(Vec<f64>, f64)> {
    if counts.is_empty() || max_states == 0 {
        return Err(to_py(tailbound_core::Error::Invalid(
            "place_states needs counts and at least one state".into(),
        )));
    }
    Ok(mmpp::place_states(&counts, max_states))
}

/// Each interval's state.
#[pyfunction]
fn mmpp_assign_states(counts: Vec<i64>, lambdas: Vec<f64>, a: f64) -> Vec<i64> {
    mmpp::assign_states(&counts, &lambdas, a)
}

/// The per-step transition matrix, row-major.
#[pyfunction]
fn mmpp_transition_matrix(
    states: Vec<i64>,
    n: usize,
    interval_ns: i64,
    step_s: f64,
) -> PyResult<Vec<f64>> {
    if states.iter().any(|&s| s < 0 || s as usize >= n) {
        return Err(to_py(tailbound_core::Error::Invalid(format!("states must lie in 0..{n}"))));
    }
    Ok(mmpp::transition_matrix(&states, n, interval_ns, step_s))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mmpp_interval_counts, m)?)?;
    m.add_function(wrap_pyfunction!(mmpp_place_states, m)?)?;
    m.add_function(wrap_pyfunction!(mmpp_assign_states, m)?)?;
    m.add_function(wrap_pyfunction!(mmpp_transition_matrix, m)?)?;
    m.add_class::<PyMmpp>()?;
    m.add_function(wrap_pyfunction!(fit_mmpp, m)?)?;
    m.add_function(wrap_pyfunction!(fit_trace_file, m)?)?;
    Ok(())
}
