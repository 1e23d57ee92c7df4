//! A tenant's arrays, prepared once per workload for everything WorkloadCompactor does with it:
//! its LP block (thesis §5.2.2), its arrival curve per stage (the shapers' delays, §5.2.1) and
//! what the infeasibility screens need ([`crate::wc_screen::Tenant`]: the curve points up to
//! `r = 0.999`, computed here once, the mean rates, the region's vertices and the terms cache).

use std::sync::Arc;

use super::{RATE_CAP, SLO_SCALE};
use crate::wc_screen;
use crate::{Error, Result};

/// The concave arrival curve `α(t) = min_i (r_i t + b_i)` of an r-b curve: breakpoints
/// `(xs, ys)` (`xs[0] = 0`) and the rate after the last one (`tail`).
#[derive(Clone, Debug, PartialEq)]
pub struct Arrival {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub tail: f64,
}

/// The rows `b − σ_k r >= β_k − σ_k ρ_k` of one stage's r-b curve: `coef[k] = −σ_k`,
/// `rhs[k] = β_k − σ_k ρ_k`, one per segment `k`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Segments {
    pub coef: Vec<f64>,
    pub rhs: Vec<f64>,
}

/// A tenant as WorkloadCompactor needs it (Python's `TenantCurves`, prepared once; the one
/// prepared tenant of `tailbound.policies.wc_tenant.prepared`): its SLO (s), its six columns'
/// bounds `(r_in, b_in, r_st, b_st, r_out, b_out)`, its r-b curve rows per stage, its arrival
/// curve per stage, and the screens' part (`screen`, shared with the cluster screen's and the
/// certificate store's servers): per stage the curve's points with `r < 0.999` plus the point
/// at `r = 0.999`, padded to one `(3, K)` table, the mean rates, the region's vertices and the
/// cache of the cluster screen's terms per level.
#[derive(Clone, Debug)]
pub struct WcTenant {
    pub slo_s: f64,
    pub lower: [f64; 6],
    pub upper: [f64; 6],
    pub segments: [Segments; 3],
    pub arrival: [Arrival; 3],
    pub screen: Arc<wc_screen::Tenant>,
}

impl WcTenant {
    /// Prepare a tenant from its SLO (s) and its r-b curve per stage (`net_in`, `storage`,
    /// `net_out`): rates strictly increasing and positive, buckets non-negative, all finite,
    /// equally long per stage. A tenant whose smallest rate exceeds 0.999 at some stage is
    /// accepted ([`WcTenant::out_of_bounds`]); its 0.999 point there has an infinite bucket, so
    /// the screens prove every server infeasible for it.
    pub fn new(slo_s: f64, rates: [&[f64]; 3], buckets: [&[f64]; 3]) -> Result<Self> {
        if !(slo_s.is_finite() && slo_s > 0.0) {
            return Err(Error::Invalid(format!("slo_s must be finite and positive, got {slo_s}")));
        }
        for s in 0..3 {
            let (r, b) = (rates[s], buckets[s]);
            if r.is_empty() || r.len() != b.len() {
                return Err(Error::Invalid(format!(
                    "stage {s}: {} rates and {} buckets (need equally many, at least one)",
                    r.len(),
                    b.len()
                )));
            }
            if let Some(k) = r.iter().chain(b).position(|x| !x.is_finite()) {
                let (name, i) = if k < r.len() { ("rates", k) } else { ("buckets", k - r.len()) };
                return Err(Error::Invalid(format!("stage {s}: {name}[{i}] is not finite")));
            }
            if r[0] <= 0.0 || r.windows(2).any(|w| w[1] <= w[0]) {
                return Err(Error::Invalid(format!(
                    "stage {s}: rates must be positive and strictly increasing"
                )));
            }
            if b.iter().any(|&x| x < 0.0) {
                return Err(Error::Invalid(format!("stage {s}: buckets must be non-negative")));
            }
        }
        let mut lower = [0.0; 6];
        let mut upper = [0.0; 6];
        for s in 0..3 {
            lower[2 * s] = rates[s][0];
            upper[2 * s] = RATE_CAP;
            lower[2 * s + 1] = *buckets[s].last().expect("checked non-empty");
            upper[2 * s + 1] = slo_s * SLO_SCALE;
        }
        let points = [0, 1, 2].map(|s| vertices(rates[s], buckets[s]));
        let stages = [0, 1, 2].map(|s| (points[s].0.as_slice(), points[s].1.as_slice()));
        let region = wc_screen::region_vertices(slo_s, stages)?;
        let curve = wc_screen::pad(&points);
        Ok(WcTenant {
            slo_s,
            lower,
            upper,
            segments: [0, 1, 2].map(|s| segment_rows(rates[s], buckets[s])),
            arrival: [0, 1, 2].map(|s| arrival_points(rates[s], buckets[s])),
            screen: Arc::new(wc_screen::Tenant::new(slo_s, curve, region)?),
        })
    }

    /// Whether a column has its lower bound above its upper one: a smallest rate above 0.999 or
    /// a smallest bucket above `SLO'` at some stage (no server takes the tenant).
    pub fn out_of_bounds(&self) -> bool {
        self.lower.iter().zip(&self.upper).any(|(lo, hi)| lo > hi)
    }

    /// The number of curve rows (segments) over the three stages.
    pub fn rows(&self) -> usize {
        self.segments.iter().map(|s| s.coef.len()).sum()
    }

    /// Stage `s`'s curve points (rates, buckets), padded to the table's width `K` by repeating
    /// the last point (which changes no minimum).
    pub fn points(&self, s: usize) -> (&[f64], &[f64]) {
        let v = self.screen.curve();
        (&v.rates[s * v.k..][..v.k], &v.buckets[s * v.k..][..v.k])
    }
}

/// `(−σ_k, β_k − σ_k ρ_k)` per segment of the curve `(rates, buckets)`, as numpy computes
/// `slope = diff(b) / diff(r)`, `−slope`, `b[:-1] − slope · r[:-1]`.
pub fn segment_rows(rates: &[f64], buckets: &[f64]) -> Segments {
    let m = rates.len().saturating_sub(1);
    let mut out = Segments { coef: Vec::with_capacity(m), rhs: Vec::with_capacity(m) };
    for k in 0..m {
        let slope = (buckets[k + 1] - buckets[k]) / (rates[k + 1] - rates[k]);
        out.coef.push(-slope);
        out.rhs.push(buckets[k] - slope * rates[k]);
    }
    out
}

/// The arrival curve `min_i (r_i t + b_i)` of token buckets `(rates, buckets)` (non-negative,
/// non-empty): the lower envelope walked from the smallest bucket, as
/// `tailbound.dnc.curves.token_bucket_min` walks it (same lines, same order, same arithmetic,
/// so the same floats).
pub fn arrival_points(rates: &[f64], buckets: &[f64]) -> Arrival {
    let mut order: Vec<usize> = (0..rates.len()).collect();
    // np.lexsort((r, b)): by bucket, then rate, stable
    order.sort_by(|&i, &j| buckets[i].total_cmp(&buckets[j]).then(rates[i].total_cmp(&rates[j])));
    let mut lines: Vec<(f64, f64)> = Vec::with_capacity(rates.len());
    for i in order {
        let (ri, bi) = (rates[i], buckets[i]);
        if lines.last().is_some_and(|l| ri >= l.0) {
            continue; // larger bucket and no smaller rate: dominated
        }
        while lines.len() >= 2 {
            let (r1, b1) = lines[lines.len() - 2];
            let (r2, b2) = lines[lines.len() - 1];
            let x12 = (b2 - b1) / (r1 - r2);
            let x2i = (bi - b2) / (r2 - ri);
            if x2i <= x12 {
                lines.pop();
            } else {
                break;
            }
        }
        if lines.len() == 1 {
            let (r1, b1) = lines[0];
            if (bi - b1) / (r1 - ri) <= 0.0 {
                lines.pop();
            }
        }
        lines.push((ri, bi));
    }
    let mut xs = vec![0.0];
    let mut ys = vec![lines[0].1];
    for w in lines.windows(2) {
        let ((r1, b1), (r2, b2)) = (w[0], w[1]);
        let x = (b2 - b1) / (r1 - r2);
        xs.push(x);
        ys.push(b1 + r1 * x);
    }
    Arrival { xs, ys, tail: lines[lines.len() - 1].0 }
}

/// `np.interp(x, xp, fp)` for one `x` (numpy's arithmetic: the segment's slope times the
/// distance from its left end, plus its left value; the end values outside).
pub fn interp(x: f64, xp: &[f64], fp: &[f64]) -> f64 {
    let last = xp.len() - 1;
    if x > xp[last] {
        return fp[last];
    }
    if x < xp[0] {
        return fp[0];
    }
    let j = xp.partition_point(|&v| v <= x) - 1; // the last j with xp[j] <= x
    if j == last || xp[j] == x {
        return fp[j];
    }
    let slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
    let mut y = slope * (x - xp[j]) + fp[j];
    if y.is_nan() {
        y = slope * (x - xp[j + 1]) + fp[j + 1];
        if y.is_nan() && fp[j] == fp[j + 1] {
            y = fp[j];
        }
    }
    y
}

/// The curve's points with `r < 0.999` and the point at `r = 0.999` (`b(0.999)` by linear
/// interpolation, infinite below the curve's smallest rate): rates and buckets.
fn vertices(rates: &[f64], buckets: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let keep = rates.iter().take_while(|&&r| r < RATE_CAP).count(); // rates increase
    let mut r = rates[..keep].to_vec();
    let mut b = buckets[..keep].to_vec();
    r.push(RATE_CAP);
    b.push(if RATE_CAP < rates[0] { f64::INFINITY } else { interp(RATE_CAP, rates, buckets) });
    (r, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_of_two_buckets_crosses_where_numpy_says() {
        let a = arrival_points(&[1.0, 0.25], &[1.0, 4.0]);
        assert_eq!(a, Arrival { xs: vec![0.0, 4.0], ys: vec![1.0, 5.0], tail: 0.25 });
        let one = arrival_points(&[0.5], &[2.0]);
        assert_eq!(one, Arrival { xs: vec![0.0], ys: vec![2.0], tail: 0.5 });
    }

    #[test]
    fn arrival_drops_a_bucket_off_the_envelope() {
        // (0.5, 3) lies above the envelope of (1, 1) and (0.1, 4): the walk pops it
        let a = arrival_points(&[1.0, 0.5, 0.1], &[1.0, 3.0, 4.0]);
        assert_eq!(a.tail, 0.1);
        assert_eq!(a.xs.len(), 2);
        assert!((a.xs[1] - 3.0 / 0.9).abs() < 1e-15);
    }

    #[test]
    fn block_and_vertices_of_a_curve() {
        let r = [0.1, 0.5, 1.0];
        let b = [0.05, 0.01, 0.0];
        let t = WcTenant::new(1.0, [&r, &r, &r], [&b, &b, &b]).unwrap();
        assert_eq!(t.lower[0], 0.1);
        assert_eq!(t.upper[1], SLO_SCALE);
        assert_eq!(t.segments[0].coef.len(), 2);
        assert!((t.segments[0].coef[0] - 0.1).abs() < 1e-15); // slope −0.04/0.4
        let (vr, vb) = t.points(1);
        assert_eq!(vr.len(), wc_screen::MIN_POINTS);
        assert_eq!(&vr[..4], &[0.1, 0.5, RATE_CAP, RATE_CAP]);
        assert!((vb[2] - 0.00002).abs() < 1e-15);
        assert_eq!(t.screen.means(), [0.1; 3]);
        assert!(t.screen.region.is_some());
        assert!(!t.out_of_bounds());
        assert_eq!(t.rows(), 6);
        // a smallest rate above 0.999: accepted, out of bounds, an infinite 0.999 bucket
        let hi = [1.5, 2.0];
        let t = WcTenant::new(1.0, [&r, &hi, &r], [&b, &b[..2], &b]).unwrap();
        assert!(t.out_of_bounds() && t.screen.region.is_none());
        assert_eq!(t.points(1).1[0], f64::INFINITY);
    }

    #[test]
    fn bad_curves_are_errors() {
        let r = [0.1, 0.5];
        let b = [0.05, 0.01];
        let nan = [0.1, f64::NAN];
        assert!(WcTenant::new(f64::NAN, [&r, &r, &r], [&b, &b, &b]).is_err());
        assert!(WcTenant::new(1.0, [&r, &nan, &r], [&b, &b, &b]).is_err());
        assert!(WcTenant::new(1.0, [&r, &r, &r], [&b, &b, &b[..1]]).is_err());
        assert!(WcTenant::new(1.0, [&r, &r, &[]], [&b, &b, &[]]).is_err());
        assert!(WcTenant::new(1.0, [&[0.5, 0.1], &r, &r], [&b, &b, &b]).is_err());
        let msg = WcTenant::new(1.0, [&r, &nan, &r], [&b, &b, &b]).unwrap_err().to_string();
        assert!(msg.contains("stage 1: rates[1]"), "{msg}");
    }

    #[test]
    fn interp_matches_numpy_at_the_ends() {
        let xp = [0.1, 0.5, 1.0];
        let fp = [0.05, 0.01, 0.0];
        assert_eq!(interp(0.5, &xp, &fp), 0.01);
        assert_eq!(interp(1.0, &xp, &fp), 0.0);
        assert_eq!(interp(2.0, &xp, &fp), 0.0);
        assert_eq!(interp(0.0, &xp, &fp), 0.05);
    }
}
