//! A cheap proof that a server's LP has no solution (weak duality on one level's rows; the
//! derivation is in `tailbound.policies.wc_lp.certainly_infeasible`'s docstring).
//!
//! For a level `p` (SLO'_p = 0.999 SLO_p) and the path of device `d`, convex weights `w` over the
//! path's three queues and a multiplier `λ` of the capacity rows, every feasible point has
//! `Σ_{j,s in} min_k [b_jsk + SLO'_p (w_s [j higher] + λ) r_jsk] − λ SLO'_p Σ_s A_s <= SLO'_p`,
//! `A_s = 0.999 − Σ_{j lower at s} ρ_js`; a left side above `SLO'_p (1 + 1e-9)` proves the LP
//! infeasible.

use super::{numpy_sum, queue_ids, Placed, RATE_CAP, SLO_SCALE, STORAGE};
use crate::{Error, Result};

/// Weights `w` of the three queues (rows), each a convex combination.
const WEIGHTS: [[f64; 3]; 4] =
    [[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
/// Multipliers of the capacity rows (Eq. 5.4), in units of `SLO'_p`.
const LAMBDAS: [f64; 3] = [0.0, 0.5, 2.0];

/// Whether the weak-duality bound proves the LP of `tenants` infeasible, checking the levels
/// at or below the priority of `tenants[newcomer]`. Never wrong; sometimes inconclusive.
pub fn certainly_infeasible(tenants: &[Placed<'_>], newcomer: usize) -> Result<bool> {
    let n = tenants.len();
    if newcomer >= n {
        return Err(Error::Invalid(format!("newcomer {newcomer} of {n} tenants")));
    }
    let q = queue_ids(tenants);
    let slo: Vec<f64> = tenants.iter().map(|t| t.tenant.slo_s).collect();
    let mut levels: Vec<f64> = slo.iter().copied().filter(|&l| l >= slo[newcomer]).collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    // hmin[j][s][w][l] for the current level
    let mut hmin = vec![[[[0.0_f64; 3]; 4]; 3]; n];
    let mut terms = vec![0.0_f64; 3 * n];
    for level in levels {
        let scaled = level * SLO_SCALE;
        for (j, t) in tenants.iter().enumerate() {
            let higher = f64::from(slo[j] < level);
            for s in 0..3 {
                let (rates, buckets) = t.tenant.points(s);
                for (w, weights) in WEIGHTS.iter().enumerate() {
                    for (l, lambda) in LAMBDAS.iter().enumerate() {
                        let c = scaled * (weights[s] * higher + lambda);
                        let mut m = f64::INFINITY;
                        for (r, b) in rates.iter().zip(buckets) {
                            let v = b + c * r;
                            m = if v.is_nan() || m.is_nan() { f64::NAN } else { m.min(v) };
                        }
                        hmin[j][s][w][l] = m;
                    }
                }
            }
        }
        let mut devices: Vec<usize> =
            (0..n).filter(|&j| slo[j] == level).map(|j| q[j][STORAGE] - 2).collect();
        devices.sort_unstable();
        devices.dedup();
        for device in devices {
            let path = [0, 2 + device, 1];
            let mut total = [[0.0_f64; 3]; 4];
            for j in 0..n {
                for s in 0..3 {
                    let on = q[j][s] == path[s];
                    let inside = f64::from(on && slo[j] <= level);
                    // numpy's (means * lower).sum(): every term, 0 · ρ for the others
                    terms[3 * j + s] = mean(tenants, j, s) * f64::from(on && slo[j] > level);
                    for w in 0..4 {
                        for l in 0..3 {
                            total[w][l] += hmin[j][s][w][l] * inside;
                        }
                    }
                }
            }
            let avail = RATE_CAP * 3.0 - numpy_sum(&terms);
            let mut worst = f64::NEG_INFINITY;
            for row in &total {
                for (l, lambda) in LAMBDAS.iter().enumerate() {
                    let v = row[l] - scaled * lambda * avail;
                    worst = if v.is_nan() || worst.is_nan() { f64::NAN } else { worst.max(v) };
                }
            }
            if worst > scaled * (1.0 + 1e-9) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Tenant `j`'s mean rate at stage `s` (its curve's smallest rate, its first vertex).
fn mean(tenants: &[Placed<'_>], j: usize, s: usize) -> f64 {
    tenants[j].tenant.screen.means()[s]
}

#[cfg(test)]
mod tests {
    use super::super::WcTenant;
    use super::*;

    #[test]
    fn three_tight_tenants_are_proved_infeasible_two_are_not() {
        let r = [0.1, 0.5, 1.0];
        let b = [0.05, 0.01, 0.0];
        let t = WcTenant::new(0.1, [&r, &r, &r], [&b, &b, &b]).unwrap();
        let loose = WcTenant::new(10.0, [&r, &r, &r], [&b, &b, &b]).unwrap();
        let on = |k: usize, x| vec![Placed { tenant: x, device: 0 }; k];
        assert!(!certainly_infeasible(&on(1, &t), 0).unwrap());
        assert!(!certainly_infeasible(&on(2, &loose), 1).unwrap());
        // ten tenants at mean 0.1 per queue: the capacity rows alone cannot hold them
        assert!(certainly_infeasible(&on(10, &t), 9).unwrap());
        assert!(certainly_infeasible(&on(2, &t), 2).is_err());
    }
}
