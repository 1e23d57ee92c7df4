//! Infeasibility certificates of a server's LP from HiGHS's Farkas dual ray (the numeric core of
//! `tailbound.policies.certificates.from_dual_ray`; the theory is in that module's docstring).
//!
//! The multipliers `y >= 0` on the coupling rows give, for every point feasible for them,
//! `y·A x <= y·u`; keeping each tenant's own region exact,
//! `L(y) = Σ_j Σ_s min_{region_js} (c_js r + d_js b) + Σ_R min(0, 0.999 e_R) − y·u > 0` proves
//! the LP infeasible. What a later newcomer needs of `y` (its capacity, rate-bound and Eq. 5.7
//! multipliers) is kept in a [`Certificate`].

use super::store::Certificate;
use super::{Tenant, RATE_CAP, STAGES};
use crate::{Error, Result};

/// The rows of a server's LP as `wc_lp.build_lp` builds them (row-wise sparse): r-b curve rows
/// first (lower bounds only, `row_upper = +inf`), then the coupling rows, each coupling row's
/// `R` column (if any) last. Columns: `(r, b)` per tenant and stage (`6 j + 2 s`, `+ 1`), then
/// one `R` per `(level, device)`.
#[derive(Debug, Clone, Copy)]
pub struct LpRows<'a> {
    pub start: &'a [i64],
    pub index: &'a [i64],
    pub value: &'a [f64],
    pub row_upper: &'a [f64],
}

impl LpRows<'_> {
    fn check(&self, columns: usize, ray: usize) -> Result<()> {
        let rows = self.row_upper.len();
        if self.start.len() != rows + 1 || ray != rows {
            return Err(Error::Invalid(format!(
                "lp: start must have one entry per row plus one and the ray one per row \
                 (rows {rows}, start {}, ray {ray})",
                self.start.len()
            )));
        }
        if self.index.len() != self.value.len()
            || self.start[0] != 0
            || self.start.windows(2).any(|w| w[1] < w[0])
            || self.start[rows] as usize != self.index.len()
        {
            return Err(Error::Invalid(
                "lp: start must rise from 0 to the number of entries, index and value match".into(),
            ));
        }
        if self.index.iter().any(|&i| i < 0 || i as usize >= columns) {
            return Err(Error::Invalid(format!("lp: a column index outside 0..{columns}")));
        }
        Ok(())
    }
}

/// The certificates of the LP of `tenants` (each with its device; the last one the newcomer)
/// from the dual ray `ray` (one entry per row); `r_vars` are the `(level, device)` of its `R`
/// columns. Empty if the ray does not prove infeasibility this way (`L(y) > margin · scale`
/// with the newcomer's terms). The rows of a level and path only the newcomer brought make a
/// certificate kept for newcomers of its SLO and device only (`only`); a second one without
/// them, valid for every newcomer, is kept if it still proves this LP infeasible.
pub fn from_dual_ray(
    tenants: &[(&Tenant, usize)],
    r_vars: &[(f64, usize)],
    devices: usize,
    lp: LpRows<'_>,
    ray: &[f64],
    margin: f64,
) -> Result<Vec<Certificate>> {
    let n = tenants.len();
    if n == 0 {
        return Err(Error::Invalid("from_dual_ray: no tenants".into()));
    }
    let mut device_of = tenants.iter().map(|t| t.1).chain(r_vars.iter().map(|r| r.1));
    if let Some(d) = device_of.find(|&d| d >= devices) {
        return Err(Error::Invalid(format!(
            "from_dual_ray: device {d} of a server with {devices}"
        )));
    }
    let n_rb = 6 * n;
    lp.check(n_rb + r_vars.len(), ray.len())?;
    let (newcomer, new_device) = tenants[n - 1];
    let new = (newcomer.slo, new_device);
    let rows = lp.row_upper.len();
    let row = |r: usize| lp.start[r] as usize..lp.start[r + 1] as usize;
    // the rows with the newcomer's own R column, if no other tenant brings its (SLO, device)
    let mut own = vec![false; rows];
    if !tenants[..n - 1].iter().any(|(t, d)| (t.slo, *d) == new) {
        let column = r_vars.iter().position(|&v| v == new).ok_or_else(|| {
            Error::Invalid("from_dual_ray: no R variable for the newcomer's level".into())
        })?;
        for (r, o) in own.iter_mut().enumerate() {
            *o = row(r).any(|e| lp.index[e] as usize == n_rb + column);
        }
    }
    let has_own = own.iter().any(|&o| o);
    let mut out = vec![];
    for sign in [1.0, -1.0] {
        let y: Vec<f64> = (0..rows)
            .map(|r| if lp.row_upper[r].is_finite() { (sign * ray[r]).max(0.0) } else { 0.0 })
            .collect();
        let mut variants = vec![(y.clone(), if has_own { Some(new) } else { None })];
        if has_own {
            let without = y.iter().zip(&own).map(|(&v, &o)| if o { 0.0 } else { v }).collect();
            variants.push((without, None));
        }
        for (yv, only) in variants {
            if yv.iter().any(|&v| v != 0.0) {
                let cert = reduce(tenants, r_vars, devices, &lp, &yv, only);
                // a newcomer that cannot meet its SLO alone has no region: +inf, as
                // `region_min` says (the certificate still holds for other newcomers)
                let bound = newcomer
                    .region
                    .as_ref()
                    .map_or(f64::INFINITY, |r| cert.bound_with(r, newcomer.slo, new_device));
                if bound > margin * cert.scale {
                    out.push(cert);
                }
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    Ok(out)
}

/// The certificate of multipliers `y` (zero outside the coupling rows).
fn reduce(
    tenants: &[(&Tenant, usize)],
    r_vars: &[(f64, usize)],
    devices: usize,
    lp: &LpRows<'_>,
    y: &[f64],
    only: Option<(f64, usize)>,
) -> Certificate {
    let n = tenants.len();
    let n_rb = 6 * n;
    let v = r_vars.len();
    let mut g = vec![0.0; n_rb + v];
    let mut cap = vec![0.0; 2 + devices];
    let mut rb = vec![[0.0; STAGES]; v];
    let mut eq57 = vec![0.0; v];
    let mut yu = 0.0;
    for (r, &yr) in y.iter().enumerate() {
        if yr == 0.0 {
            continue;
        }
        let (lo, hi) = (lp.start[r] as usize, lp.start[r + 1] as usize);
        for e in lo..hi {
            g[lp.index[e] as usize] += yr * lp.value[e];
        }
        if lp.row_upper[r].is_finite() {
            yu += yr * lp.row_upper[r];
        }
        if lo == hi {
            continue;
        }
        // classify: capacity (no R), rate bound (R with -1), Eq. 5.7
        let (first, last) = (lp.index[lo] as usize, lp.index[hi - 1] as usize);
        let stage = (first % 6) / 2;
        if last < n_rb {
            let queue = match stage {
                0 => 0,
                1 => 2 + tenants[first / 6].1,
                _ => 1,
            };
            cap[queue] += yr;
        } else if lp.value[hi - 1] < 0.0 {
            rb[last - n_rb][stage] += yr;
        } else {
            eq57[last - n_rb] += yr;
        }
    }
    let mut terms = vec![-yu];
    for (j, (t, _)) in tenants[..n - 1].iter().enumerate() {
        let c = [0, 1, 2].map(|s| g[6 * j + 2 * s].max(0.0));
        let d = [0, 1, 2].map(|s| g[6 * j + 2 * s + 1].max(0.0));
        terms.push(t.region.as_ref().map_or(f64::INFINITY, |region| region.min_sum(&c, &d)));
    }
    terms.push(g[n_rb..].iter().map(|&e| (RATE_CAP * e).min(0.0)).sum());
    Certificate {
        constant: terms.iter().sum(),
        scale: terms.iter().map(|x| x.abs()).sum::<f64>() + y.iter().sum::<f64>(),
        cap,
        level: r_vars.iter().map(|r| r.0).collect(),
        device: r_vars.iter().map(|r| r.1).collect(),
        rb,
        eq57,
        only,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_rows_are_an_error() {
        let (r, b) = ([0.1, 0.5, 1.0], [0.05, 0.01, 0.0]);
        let prepared = crate::wc::WcTenant::new(1.0, [&r, &r, &r], [&b, &b, &b]).unwrap();
        let t: &Tenant = &prepared.screen;
        let lp = LpRows { start: &[0, 1], index: &[0], value: &[1.0], row_upper: &[1.0] };
        let ok = from_dual_ray(&[(t, 0)], &[(1.0, 0)], 1, lp, &[1.0], 1e-6);
        assert!(ok.is_ok());
        assert!(from_dual_ray(&[(t, 0)], &[(1.0, 0)], 1, lp, &[1.0, 2.0], 1e-6).is_err());
        let bad = LpRows { index: &[9], ..lp };
        assert!(from_dual_ray(&[(t, 0)], &[(1.0, 0)], 1, bad, &[1.0], 1e-6).is_err());
        assert!(from_dual_ray(&[(t, 1)], &[(1.0, 0)], 1, lp, &[1.0], 1e-6).is_err());
    }
}
