//! Binding of `tailbound_core::sched::config`: the scheduler kinds, the fields of a queue table,
//! and a queue table read into the serde `SchedulerConfig`. Python derives everything it knows
//! of a kind from these (the Plan's discipline kinds, the scenario's and the gateway's
//! scheduler), so a kind is defined once, in Rust.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use tailbound_core::sched::{SchedulerConfig, Value, WorkloadInfo, KINDS, TABLE_FIELDS};

use crate::error::to_py;

/// A parsed TOML/JSON value as the core's table value (anything else by its `repr`).
fn value(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    Ok(if v.is_instance_of::<PyBool>() {
        Value::Bool(v.extract()?)
    } else if v.is_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(i) => Value::Int(i),
            Err(_) => Value::Other(v.repr()?.to_string()),
        }
    } else if v.is_instance_of::<PyFloat>() {
        Value::Float(v.extract()?)
    } else if let Ok(s) = v.cast::<PyString>() {
        Value::Str(s.to_str()?.to_string())
    } else if let Ok(d) = v.cast::<PyDict>() {
        Value::Table(table(d)?)
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        Value::List(v.try_iter()?.map(|x| value(&x?)).collect::<PyResult<_>>()?)
    } else {
        Value::Other(v.repr()?.to_string())
    })
}

fn table(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, Value)>> {
    d.iter().map(|(k, v)| Ok((k.str()?.to_string(), value(&v)?))).collect()
}

fn infos(workloads: Vec<(String, Option<f64>)>) -> Vec<WorkloadInfo> {
    workloads.into_iter().map(|(name, slo_latency)| WorkloadInfo { name, slo_latency }).collect()
}

/// The core's scheduler configuration (JSON) of a scenario's queue table `fields` (without the
/// queue's name) for `workloads` `(name, SLO latency or None)`, its classes numbered by
/// `classes` when given (else its own, sorted); raises `FieldError(field, message)` naming the
/// field at fault.
#[pyfunction]
#[pyo3(signature = (fields, workloads, classes=None))]
fn scheduler_config(
    fields: &Bound<'_, PyDict>,
    workloads: Vec<(String, Option<f64>)>,
    classes: Option<Vec<String>>,
) -> PyResult<String> {
    let config =
        SchedulerConfig::from_table_in(&table(fields)?, &infos(workloads), classes.as_deref())
            .map_err(to_py)?;
    config.to_json().map_err(to_py)
}

/// The class names of a scenario's queue table, sorted (none for a kind without classes).
#[pyfunction]
fn scheduler_classes(
    fields: &Bound<'_, PyDict>,
    workloads: Vec<(String, Option<f64>)>,
) -> PyResult<Vec<String>> {
    SchedulerConfig::table_classes(&table(fields)?, &infos(workloads)).map_err(to_py)
}

/// Register the kinds, the table fields, `scheduler_config` and `scheduler_classes`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SCHEDULER_KINDS", PyTuple::new(m.py(), KINDS)?)?;
    m.add("SCHEDULER_TABLE_FIELDS", PyTuple::new(m.py(), TABLE_FIELDS)?)?;
    m.add_function(wrap_pyfunction!(scheduler_config, m)?)?;
    m.add_function(wrap_pyfunction!(scheduler_classes, m)?)?;
    Ok(())
}
