//! wcOptimizer's per-server LP (thesis §5.2.2; `tailbound.policies.wc_lp` documents the
//! variables and constraints) as row-wise sparse arrays for HiGHS.
//!
//! Columns: per tenant `j` its six columns `6j + 2s` (`r_js`) and `6j + 2s + 1` (`b_js`), then
//! one `R` per `(SLO, device)` pair present, sorted. Rows, in order: every tenant's r-b curve
//! rows (tenant by tenant, stage by stage, segment by segment: `coef·r + b >= rhs`); one
//! capacity row per queue present, in queue order (`Σ r <= 0.999`, Eq. 5.4); per `R` its rate
//! rows for `net_in`, storage, `net_out` (those with a term) and its Eq. 5.7 row.

use super::{queue_ids, ModelTerms, Placed, RATE_CAP, SLO_SCALE, STORAGE};
use crate::Result;

/// An LP `min cost·x, row_lower <= A x <= row_upper, col_lower <= x <= col_upper` with `A`
/// row-wise sparse (`start` with the end, `index`, `value`), in HiGHS's integer width.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LpArrays {
    pub cost: Vec<f64>,
    pub col_lower: Vec<f64>,
    pub col_upper: Vec<f64>,
    pub row_lower: Vec<f64>,
    pub row_upper: Vec<f64>,
    pub start: Vec<i32>,
    pub index: Vec<i32>,
    pub value: Vec<f64>,
}

impl LpArrays {
    /// Close the current row with bounds `[lower, upper]`.
    fn end_row(&mut self, lower: f64, upper: f64) {
        self.row_lower.push(lower);
        self.row_upper.push(upper);
        self.start.push(self.index.len() as i32);
    }

    fn entry(&mut self, col: usize, value: f64) {
        self.index.push(col as i32);
        self.value.push(value);
    }
}

/// The `(SLO, device)` of each `R` variable: every pair present among `tenants`, sorted.
pub fn rate_bound_vars(tenants: &[Placed<'_>]) -> Vec<(f64, usize)> {
    let mut vars: Vec<(f64, usize)> = tenants.iter().map(|t| (t.tenant.slo_s, t.device)).collect();
    vars.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    vars.dedup();
    vars
}

/// The LP of `tenants` on one server, and the `(SLO, device)` of each `R` column (after the
/// `6n` rate and bucket columns). With a server model the blocking terms of a level's path
/// (the largest sum of a tenant's constants among the level's tenants on the path's device)
/// come off its Eq. 5.7 row's right-hand side, and at a device where equal levels share, the
/// level's own rates count in its storage rate row.
pub fn build_lp(
    tenants: &[Placed<'_>],
    model: ModelTerms<'_>,
) -> Result<(LpArrays, Vec<(f64, usize)>)> {
    let n = tenants.len();
    model.validate(n)?;
    let q = queue_ids(tenants);
    let r_vars = rate_bound_vars(tenants);
    let n_rb = 6 * n;
    let rows: usize = tenants.iter().map(|t| t.tenant.rows()).sum();
    let mut lp = LpArrays {
        cost: (0..n_rb + r_vars.len()).map(|c| f64::from(c < n_rb && c % 2 == 0)).collect(),
        ..LpArrays::default()
    };
    lp.start.push(0);
    lp.index.reserve(2 * rows + 6 * n * (r_vars.len() + 1));
    // the tenants' blocks: column bounds and r-b curve rows
    for (j, t) in tenants.iter().enumerate() {
        lp.col_lower.extend_from_slice(&t.tenant.lower);
        lp.col_upper.extend_from_slice(&t.tenant.upper);
        for (s, seg) in t.tenant.segments.iter().enumerate() {
            for (&coef, &rhs) in seg.coef.iter().zip(&seg.rhs) {
                lp.entry(6 * j + 2 * s, coef);
                lp.entry(6 * j + 2 * s + 1, 1.0);
                lp.end_row(rhs, f64::INFINITY);
            }
        }
    }
    lp.col_lower.extend(std::iter::repeat_n(0.0, r_vars.len()));
    lp.col_upper.extend(std::iter::repeat_n(RATE_CAP, r_vars.len()));
    // capacity of every queue present (Eq. 5.4), in queue order
    let mut queues: Vec<usize> = q.iter().flatten().copied().collect();
    queues.sort_unstable();
    queues.dedup();
    for &queue in &queues {
        for (j, qj) in q.iter().enumerate() {
            for (s, &at) in qj.iter().enumerate() {
                if at == queue {
                    lp.entry(6 * j + 2 * s, 1.0);
                }
            }
        }
        lp.end_row(f64::NEG_INFINITY, RATE_CAP);
    }
    // per R: the rate bounds of its path's queues, then Eq. 5.7
    for (v, &(level, device)) in r_vars.iter().enumerate() {
        let r_col = n_rb + v;
        let path = [0, 2 + device, 1];
        for (s, &queue) in path.iter().enumerate() {
            let shared = s == STORAGE && model.shares_levels; // equal levels count
            let before = lp.index.len();
            for (j, t) in tenants.iter().enumerate() {
                let slo = t.tenant.slo_s;
                if q[j][s] == queue && (slo < level || (shared && slo == level)) {
                    lp.entry(6 * j + 2 * s, 1.0);
                }
            }
            if lp.index.len() > before {
                lp.entry(r_col, -1.0);
                lp.end_row(f64::NEG_INFINITY, 0.0);
            }
        }
        let mut constant = f64::NEG_INFINITY;
        for (j, t) in tenants.iter().enumerate() {
            let slo = t.tenant.slo_s;
            for s in 0..3 {
                if q[j][s] == path[s] && slo <= level {
                    lp.entry(6 * j + 2 * s + 1, 1.0);
                }
            }
            if slo == level && t.device == device {
                let c = model.of(j);
                constant = constant.max(c[0] + c[1] + c[2]);
            }
        }
        let slo_p = level * SLO_SCALE;
        lp.entry(r_col, slo_p);
        lp.end_row(f64::NEG_INFINITY, slo_p - constant);
    }
    Ok((lp, r_vars))
}

/// A solution's columns `x` (at least `6n`) as each tenant's rates, clipped to `[0, 0.999]`,
/// its buckets, at least 0 (HiGHS may step a hair outside a bound), and the `R` values after
/// them.
pub fn split_solution(x: &[f64], n: usize) -> Result<SplitSolution> {
    if x.len() < 6 * n {
        return Err(crate::Error::Invalid(format!(
            "a solution of {} columns for {n} tenants (need at least {})",
            x.len(),
            6 * n
        )));
    }
    let clip = |v: f64| v.clamp(0.0, RATE_CAP); // NaN stays NaN, as np.clip
    let floor = |v: f64| if v.is_nan() { v } else { v.max(0.0) };
    let rate = (0..n).map(|j| [0, 1, 2].map(|s| clip(x[6 * j + 2 * s]))).collect();
    let bucket = (0..n).map(|j| [0, 1, 2].map(|s| floor(x[6 * j + 2 * s + 1]))).collect();
    Ok((rate, bucket, x[6 * n..].to_vec()))
}

/// Rates and buckets per tenant and stage, and the `R` values.
pub type SplitSolution = (Vec<[f64; 3]>, Vec<[f64; 3]>, Vec<f64>);

#[cfg(test)]
mod tests {
    use super::super::WcTenant;
    use super::*;

    fn tenant(slo: f64) -> WcTenant {
        let r = [0.1, 0.5, 1.0];
        let b = [0.05, 0.01, 0.0];
        WcTenant::new(slo, [&r, &r, &r], [&b, &b, &b]).unwrap()
    }

    #[test]
    fn two_tenants_two_levels_one_device() {
        let (a, b) = (tenant(0.1), tenant(0.5));
        let placed = [Placed { tenant: &a, device: 0 }, Placed { tenant: &b, device: 0 }];
        let (lp, r_vars) = build_lp(&placed, ModelTerms::default()).unwrap();
        assert_eq!(r_vars, vec![(0.1, 0), (0.5, 0)]);
        // 12 curve rows, 3 queues, level 0.1: its Eq. 5.7 row only; level 0.5: 3 rate rows + 1
        assert_eq!(lp.row_lower.len(), 12 + 3 + 1 + 4);
        assert_eq!(lp.start.len(), lp.row_lower.len() + 1);
        assert_eq!(lp.cost.len(), 14);
        assert_eq!(lp.cost.iter().sum::<f64>(), 6.0);
        // the first level's Eq. 5.7 row: a's three buckets and R_0 with SLO'
        let row = 15;
        let (lo, hi) = (lp.start[row] as usize, lp.start[row + 1] as usize);
        assert_eq!(lp.index[lo..hi], [1, 3, 5, 12]);
        assert_eq!(lp.value[hi - 1], 0.1 * SLO_SCALE);
        assert_eq!(lp.row_upper[row], 0.1 * SLO_SCALE);
    }

    #[test]
    fn a_solution_splits_into_clipped_rates_and_buckets() {
        let x = [0.5, 0.1, 1.0, -1e-12, 0.2, 0.0, 0.7];
        let (rate, bucket, r) = split_solution(&x[..7], 1).unwrap();
        assert_eq!(rate, vec![[0.5, RATE_CAP, 0.2]]);
        assert_eq!(bucket, vec![[0.1, 0.0, 0.0]]);
        assert_eq!(r, vec![0.7]);
        assert!(split_solution(&x[..5], 1).is_err());
    }

    #[test]
    fn model_constants_come_off_the_right_hand_side() {
        let a = tenant(0.1);
        let placed = [Placed { tenant: &a, device: 1 }];
        let constants = [[0.001, 0.002, 0.001]];
        let model = ModelTerms { constants: Some(&constants), shares_levels: true };
        let (lp, r_vars) = build_lp(&placed, model).unwrap();
        assert_eq!(r_vars, vec![(0.1, 1)]);
        // shares_levels: the tenant's own storage rate bounds its R
        assert_eq!(lp.row_lower.len(), 6 + 3 + 2);
        let last = lp.row_upper.len() - 1;
        assert_eq!(lp.row_upper[last], 0.1 * SLO_SCALE - (0.001 + 0.002 + 0.001));
        assert!(
            build_lp(&placed, ModelTerms { constants: Some(&[]), shares_levels: false }).is_err()
        );
    }
}
