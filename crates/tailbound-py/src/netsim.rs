//! Binding of `tailbound_core::netsim`: a packet-level run of RPCs over a one-big-switch WFQ
//! network (Aequitas' network), configured by JSON, RPC columns in, outcome columns out.

use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tailbound_core::netsim::{simulate, NetConfig, RpcInput};
use tailbound_core::Error;

use crate::error::to_py;

fn hosts(name: &str, a: &[i64]) -> PyResult<Vec<u32>> {
    a.iter()
        .enumerate()
        .map(|(i, &h)| {
            u32::try_from(h).map_err(|_| {
                to_py(Error::Field { field: format!("{name}[{i}]"), message: format!("host {h}") })
            })
        })
        .collect()
}

/// Run the RPCs (`time_s` sorted, seconds; `src`, `dst` hosts; `size_bytes` > 0; `cls` the
/// requested class, 0 highest) on the network `config_json` (the core's `NetConfig`) until
/// nothing is left or `until_s`. Returns a dict of per-RPC arrays (`class_run`, `downgraded`,
/// `p_admit`, `finish_s`, `rnl_s`, `size_mtus`) and the run's counters.
#[pyfunction]
#[pyo3(signature = (config_json, time_s, src, dst, size_bytes, cls, until_s=f64::INFINITY))]
#[allow(clippy::too_many_arguments)]
fn simulate_network_rpcs<'py>(
    py: Python<'py>,
    config_json: &str,
    time_s: PyReadonlyArray1<'py, f64>,
    src: PyReadonlyArray1<'py, i64>,
    dst: PyReadonlyArray1<'py, i64>,
    size_bytes: PyReadonlyArray1<'py, i64>,
    cls: PyReadonlyArray1<'py, u8>,
    until_s: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let config = NetConfig::from_json(config_json).map_err(to_py)?;
    let sizes = size_bytes.as_slice()?;
    let mut size = Vec::with_capacity(sizes.len());
    for (i, &b) in sizes.iter().enumerate() {
        size.push(u64::try_from(b).map_err(|_| {
            to_py(Error::Field { field: format!("size_bytes[{i}]"), message: format!("{b} bytes") })
        })?);
    }
    let rpcs = RpcInput {
        time_s: time_s.as_slice()?.to_vec(),
        src: hosts("src", src.as_slice()?)?,
        dst: hosts("dst", dst.as_slice()?)?,
        size_bytes: size,
        cls: cls.as_slice()?.to_vec(),
    };
    let (out, c) = py.detach(|| simulate(config, rpcs, until_s)).map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("class_run", out.class_run.into_pyarray(py))?;
    d.set_item("downgraded", out.downgraded.into_pyarray(py))?;
    d.set_item("p_admit", out.p_admit.into_pyarray(py))?;
    d.set_item("finish_s", out.finish_s.into_pyarray(py))?;
    d.set_item("rnl_s", out.rnl_s.into_pyarray(py))?;
    d.set_item("size_mtus", out.size_mtus.into_pyarray(py))?;
    d.set_item("drops", c.drops.into_pyarray(py))?;
    for (k, v) in [
        ("events", c.events),
        ("data_packets", c.data_packets),
        ("retransmitted", c.retransmitted),
        ("acks", c.acks),
        ("data_drops", c.data_drops),
        ("ack_drops", c.ack_drops),
        ("timeouts", c.timeouts),
        ("downgrades", c.downgrades),
        ("unfinished", c.unfinished),
    ] {
        d.set_item(k, v)?;
    }
    d.set_item("end_s", c.end_s)?;
    Ok(d)
}

/// Register `simulate_network_rpcs`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate_network_rpcs, m)?)?;
    Ok(())
}
