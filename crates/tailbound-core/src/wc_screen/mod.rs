//! WorkloadCompactor's exact screens over a whole cluster (our addition to wcPlacer, thesis
//! §5.2.3): the cluster screen ([`cluster::ClusterScreen`], the weak-duality proof of
//! `tailbound.policies.wc_lp.certainly_infeasible` with per-server sums) and the kept Farkas
//! certificates ([`store::CertificateStore`]). Both only skip server LPs that are provably
//! infeasible, so placements are the same with or without them.
//!
//! The Python modules `tailbound.policies.cluster_screen` and `certificate_store` are thin
//! wrappers; their former numpy implementations are the test oracles
//! (`tests/policies/screen_oracle.py`). Units: rates are utilisations of a stage, buckets and
//! SLOs seconds of work (the scaled SLO `SLO' = 0.999 SLO` bounds the buckets).

pub mod certify;
pub mod cluster;
pub mod store;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::{Error, Result};

/// Largest utilisation a server's queue may reach (`tailbound.policies.server.RATE_CAP`).
pub const RATE_CAP: f64 = 0.999;
/// `SLO' = SLO_SCALE · SLO` is the budget of Eq. 5.7 (`tailbound.policies.server.SLO_SCALE`).
pub const SLO_SCALE: f64 = 0.999;
/// Stages of the storage path: network in, storage, network out.
pub const STAGES: usize = 3;
/// Multipliers `λ` of the capacity rows tried by the cluster screen, in units of `SLO'_p`.
pub const LAMBDAS: [f64; 6] = [0.0, 0.25, 0.5, 1.0, 2.0, 4.0];
/// Weights `w` of the three queues tried by the cluster screen: the grid of step 1/4 on the
/// simplex, then its centre (contains the per-server screen's centre and corners).
pub const WEIGHTS: usize = 16;
/// Columns `(w, λ)` of the screen's terms (`w`-major).
pub const NWL: usize = WEIGHTS * LAMBDAS.len();

/// The weight grid, in the order of the former `_WEIGHTS` (`(a, b, 4 - a - b) / 4`, then 1/3).
pub fn weights() -> [[f64; STAGES]; WEIGHTS] {
    let mut out = [[1.0 / 3.0; STAGES]; WEIGHTS];
    let mut k = 0;
    for a in 0..=4u32 {
        for b in 0..=(4 - a) {
            out[k] = [f64::from(a) / 4.0, f64::from(b) / 4.0, f64::from(4 - a - b) / 4.0];
            k += 1;
        }
    }
    out
}

/// Vertex arrays of one stage-major `(3, K)` table: rates and buckets, `K` points per stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Vertices {
    pub rates: Vec<f64>,
    pub buckets: Vec<f64>,
    pub k: usize,
}

impl Vertices {
    /// Checked `(3, k)` tables (finite, non-negative).
    pub fn new(rates: Vec<f64>, buckets: Vec<f64>, what: &str) -> Result<Self> {
        if rates.len() != buckets.len() || rates.is_empty() || rates.len() % STAGES != 0 {
            return Err(Error::Invalid(format!(
                "{what}: rates and buckets must both have shape (3, K), K >= 1 (got {} and {} values)",
                rates.len(),
                buckets.len()
            )));
        }
        if rates.iter().chain(&buckets).any(|x| !x.is_finite() || *x < 0.0) {
            return Err(Error::Invalid(format!(
                "{what}: rates and buckets must be finite and >= 0"
            )));
        }
        let k = rates.len() / STAGES;
        Ok(Self { rates, buckets, k })
    }

    /// `Σ_s min_k (c_s r_sk + d_s b_sk)` (the stages added in order).
    pub fn min_sum(&self, c: &[f64; STAGES], d: &[f64; STAGES]) -> f64 {
        let mut total = 0.0;
        for s in 0..STAGES {
            let (r, b) =
                (&self.rates[s * self.k..][..self.k], &self.buckets[s * self.k..][..self.k]);
            let mut m = f64::INFINITY;
            for (x, y) in r.iter().zip(b) {
                m = m.min(c[s] * x + d[s] * y);
            }
            total += m;
        }
        total
    }
}

/// Points padded to one `(3, K)` table, `K = max(MIN_POINTS, longest)`; padding repeats each
/// stage's last point (which changes no minimum). Unchecked: the curve table of
/// [`crate::wc::WcTenant`] may hold the `+inf` bucket of a curve starting above 0.999; the region
/// goes through [`Vertices::new`].
pub(crate) fn pad(stages: &[(Vec<f64>, Vec<f64>)]) -> Vertices {
    let k = stages.iter().map(|s| s.0.len()).max().unwrap_or(0).max(MIN_POINTS);
    let (mut rates, mut buckets) = (Vec::with_capacity(STAGES * k), Vec::with_capacity(STAGES * k));
    for (r, b) in stages {
        let (lr, lb) = (r[r.len() - 1], b[b.len() - 1]);
        rates.extend(r.iter().copied().chain(std::iter::repeat_n(lr, k - r.len())));
        buckets.extend(b.iter().copied().chain(std::iter::repeat_n(lb, k - b.len())));
    }
    Vertices { rates, buckets, k }
}

/// Points per stage at least, in the padded tables (a pruned curve has 13 points, plus 2).
pub const MIN_POINTS: usize = 16;

/// Lower-left vertices of the tenant's region at each stage, where `c r + d b` with `c, d >= 0`
/// is smallest: the r-b curve between `r_lo` (the larger of its first rate and the rate where
/// its bucket falls to `SLO' = 0.999 SLO`) and `r = 0.999`; `None` if the region is empty at
/// some stage (the tenant cannot meet its SLO alone). `points` are each stage's curve points
/// with `r < 0.999` and then the point at `r = 0.999` (its bucket `+inf` when the curve starts
/// above 0.999), as [`crate::wc::WcTenant::new`] computes them once. The same floats as the
/// former numpy `certificates.region_vertices`.
pub fn region_vertices(slo: f64, points: [(&[f64], &[f64]); STAGES]) -> Result<Option<Vertices>> {
    let cap = slo * SLO_SCALE;
    let mut stages: Vec<(Vec<f64>, Vec<f64>)> = Vec::with_capacity(STAGES);
    for (r, b) in points {
        let b_cap = b[b.len() - 1];
        if b_cap > cap {
            return Ok(None); // also the +inf of a curve starting above 0.999
        }
        let mut rs = r.to_vec();
        let mut bs = b.to_vec();
        if let Some(k) = bs.iter().rposition(|&x| x > cap) {
            // the last point above SLO'; the next one (at worst the 0.999 point) is below
            let r_lo = rs[k] + (cap - bs[k]) * (rs[k + 1] - rs[k]) / (bs[k + 1] - bs[k]);
            let first = r_lo.max(rs[k]).min(rs[k + 1]);
            rs = std::iter::once(first).chain(rs[k + 1..].iter().copied()).collect();
            bs = std::iter::once(cap).chain(bs[k + 1..].iter().copied()).collect();
        }
        stages.push((rs, bs));
    }
    let v = pad(&stages);
    Vertices::new(v.rates, v.buckets, "region").map(Some)
}

/// What both screens need of one tenant: its SLO, the points of its r-b curves up to
/// `r = 0.999` (the cluster screen's `h`), its mean rates, the vertices of its region (the
/// certificates' `L(y)`; `None` when the tenant cannot meet its SLO), and a cache of `h` per
/// level. The screens' part of the one prepared tenant, [`crate::wc::WcTenant`] (its `screen`),
/// which builds it from the curve points it computes once; the servers of the cluster screen
/// share it by `Arc`.
#[derive(Debug)]
pub struct Tenant {
    pub slo: f64,
    curve: Vertices,
    means: [f64; STAGES],
    pub region: Option<Vertices>,
    terms: Mutex<HashMap<u64, Arc<[f64]>>>,
}

impl Tenant {
    /// A tenant of SLO `slo` (s) with curve points `curve` and region vertices `region`
    /// (in production built by [`crate::wc::WcTenant::new`]).
    pub fn new(slo: f64, curve: Vertices, region: Option<Vertices>) -> Result<Self> {
        if !(slo.is_finite() && slo > 0.0) {
            return Err(Error::Invalid(format!("slo must be finite and > 0 (got {slo})")));
        }
        let means = [curve.rates[0], curve.rates[curve.k], curve.rates[2 * curve.k]];
        Ok(Self { slo, curve, means, region, terms: Mutex::new(HashMap::new()) })
    }

    /// `h_s(p)[w, λ] = min_k [b_sk + SLO'_p (w_s [SLO < p] + λ) r_sk]` at level `p` (s), shape
    /// `(3, NWL)`; cached. The same floats as the former numpy `tenant_terms_at`.
    pub fn terms(&self, level: f64) -> Arc<[f64]> {
        let mut cache = self.terms.lock().unwrap_or_else(|e| e.into_inner());
        cache.entry(level.to_bits()).or_insert_with(|| self.compute_terms(level)).clone()
    }

    fn compute_terms(&self, level: f64) -> Arc<[f64]> {
        let scaled = level * SLO_SCALE;
        let higher = if self.slo < level { 1.0 } else { 0.0 };
        let grid = weights();
        let k = self.curve.k;
        let mut out = vec![0.0; STAGES * NWL];
        for s in 0..STAGES {
            let (r, b) = (&self.curve.rates[s * k..][..k], &self.curve.buckets[s * k..][..k]);
            for (w, weight) in grid.iter().enumerate() {
                for (l, lambda) in LAMBDAS.iter().enumerate() {
                    let c = scaled * (weight[s] * higher + lambda);
                    let mut m = f64::INFINITY;
                    for (x, y) in r.iter().zip(b) {
                        m = m.min(y + c * x);
                    }
                    out[s * NWL + w * LAMBDAS.len() + l] = m;
                }
            }
        }
        out.into()
    }

    /// Mean rate per stage (the first point of each curve).
    pub fn means(&self) -> [f64; STAGES] {
        self.means
    }

    /// The cluster screen's curve points, `(3, K)`.
    pub fn curve(&self) -> &Vertices {
        &self.curve
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_the_simplex_then_its_centre() {
        let w = weights();
        assert_eq!(w[0], [0.0, 0.0, 1.0]);
        assert_eq!(w[14], [1.0, 0.0, 0.0]);
        assert_eq!(w[15], [1.0 / 3.0; 3]);
        assert!(w.iter().all(|x| (x.iter().sum::<f64>() - 1.0).abs() < 1e-12));
    }

    #[test]
    fn the_region_starts_where_the_bucket_meets_the_slo() {
        // the docstring example of certificates.region_vertices: b <= 0.2 from r = 0.4 on
        // the curve (0.1, 0.4), (0.5, 0.1), (1, 0) up to 0.999: b(0.999) = 0.1 − 0.2·0.499
        let (r, b) = ([0.1, 0.5, 0.999], [0.4, 0.1, 0.1 - 0.2 * 0.499]);
        let v = region_vertices(0.2 / SLO_SCALE, [(&r, &b), (&r, &b), (&r, &b)]).unwrap().unwrap();
        assert_eq!(v.k, MIN_POINTS);
        assert!((v.rates[0] - 0.366_666_666_666_666_7).abs() < 1e-12);
        assert_eq!(&v.rates[1..3], &[0.5, 0.999]);
        assert!(region_vertices(1e-4, [(&r, &b), (&r, &b), (&r, &b)]).unwrap().is_none());
        let above = ([0.999], [f64::INFINITY]);
        assert!(region_vertices(1.0, [(&r, &b), (&above.0, &above.1), (&r, &b)])
            .unwrap()
            .is_none());
    }

    #[test]
    fn bad_vertices_are_refused() {
        assert!(Vertices::new(vec![0.1; 4], vec![0.1; 4], "x").is_err());
        assert!(Vertices::new(vec![f64::NAN; 3], vec![0.1; 3], "x").is_err());
        assert!(Vertices::new(vec![0.1; 3], vec![f64::NAN; 3], "x").is_err());
        let v = Vertices::new(vec![0.1; 3], vec![0.1; 3], "x").unwrap();
        assert!(Tenant::new(0.0, v, None).is_err());
    }
}
