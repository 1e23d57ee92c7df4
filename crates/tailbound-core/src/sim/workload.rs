//! Workloads: the requests one client issues, with their per-stage costs computed in Python by
//! the token models, replayed open loop (trace arrival times, as the papers insist) or closed loop
//! (a fixed number of outstanding requests, the "file copy" workload L of thesis Table 3.1).

use serde::Deserialize;

use super::topology::StageRoute;
use crate::error::{Error, Result};

/// How a workload issues its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Issue {
    /// Each request at its trace arrival time, whatever the system does.
    Open,
    /// `outstanding` requests in flight: the first at time `arrival[0]`, each next one the moment
    /// one completes (arrival times after the first are ignored).
    Closed { outstanding: u32 },
}

/// A workload's route and issue discipline.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// The stages every request passes, in order.
    pub route: Vec<StageRoute>,
    /// Open or closed loop.
    pub issue: Issue,
}

/// One workload's requests as columns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Requests {
    /// Arrival (issue) times in seconds, non-decreasing.
    pub arrival: Vec<f64>,
    /// 0 read, 1 write (chooses the device's dispatch limits).
    pub op: Vec<u8>,
    /// Request size in bytes (counts against the device's outstanding-bytes limit).
    pub size: Vec<f64>,
    /// Byte offsets on the device (only a disk's rule reads them); empty when unknown.
    pub offset: Vec<f64>,
    /// Per stage of the route, one cost per request: message bytes for a network stage, seconds
    /// of work for a device stage.
    pub cost: Vec<Vec<f64>>,
    /// Each request's own class at every queue it crosses (an index into the queues' classes;
    /// [`crate::sched::NO_CLASS`]: its workload's class there); empty when the workload sets none.
    /// Only the kinds with classes read it (`dwrr`, `wfq`); the simulation checks each class
    /// against the classes of those queues on the route.
    pub class: Vec<u32>,
    /// Each request's own relative deadline in seconds after its issue (its items carry the
    /// absolute deadline issue + deadline at every queue; `edf` serves by it); empty when the
    /// workload sets none. `+∞` for a request without one.
    pub deadline: Vec<f64>,
}

impl Requests {
    /// Number of requests.
    pub fn len(&self) -> usize {
        self.arrival.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.arrival.is_empty()
    }

    /// Check lengths and domains against the route of `stages` stages.
    pub fn validate(&self, stages: usize, name: &str) -> Result<()> {
        let n = self.len();
        let bad = |what: String| Err(Error::Invalid(format!("workload {name}: {what}")));
        if self.op.len() != n || self.size.len() != n {
            return bad(format!("op and size need {n} entries"));
        }
        if !self.offset.is_empty() && self.offset.len() != n {
            return bad(format!("offset needs {n} entries (or none)"));
        }
        if !self.offset.iter().all(|x| x.is_finite() && *x >= 0.0) {
            return bad("offsets must be finite and >= 0".into());
        }
        if self.cost.len() != stages {
            return bad(format!("{} cost arrays for {stages} stages", self.cost.len()));
        }
        if self.cost.iter().any(|c| c.len() != n) {
            return bad(format!("every cost array needs {n} entries"));
        }
        if self.arrival.iter().any(|t| !t.is_finite()) {
            return bad("an arrival time is not finite".into());
        }
        if self.arrival.windows(2).any(|w| w[1] < w[0]) {
            return bad("arrival times must be non-decreasing".into());
        }
        let finite_non_negative = |x: &f64| x.is_finite() && *x >= 0.0;
        if !self.size.iter().all(finite_non_negative)
            || !self.cost.iter().flatten().all(finite_non_negative)
        {
            return bad("sizes and costs must be finite and >= 0".into());
        }
        if self.op.iter().any(|&o| o > 1) {
            return bad("op must be 0 (read) or 1 (write)".into());
        }
        if !self.class.is_empty() && self.class.len() != n {
            return bad(format!("class needs {n} entries (or none)"));
        }
        if !self.deadline.is_empty() && self.deadline.len() != n {
            return bad(format!("deadline needs {n} entries (or none)"));
        }
        if let Some(i) = self.deadline.iter().position(|d| d.is_nan() || *d < 0.0) {
            return bad(format!(
                "request {i}: a deadline must be >= 0 seconds (or +inf), got {}",
                self.deadline[i]
            ));
        }
        Ok(())
    }
}
