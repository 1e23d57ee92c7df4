//! WorkloadCompactor's per-server arithmetic (thesis ch. 5; Zhu et al., SoCC'17): the tenant's
//! arrays prepared once ([`tenant`]), the per-server LP of wcOptimizer as CSR arrays ([`lp`],
//! thesis §5.2.2, Eq. 5.4 and 5.7), the exact latency check of wcLatencyChecker ([`check`],
//! §5.2.1, Eq. 5.1 and 5.5 plus the shapers' delays) and the cheap proof that a server's LP is
//! infeasible ([`screen`]).
//!
//! Units: rates are utilisations of a queue, buckets and SLOs seconds of work. Stages are
//! indexed 0 = `net_in`, 1 = `storage`, 2 = `net_out`; a server's queues are `net_in` (0),
//! `net_out` (1) and one storage queue per device (`2 + d`). The Python side
//! (`tailbound.policies.server`, `tailbound.policies.wc_lp`) keeps the API and orchestrates; the
//! numpy implementations these functions replaced are kept as test oracles
//! (`tests/policies/wc_oracle.py`).

pub mod check;
pub mod lp;
pub mod screen;
pub mod tenant;

pub use check::{check, latency_bounds, queue_delays, queue_rate_sums, shaper_delays};
pub use lp::{build_lp, split_solution, LpArrays};
pub use screen::certainly_infeasible;
pub use tenant::{arrival_points, Arrival, WcTenant};

use crate::{Error, Result};

/// The reference system's guard against rounding: SLOs ×0.999 inside the LP.
pub const SLO_SCALE: f64 = 0.999;
/// The largest rate a queue may carry (and the capacity of every queue in the LP, Eq. 5.4).
pub const RATE_CAP: f64 = 0.999;
/// Stage indices.
pub const NET_IN: usize = 0;
pub const STORAGE: usize = 1;
pub const NET_OUT: usize = 2;

/// A prepared tenant on one of its server's devices (Python's `Placed`).
#[derive(Clone, Copy)]
pub struct Placed<'a> {
    pub tenant: &'a WcTenant,
    pub device: usize,
}

/// What the server model adds to the bounds (Python's `ServerModel`): per tenant the seconds
/// added to its numerator at each stage (`ServerModel.constants`; `None`: the reference system,
/// zeros) and whether equal levels share the device (`ServerModel.shares_levels`).
#[derive(Clone, Copy, Default)]
pub struct ModelTerms<'a> {
    pub constants: Option<&'a [[f64; 3]]>,
    pub shares_levels: bool,
}

impl ModelTerms<'_> {
    /// The constants of tenant `j` (zeros for the reference system).
    fn of(&self, j: usize) -> [f64; 3] {
        self.constants.map_or([0.0; 3], |c| c[j])
    }

    /// An error unless the constants, when given, cover the `n` tenants and are not NaN.
    fn validate(&self, n: usize) -> Result<()> {
        if let Some(c) = self.constants {
            if c.len() != n {
                return Err(Error::Invalid(format!(
                    "model constants: {} rows for {n} tenants",
                    c.len()
                )));
            }
            if c.iter().flatten().any(|x| x.is_nan()) {
                return Err(Error::Invalid("model constants: NaN".into()));
            }
        }
        Ok(())
    }
}

/// The queue of each placed tenant at each stage: `net_in` 0, `net_out` 1, device `d` `2 + d`.
fn queue_ids(tenants: &[Placed<'_>]) -> Vec<[usize; 3]> {
    tenants.iter().map(|t| [0, 2 + t.device, 1]).collect()
}

/// numpy's pairwise summation of a contiguous array (`np.add.reduce`), reproduced so that sums
/// numpy takes over the whole array come out bit for bit the same: eight interleaved partial
/// sums below 128 elements, halves (at a multiple of eight) above.
pub fn numpy_sum(a: &[f64]) -> f64 {
    0.0 + pairwise_sum(a)
}

/// numpy's `pairwise_sum` (the inner loop of `np.add.reduce` on float64).
fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(-0.0, |acc, x| acc + x);
    }
    if n <= 128 {
        let mut r = [0.0_f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for (j, rj) in r.iter_mut().enumerate() {
                *rj += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &a[i..] {
            res += x;
        }
        return res;
    }
    let mut n2 = n / 2;
    n2 -= n2 % 8;
    pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
}

/// An error unless `rate` and `bucket` hold three finite-or-infinite, non-NaN values per tenant.
fn validate_limits(n: usize, rate: &[[f64; 3]], bucket: &[[f64; 3]]) -> Result<()> {
    for (name, a) in [("rate", rate), ("bucket", bucket)] {
        if a.len() != n {
            return Err(Error::Invalid(format!("{name}: {} rows for {n} tenants", a.len())));
        }
        if let Some(j) = a.iter().position(|row| row.iter().any(|x| x.is_nan())) {
            return Err(Error::Invalid(format!("{name}[{j}] is NaN")));
        }
    }
    Ok(())
}
