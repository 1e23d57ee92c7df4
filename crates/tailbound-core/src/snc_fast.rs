//! SNC-Meister's `theta` search for every independent two-hop flow at once (thesis Appendix A.4,
//! Eq. A.5; the search of §4.2.5 as the reference implementation runs it).
//!
//! Without dependency groups every operand is independent, every `sigma` of an arrival is 0 and
//! every aggregate is the plain sum of its sources' `rho`, so flow `W`'s bound at `theta` is
//!
//! ```text
//! rho_D   = sum_i rho_Zi                 sigma_D = sum_i -log(1 - e^{theta (rho_Zi + rho_Ri - c_i)}) / theta
//! r1      = rho_Y - c1                   r2      = rho_D - c2        (r1 <- 0.99 r1 if r1 == r2)
//! sigma_S = sigma_D - log(1 - e^{-theta |r1 - r2|}) / theta,          rho_S = rho_X + max(r1, r2)
//! L       = (log(eps (1 - e^{theta (rho_W + rho_S)})) / theta - sigma_S) / rho_S    (steps)
//! ```
//!
//! with `rho` of an MMPP source `log1p(r) / theta`, `r` the Perron root of
//! `diag(1 + e) G + diag(e)`, `e_s = p_s theta / (mu_s - theta)`. Each flow's search is
//! independent of the others: levels of step `100, 10, ..., 1e-9` around the current `theta`
//! (grids built by sequential addition), first strict minimum kept, `theta = lo` when no grid point
//! is finite; points at or beyond the flow's pole (smallest `mu` of its sources) are infinite and
//! not evaluated. Each source keeps a memo `theta -> rho` shared by every flow using it, with the
//! Perron vector at each `theta`: a new root starts from the vector interpolated between its
//! memoised neighbours (see `PerronSolver`), which changes the work, not the root. The
//! Python module `tailbound.snc.fast` builds the plan; its tests compare the result with the
//! per-flow operator trees.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for `theta` bits: one multiply (the memo's keys are not adversarial, and SipHash
/// showed in profiles).
#[derive(Default)]
struct BitsHasher(u64);

impl Hasher for BitsHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type BitsMap<V> = HashMap<u64, V, BuildHasherDefault<BitsHasher>>;

use crate::error::{Error, Result};
use crate::snc::PerronSolver;

const MIN_THETA: f64 = 1e-9;
const INITIAL_THETA: f64 = 1000.0;
const DECREASE: f64 = 10.0;

/// A fitted MMPP source: generator `G = P - I` (`n × n`, row-major), per-step request
/// probabilities `p` and exponential work rates `mu` (`inf` for a state without work).
pub struct Source {
    pub n: usize,
    pub generator: Vec<f64>,
    pub p: Vec<f64>,
    pub mu: Vec<f64>,
}

/// Rows of source indexes in compressed form: row `i` is `idx[ptr[i]..ptr[i + 1]]`.
pub struct Csr {
    pub ptr: Vec<usize>,
    pub idx: Vec<usize>,
}

impl Csr {
    fn row(&self, i: usize) -> &[usize] {
        &self.idx[self.ptr[i]..self.ptr[i + 1]]
    }

    fn check(&self, name: &str, rows: usize, sources: usize) -> Result<()> {
        let ok = self.ptr.len() == rows + 1
            && self.ptr.first() == Some(&0)
            && self.ptr.windows(2).all(|w| w[0] <= w[1])
            && self.ptr[rows] == self.idx.len()
            && self.idx.iter().all(|&s| s < sources);
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!("{name}: malformed rows of source indexes")))
        }
    }
}

/// The expression's shape for every flow: sources of `W` (`w`), of the same first and second
/// queue (`x`), of the first queue only (`y`); per *pair* (another first queue feeding the second
/// queue) its flow, its rate `c` (work per step) and its sources `z` (into the second queue) and
/// `r` (elsewhere). `c1`, `c2` are the flow's two queues' rates (work per step), `eps` its
/// violation probability, `pole` the smallest `mu` of its sources. Sums run in row order.
pub struct Plan {
    pub sources: Vec<Source>,
    pub c1: Vec<f64>,
    pub c2: Vec<f64>,
    pub eps: Vec<f64>,
    pub pole: Vec<f64>,
    pub w: Csr,
    pub x: Csr,
    pub y: Csr,
    pub pair_flow: Vec<usize>,
    pub pair_c: Vec<f64>,
    pub z: Csr,
    pub r: Csr,
}

struct Rho<'a> {
    source: &'a Source,
    solver: Option<PerronSolver>,
    excess: Vec<f64>,
    /// `theta` (bits) -> slot in `values`/`vectors`; `ordered` is the same map sorted (positive
    /// floats order as their bits), for the neighbours of a new `theta`.
    memo: BitsMap<usize>,
    ordered: BTreeMap<u64, usize>,
    values: Vec<f64>,
    /// The Perron vector at each memoised `theta` (`n` per slot; empty for `n <= 2`).
    vectors: Vec<f64>,
    warm: Vec<f64>,
}

impl<'a> Rho<'a> {
    fn new(source: &'a Source) -> Result<Self> {
        let n = source.n;
        if n == 0 || source.generator.len() != n * n || source.p.len() != n || source.mu.len() != n
        {
            return Err(Error::Invalid(format!("source with {n} states has inconsistent arrays")));
        }
        let solver = if n > 2 { Some(PerronSolver::new(&source.generator, n)?) } else { None };
        Ok(Rho {
            source,
            solver,
            excess: vec![0.0; n],
            memo: BitsMap::default(),
            ordered: BTreeMap::new(),
            values: vec![],
            vectors: vec![],
            warm: vec![0.0; n],
        })
    }

    /// A starting vector for `theta` from the memoised Perron vectors of the nearest `theta`s:
    /// linear interpolation between the neighbours on both sides, else linear extrapolation
    /// from the two nearest on one side (kept only if positive), else the nearest.
    fn warm_start(&mut self, theta: f64) -> bool {
        let n = self.source.n;
        let key = theta.to_bits();
        let mut below = self.ordered.range(..key).rev();
        let mut above = self.ordered.range(key..);
        let slot = |s: usize| s * n..(s + 1) * n;
        let (b1, a1) = (below.next(), above.next());
        let (p, q, t) = match (b1, a1) {
            (Some((&kb, &sb)), Some((&ka, &sa))) => {
                let (tb, ta) = (f64::from_bits(kb), f64::from_bits(ka));
                (sb, sa, (theta - tb) / (ta - tb))
            }
            (Some((&k1, &s1)), None) => match below.next() {
                Some((&k2, &s2)) => {
                    let (t1, t2) = (f64::from_bits(k1), f64::from_bits(k2));
                    (s1, s2, (theta - t1) / (t2 - t1))
                }
                None => (s1, s1, 0.0),
            },
            (None, Some((&k1, &s1))) => match above.next() {
                Some((&k2, &s2)) => {
                    let (t1, t2) = (f64::from_bits(k1), f64::from_bits(k2));
                    (s1, s2, (theta - t1) / (t2 - t1))
                }
                None => (s1, s1, 0.0),
            },
            (None, None) => return false,
        };
        let (vp, vq) = (&self.vectors[slot(p)], &self.vectors[slot(q)]);
        for ((w, x), y) in self.warm.iter_mut().zip(vp).zip(vq) {
            *w = x + t * (y - x);
        }
        if !self.warm.iter().all(|x| *x > 0.0 && x.is_finite()) {
            self.warm.copy_from_slice(vp);
        }
        true
    }

    /// `rho(theta)` for `theta` below every `mu` of the source (the caller checks the pole).
    fn at(&mut self, theta: f64) -> f64 {
        if let Some(&slot) = self.memo.get(&theta.to_bits()) {
            return self.values[slot];
        }
        let s = self.source;
        for i in 0..s.n {
            self.excess[i] =
                if s.mu[i].is_infinite() { 0.0 } else { s.p[i] * theta / (s.mu[i] - theta) };
        }
        let b = match s.n {
            1 => self.excess[0],
            2 => {
                // The closed form of tailbound.snc.mmpp, operation for operation.
                let (e, g) = (&self.excess, &s.generator);
                let a = (1.0 + e[0]) * g[0] + e[0];
                let d = (1.0 + e[1]) * g[3] + e[1];
                let bc = ((1.0 + e[0]) * g[1]) * ((1.0 + e[1]) * g[2]);
                (a + d) / 2.0 + (((a - d) / 2.0).powi(2) + bc).sqrt()
            }
            _ => {
                let warm = self.warm_start(theta);
                let solver =
                    self.solver.as_mut().expect("a solver exists for more than two states");
                if warm {
                    solver.warm_start(&self.warm);
                }
                let b = solver.root(&self.excess);
                self.vectors.extend_from_slice(solver.vector());
                b
            }
        };
        let value = b.ln_1p() / theta;
        self.memo.insert(theta.to_bits(), self.values.len());
        if s.n > 2 {
            self.ordered.insert(theta.to_bits(), self.values.len());
        }
        self.values.push(value);
        value
    }
}

/// `log(1 - e^z)`, `-inf` where `z >= 0`.
fn log1m_exp(z: f64) -> f64 {
    if z < 0.0 {
        (-z.exp_m1()).ln()
    } else {
        f64::NEG_INFINITY
    }
}

struct Search<'a> {
    plan: &'a Plan,
    rho: Vec<Rho<'a>>,
    pairs_of: Vec<std::ops::Range<usize>>,
}

impl Search<'_> {
    fn sum(&mut self, rows: &Csr, i: usize, theta: f64) -> f64 {
        let mut total = 0.0;
        for &s in rows.row(i) {
            total += self.rho[s].at(theta);
        }
        total
    }

    /// Flow `f`'s latency in steps at `theta` (`inf` where the bound does not exist).
    fn latency(&mut self, f: usize, theta: f64) -> f64 {
        let plan = self.plan;
        let pole = plan.pole[f];
        if theta.is_nan() || pole.is_nan() || theta >= pole {
            return f64::INFINITY;
        }
        let (mut rho_d, mut sigma_d) = (0.0, 0.0);
        for k in self.pairs_of[f].clone() {
            let z = self.sum(&plan.z, k, theta);
            let r = self.sum(&plan.r, k, theta);
            rho_d += z;
            sigma_d += -log1m_exp(theta * (z + (r - plan.pair_c[k]))) / theta;
        }
        let rho_w = self.sum(&plan.w, f, theta);
        let rho_x = self.sum(&plan.x, f, theta);
        let rho_y = self.sum(&plan.y, f, theta);
        let mut r1 = rho_y + -plan.c1[f];
        let r2 = rho_d + -plan.c2[f];
        if r1 == r2 {
            r1 *= 0.99;
        }
        let sigma_s = sigma_d - log1m_exp(-theta * (r1 - r2).abs()) / theta;
        let rho_s = rho_x + r1.max(r2);
        let zeta = theta * (rho_w + rho_s);
        let log_term = (plan.eps[f] * -zeta.exp_m1()).ln();
        let latency = (log_term / theta - sigma_s) / rho_s;
        if zeta < 0.0 && rho_s < 0.0 && latency.is_finite() {
            latency
        } else {
            f64::INFINITY
        }
    }

    fn best_theta(&mut self, f: usize) -> f64 {
        let pole = self.plan.pole[f];
        let mut theta = INITIAL_THETA;
        let mut step = INITIAL_THETA / DECREASE;
        while step >= MIN_THETA {
            let lo = (theta - DECREASE * step).max(MIN_THETA);
            let hi = theta + DECREASE * step;
            let (mut best, mut best_value) = (lo, f64::INFINITY);
            let mut point = lo;
            let mut first = true;
            while point <= hi {
                // Beyond the pole every value is infinite; so is every later point.
                if !first && point >= pole {
                    break;
                }
                let value = self.latency(f, point);
                if value < best_value {
                    best = point;
                    best_value = value;
                }
                point += step;
                first = false;
            }
            theta = best;
            step /= DECREASE;
        }
        theta
    }
}

/// Best `theta` and the latency there (steps) of every flow of `plan`.
pub fn snc_meister_search(plan: &Plan) -> Result<(Vec<f64>, Vec<f64>)> {
    let flows = plan.c1.len();
    let pairs = plan.pair_flow.len();
    if [plan.c2.len(), plan.eps.len(), plan.pole.len()].iter().any(|&l| l != flows)
        || plan.pair_c.len() != pairs
        || plan.pair_flow.iter().any(|&f| f >= flows)
        || plan.pair_flow.windows(2).any(|w| w[0] > w[1])
    {
        return Err(Error::Invalid("flow and pair arrays disagree in length or order".into()));
    }
    let sources = plan.sources.len();
    for (name, rows, csr) in [
        ("w", flows, &plan.w),
        ("x", flows, &plan.x),
        ("y", flows, &plan.y),
        ("z", pairs, &plan.z),
        ("r", pairs, &plan.r),
    ] {
        csr.check(name, rows, sources)?;
    }
    let mut pairs_of = vec![0..0; flows];
    let mut k = 0;
    for (f, range) in pairs_of.iter_mut().enumerate() {
        let start = k;
        while k < pairs && plan.pair_flow[k] == f {
            k += 1;
        }
        *range = start..k;
    }
    let rho = plan.sources.iter().map(Rho::new).collect::<Result<Vec<_>>>()?;
    let mut search = Search { plan, rho, pairs_of };
    let mut thetas = Vec::with_capacity(flows);
    let mut latencies = Vec::with_capacity(flows);
    for f in 0..flows {
        let theta = search.best_theta(f);
        thetas.push(theta);
        latencies.push(search.latency(f, theta));
    }
    Ok((thetas, latencies))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(rows: &[&[usize]]) -> Csr {
        let mut ptr = vec![0];
        let mut idx = vec![];
        for r in rows {
            idx.extend_from_slice(r);
            ptr.push(idx.len());
        }
        Csr { ptr, idx }
    }

    /// One flow alone, a one-state source (Bernoulli `p` of Exp(`mu`) work per step) through two
    /// servers: the bound is the closed form at the searched theta, and the search beats a grid.
    #[test]
    fn single_flow_matches_the_formula() {
        let (p, mu, c1, c2, eps) = (0.3, 1.0, 0.6, 0.8, 1e-3);
        let plan = Plan {
            sources: vec![Source { n: 1, generator: vec![0.0], p: vec![p], mu: vec![mu] }],
            c1: vec![c1],
            c2: vec![c2],
            eps: vec![eps],
            pole: vec![mu],
            w: csr(&[&[0]]),
            x: csr(&[&[]]),
            y: csr(&[&[]]),
            pair_flow: vec![],
            pair_c: vec![],
            z: csr(&[]),
            r: csr(&[]),
        };
        let (theta, latency) = snc_meister_search(&plan).unwrap();
        let formula = |t: f64| {
            let rho_w = (p * t / (mu - t)).ln_1p() / t;
            let (r1, r2) = (-c1, -c2);
            let sigma = -(-(-t * (r1 - r2).abs()).exp_m1()).ln() / t;
            let rho_s = r1.max(r2);
            let log_term = (eps * -(t * (rho_w + rho_s)).exp_m1()).ln();
            (log_term / t - sigma) / rho_s
        };
        assert!((latency[0] - formula(theta[0])).abs() <= 1e-12 * latency[0]);
        for k in 1..1000 {
            let value = formula(k as f64 * 1e-3);
            // unstable thetas give NaN or a negative value: not bounds
            if value.is_finite() && value > 0.0 {
                assert!(latency[0] <= value * (1.0 + 1e-9), "{k}: {} > {value}", latency[0]);
            }
        }
    }

    #[test]
    fn rejects_malformed_rows() {
        let bad = Csr { ptr: vec![0, 2], idx: vec![0] };
        assert!(bad.check("w", 1, 1).is_err());
        assert!(csr(&[&[3]]).check("w", 1, 1).is_err());
    }
}
