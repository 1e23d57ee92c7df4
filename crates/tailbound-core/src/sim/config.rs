//! The JSON configuration the Python scenario builder sends: the topology and each workload's
//! route and issue discipline. The request arrays travel separately, as arrays.

use serde::Deserialize;

use super::topology::Topology;
use super::workload::WorkloadSpec;
use crate::error::{Error, Result};
use crate::sched::Param;

/// Topology plus workloads.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// Links and devices.
    pub topology: Topology,
    /// One entry per workload, in the order of the request arrays.
    pub workloads: Vec<WorkloadSpec>,
}

impl SimConfig {
    /// Parse the JSON form.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| Error::Invalid(format!("simulation config: {e}")))
    }
}

/// Parse a control-hook parameter from its name and values: `priority` (one integer),
/// `weight` (one number), `deadline` (seconds), `buckets` (flat `[r0, b0, r1, b1, ...]`).
pub fn param(name: &str, values: &[f64]) -> Result<Param> {
    let one = || -> Result<f64> {
        match values {
            [x] => Ok(*x),
            _ => Err(Error::Invalid(format!("parameter {name} takes one value, got {values:?}"))),
        }
    };
    match name {
        "priority" => {
            let p = one()?;
            if p.fract() != 0.0 || !p.is_finite() {
                return Err(Error::Invalid(format!("a priority must be an integer, got {p}")));
            }
            Ok(Param::Priority(p as i64))
        }
        "weight" => Ok(Param::Weight(one()?)),
        "deadline" => Ok(Param::Deadline(one()?)),
        "buckets" => {
            if values.len() % 2 != 0 {
                return Err(Error::Invalid("buckets need (rate, size) pairs".into()));
            }
            Ok(Param::Buckets(values.chunks(2).map(|p| (p[0], p[1])).collect()))
        }
        other => Err(Error::Invalid(format!("unknown scheduler parameter {other:?}"))),
    }
}
