//! Trace parsing: reads a file and runs a `tailbound_core::parse` parser with the GIL released,
//! then hands the columns to numpy without copying.

use std::path::{Path, PathBuf};

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use tailbound_core::parse::{ascii, azure, msr, spc, vscsi, wc, TraceColumns};
use tailbound_core::Result;

use crate::error::to_py;

/// `(time, op, size, offset | None, source | None, origin_s, skipped)`.
type Columns<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u8>>,
    Bound<'py, PyArray1<i64>>,
    Option<Bound<'py, PyArray1<i64>>>,
    Option<Bound<'py, PyArray1<i32>>>,
    f64,
    usize,
);

/// Read `path` and parse it without holding the GIL.
fn run<T: Send>(
    py: Python<'_>,
    path: &Path,
    parse: impl FnOnce(&[u8]) -> Result<T> + Send,
) -> PyResult<T> {
    py.detach(|| parse(&std::fs::read(path)?)).map_err(to_py)
}

fn to_numpy(py: Python<'_>, c: TraceColumns) -> Columns<'_> {
    (
        c.time.into_pyarray(py),
        c.op.into_pyarray(py),
        c.size.into_pyarray(py),
        c.offset.map(|v| v.into_pyarray(py)),
        c.source.map(|v| v.into_pyarray(py)),
        c.origin_s,
        c.skipped,
    )
}

/// Parse a WorkloadCompactor CSV trace file.
#[pyfunction]
fn parse_wc(py: Python<'_>, path: PathBuf) -> PyResult<Columns<'_>> {
    Ok(to_numpy(py, run(py, &path, wc::parse)?))
}

/// Parse an MSR Cambridge CSV trace file.
#[pyfunction]
fn parse_msr(py: Python<'_>, path: PathBuf) -> PyResult<Columns<'_>> {
    Ok(to_numpy(py, run(py, &path, msr::parse)?))
}

/// Parse a DiskSim-style ASCII trace file (DiskSim, MQSim, MSN-FS) with its conventions.
#[pyfunction]
fn parse_ascii(
    py: Python<'_>,
    path: PathBuf,
    time_units_per_s: f64,
    sector_bytes: i64,
    read_value: i64,
    write_value: i64,
) -> PyResult<Columns<'_>> {
    let options = ascii::AsciiOptions { time_units_per_s, sector_bytes, read_value, write_value };
    Ok(to_numpy(py, run(py, &path, |data| ascii::parse(data, &options))?))
}

/// Parse a UMass SPC trace file.
#[pyfunction]
fn parse_spc(py: Python<'_>, path: PathBuf) -> PyResult<Columns<'_>> {
    Ok(to_numpy(py, run(py, &path, spc::parse)?))
}

/// Parse a CloudPhysics VSCSI binary trace file.
#[pyfunction]
fn parse_vscsi(py: Python<'_>, path: PathBuf, skip_other: bool) -> PyResult<Columns<'_>> {
    Ok(to_numpy(py, run(py, &path, |data| vscsi::parse(data, skip_other))?))
}

/// Parse an Azure LLM inference trace file: `(time, context_tokens, generated_tokens, origin_s)`.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn parse_azure_llm(
    py: Python<'_>,
    path: PathBuf,
) -> PyResult<(Bound<'_, PyArray1<f64>>, Bound<'_, PyArray1<i64>>, Bound<'_, PyArray1<i64>>, f64)> {
    let c = run(py, &path, azure::parse)?;
    Ok((
        c.time.into_pyarray(py),
        c.context_tokens.into_pyarray(py),
        c.generated_tokens.into_pyarray(py),
        c.origin_s,
    ))
}

/// Register the parsers on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_wc, m)?)?;
    m.add_function(wrap_pyfunction!(parse_msr, m)?)?;
    m.add_function(wrap_pyfunction!(parse_ascii, m)?)?;
    m.add_function(wrap_pyfunction!(parse_spc, m)?)?;
    m.add_function(wrap_pyfunction!(parse_vscsi, m)?)?;
    m.add_function(wrap_pyfunction!(parse_azure_llm, m)?)?;
    Ok(())
}
