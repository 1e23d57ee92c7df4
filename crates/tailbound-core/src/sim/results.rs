//! Per-request records: when each request was issued and when it left each stage of its route.
//! Percentiles, windows and SLO checks are computed over these arrays on the Python side.

/// Issue and stage-exit times of every request, `NaN` where not reached yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Records {
    /// Stages per request in `exit` (the longest route).
    pub stages: usize,
    /// Issue time of each request (global index), `NaN` if not issued yet.
    pub issue: Vec<f64>,
    /// `exit[r * stages + s]`: the time request `r` left stage `s`.
    pub exit: Vec<f64>,
}

impl Records {
    /// Records for `requests` requests of up to `stages` stages, all `NaN`.
    pub fn new(requests: usize, stages: usize) -> Self {
        Self { stages, issue: vec![f64::NAN; requests], exit: vec![f64::NAN; requests * stages] }
    }

    /// End-to-end latency of request `r` whose route has `route_len` stages (`NaN` if unfinished).
    pub fn latency(&self, r: usize, route_len: usize) -> f64 {
        if route_len == 0 {
            return 0.0;
        }
        self.exit[r * self.stages + route_len - 1] - self.issue[r]
    }

    /// Time request `r` spent in stage `s` (from leaving the previous stage, or from its issue).
    pub fn stage_time(&self, r: usize, s: usize) -> f64 {
        let entered = if s == 0 { self.issue[r] } else { self.exit[r * self.stages + s - 1] };
        self.exit[r * self.stages + s] - entered
    }
}
