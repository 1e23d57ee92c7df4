//! One SNC latency expression with dependencies (Hölder parameters), evaluated and searched in
//! the core: the deterministic alternative to the reference implementation's randomised Hölder
//! search (thesis Appendix A.2; `tailbound.snc.latency` replays the reference's).
//!
//! A [`Tree`] is the expression of one flow's latency as `tailbound.snc.bounds` builds it: MMPP
//! sources and constant-rate servers at the leaves, the operators aggregate, leftover, output and
//! convolution inside (each with an optional Hölder parameter `x`, `y = 1 / (1 - 1/x)`: its
//! first operand is evaluated at `x theta`, its second at `y theta`), and the latency of
//! Theorem 1 at the root. A parameter may be shared by several operator occurrences (a node
//! reached twice). [`Tree::latency`] evaluates it at one `theta` and one parameter vector with
//! the formulas of `tailbound.snc.bounds` (same operations, so the same floats up to the order
//! of the leaves' memoised `rho`).
//!
//! [`Tree::search`] minimises the latency over `theta` and the parameters jointly, without
//! randomness: `theta = pole(x) · s(a)` and `1/x_j = s(v_j)` with `s` the logistic function, so
//! every point is a valid bound below the expression's pole. Start: every `x = 2` (the reference's
//! start) with the best `theta` of a log-spaced scan. Then twice: a scan of each parameter's `v_j`
//! (coarse and fine: the minimum over one parameter can have two basins 0.1 apart; `a` moved a
//! little with each point), then Nelder–Mead on `(a, v)` (stopping at 1e-9 relative) restarted
//! with fresh simplices (a kink of the expression, `max(r1, r2)` of a convolution, makes ridges
//! one run stalls on) until a restart gains less than 1e-9 relative; the second scan is finer,
//! around the first result. (Until 2026-11-24 Nelder–Mead ran to 1e-12 and the restarts until
//! two in a row gained less than 1e-10: 1.3–1.4× the evaluations for the same bounds to 1e-9.)
//! Any `theta > 0` and Hölder pair give a valid bound, so the minimum found is a bound
//! whatever the search; `tests/snc/test_tree.py` and `tests/test_reference_numbers.py` check that
//! it is, per flow, never looser than the reference search's on their networks (no proof: the
//! function is not convex in the parameters).

use crate::error::{Error, Result};
use crate::snc_fast::{log1m_exp, Rho, Source};

/// An operator of the SNC algebra (thesis Theorems 2–5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `A1 ⊕ A2` (Theorem 4).
    Aggregate,
    /// `S ⊖ A`, operands `(A, S)` (Theorem 2).
    Leftover,
    /// `A ⊘ S`, operands `(A, S)` (Theorem 3).
    Output,
    /// `S1 ⊗ S2` (Theorem 5).
    Convolution,
}

impl Kind {
    /// The kind from its code: 0 aggregate, 1 leftover, 2 output, 3 convolution.
    pub fn from_code(code: u8) -> Result<Kind> {
        Ok(match code {
            0 => Kind::Aggregate,
            1 => Kind::Leftover,
            2 => Kind::Output,
            3 => Kind::Convolution,
            _ => return Err(Error::Invalid(format!("unknown operator code {code}"))),
        })
    }
}

#[derive(Clone, Debug)]
enum Node {
    Leaf(usize),
    /// A constant-rate server: work per step.
    Constant(f64),
    Op {
        kind: Kind,
        first: usize,
        second: usize,
        param: Option<usize>,
    },
}

/// One flow's latency expression (see the module documentation).
#[derive(Default)]
pub struct Tree {
    sources: Vec<Source>,
    /// Smallest `mu` of each source: its pole.
    poles: Vec<f64>,
    nodes: Vec<Node>,
    params: usize,
    root: Option<(usize, usize, Option<usize>, f64)>,
}

/// The result of [`Tree::search`].
#[derive(Clone, Debug)]
pub struct Found {
    /// The latency bound in steps (`inf` when no point gives a finite bound).
    pub latency_steps: f64,
    pub theta: f64,
    /// The Hölder parameter `x` of every parameter.
    pub x: Vec<f64>,
    /// Latency evaluations spent.
    pub evaluations: usize,
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// `y` of a Hölder pair from `x`, as `tailbound.snc.bounds.Bound.set_x` computes it.
fn conjugate(x: f64) -> f64 {
    1.0 / (1.0 - 1.0 / x)
}

/// Range of the logistic coordinates of the parameters: `1/x` in `[s(-V), s(V)]`, i.e. `x` from
/// 1.0001 to about 8100 (the reference's ranges reach 1.001 and 1000).
const V_LIMIT: f64 = 9.0;

impl Tree {
    pub fn new() -> Tree {
        Tree::default()
    }

    /// Add an MMPP source (generator `G = P - I`, row-major `n × n`; `p`; `mu`); its index.
    pub fn add_source(&mut self, generator: Vec<f64>, p: Vec<f64>, mu: Vec<f64>) -> Result<usize> {
        let n = p.len();
        if n == 0 || generator.len() != n * n || mu.len() != n {
            return Err(Error::Invalid(format!("source with {n} states has inconsistent arrays")));
        }
        self.poles.push(mu.iter().copied().fold(f64::INFINITY, f64::min));
        self.sources.push(Source { n, generator, p, mu });
        Ok(self.sources.len() - 1)
    }

    fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// A leaf reading source `source`; its node index.
    pub fn add_leaf(&mut self, source: usize) -> Result<usize> {
        if source >= self.sources.len() {
            return Err(Error::Invalid(format!("unknown source {source}")));
        }
        Ok(self.push(Node::Leaf(source)))
    }

    /// A constant-rate server of `rate_per_step` work per step; its node index.
    pub fn add_constant(&mut self, rate_per_step: f64) -> Result<usize> {
        if !(rate_per_step > 0.0 && rate_per_step.is_finite()) {
            return Err(Error::Invalid(format!(
                "a server's rate must be positive: {rate_per_step}"
            )));
        }
        Ok(self.push(Node::Constant(rate_per_step)))
    }

    fn check_param(&mut self, param: Option<usize>) {
        if let Some(p) = param {
            self.params = self.params.max(p + 1);
        }
    }

    /// An operator on two earlier nodes with an optional Hölder parameter; its node index.
    pub fn add_op(
        &mut self,
        kind: Kind,
        first: usize,
        second: usize,
        param: Option<usize>,
    ) -> Result<usize> {
        let n = self.nodes.len();
        if first >= n || second >= n {
            return Err(Error::Invalid(format!("operands {first}, {second} of {n} nodes")));
        }
        self.check_param(param);
        Ok(self.push(Node::Op { kind, first, second, param }))
    }

    /// The latency of `arrival` through `service` at violation probability `eps` (Theorem 1).
    pub fn set_root(
        &mut self,
        arrival: usize,
        service: usize,
        param: Option<usize>,
        eps: f64,
    ) -> Result<()> {
        let n = self.nodes.len();
        if arrival >= n || service >= n {
            return Err(Error::Invalid(format!("root operands {arrival}, {service} of {n} nodes")));
        }
        if !(eps > 0.0 && eps < 1.0) {
            return Err(Error::Invalid(format!("violation probability {eps} not in (0, 1)")));
        }
        self.check_param(param);
        self.root = Some((arrival, service, param, eps));
        Ok(())
    }

    /// Number of Hölder parameters.
    pub fn params(&self) -> usize {
        self.params
    }

    fn pair(x: &[f64], param: Option<usize>) -> (f64, f64) {
        match param {
            Some(p) => (x[p], conjugate(x[p])),
            None => (1.0, 1.0),
        }
    }

    fn pole_of(&self, node: usize, x: &[f64]) -> f64 {
        match &self.nodes[node] {
            Node::Leaf(s) => self.poles[*s],
            Node::Constant(_) => f64::INFINITY,
            Node::Op { first, second, param, .. } => {
                let (a, b) = Self::pair(x, *param);
                (self.pole_of(*first, x) / a).min(self.pole_of(*second, x) / b)
            }
        }
    }

    fn root(&self) -> Result<(usize, usize, Option<usize>, f64)> {
        self.root.ok_or_else(|| Error::Invalid("the tree has no root (set_root)".into()))
    }

    /// The `theta` at and beyond which the latency is infinite, for parameters `x`.
    pub fn pole(&self, x: &[f64]) -> Result<f64> {
        let (arrival, service, param, _) = self.root()?;
        let (a, b) = Self::pair(x, param);
        Ok((self.pole_of(arrival, x) / a).min(self.pole_of(service, x) / b))
    }

    fn eval(&self, node: usize, theta: f64, x: &[f64], rho: &mut [Rho]) -> (f64, f64) {
        match &self.nodes[node] {
            Node::Leaf(s) => {
                if theta >= self.poles[*s] {
                    (f64::INFINITY, 0.0)
                } else {
                    (rho[*s].at(theta), 0.0)
                }
            }
            Node::Constant(c) => (-c, 0.0),
            Node::Op { kind, first, second, param } => {
                let (a, b) = Self::pair(x, *param);
                let (r1, s1) = self.eval(*first, a * theta, x, rho);
                let (r2, s2) = self.eval(*second, b * theta, x, rho);
                match kind {
                    Kind::Aggregate | Kind::Leftover => (r1 + r2, s1 + s2),
                    Kind::Output => (r1, s1 + s2 - log1m_exp(theta * (r1 + r2)) / theta),
                    Kind::Convolution => {
                        let r1 = if r1 == r2 { 0.99 * r1 } else { r1 };
                        let rho = if r1.is_nan() || r2.is_nan() { f64::NAN } else { r1.max(r2) };
                        (rho, s1 + s2 - log1m_exp(-theta * (r1 - r2).abs()) / theta)
                    }
                }
            }
        }
    }

    fn latency_with(&self, theta: f64, x: &[f64], rho: &mut [Rho]) -> Result<f64> {
        let (arrival, service, param, eps) = self.root()?;
        if x.len() != self.params {
            return Err(Error::Invalid(format!("{} parameters for {}", x.len(), self.params)));
        }
        if theta.is_nan() || theta <= 0.0 {
            return Ok(f64::INFINITY);
        }
        let (a, b) = Self::pair(x, param);
        let (ra, sa) = self.eval(arrival, a * theta, x, rho);
        let (rs, ss) = self.eval(service, b * theta, x, rho);
        let z = theta * (ra + rs);
        let latency = ((eps * -z.exp_m1()).ln() / theta - (sa + ss)) / rs;
        Ok(if z < 0.0 && rs < 0.0 && latency.is_finite() { latency } else { f64::INFINITY })
    }

    fn rhos(&self) -> Result<Vec<Rho<'_>>> {
        self.sources.iter().map(Rho::new).collect()
    }

    /// The latency (steps) at `theta` with Hölder parameters `x` (`inf` where it does not exist).
    pub fn latency(&self, theta: f64, x: &[f64]) -> Result<f64> {
        let mut rho = self.rhos()?;
        self.latency_with(theta, x, &mut rho)
    }

    /// Latencies (steps) at many points: `thetas[i]` with parameters `xs[i * k..(i + 1) * k]`.
    pub fn latencies(&self, thetas: &[f64], xs: &[f64]) -> Result<Vec<f64>> {
        let k = self.params;
        if xs.len() != thetas.len() * k {
            return Err(Error::Invalid(format!(
                "{} parameters for {} points",
                xs.len(),
                thetas.len()
            )));
        }
        let mut rho = self.rhos()?;
        thetas
            .iter()
            .enumerate()
            .map(|(i, t)| self.latency_with(*t, &xs[i * k..(i + 1) * k], &mut rho))
            .collect()
    }

    /// The deterministic joint search of `theta` and the Hölder parameters (module docs).
    pub fn search(&self) -> Result<Found> {
        self.root()?;
        let mut rho = self.rhos()?;
        let k = self.params;
        let evaluations = std::cell::Cell::new(0usize);
        let mut x = vec![2.0; k];
        let mut f = |z: &[f64], rho: &mut [Rho]| -> Result<f64> {
            evaluations.set(evaluations.get() + 1);
            for (xj, v) in x.iter_mut().zip(&z[1..]) {
                *xj = 1.0 / sigmoid(v.clamp(-V_LIMIT, V_LIMIT));
            }
            let theta = self.pole(&x)?.min(1e300) * sigmoid(z[0]);
            self.latency_with(theta, &x, rho)
        };
        // Start: x = 2 everywhere, theta from a log-spaced scan below the pole.
        let mut best = vec![0.0; k + 1];
        let mut best_f = f64::INFINITY;
        let mut z = vec![0.0; k + 1];
        for i in 1..=56i32 {
            let ratio: f64 =
                if i <= 48 { 10f64.powf(-f64::from(i) / 4.0) } else { 1.0 - 10f64.powi(-(i - 47)) };
            z[0] = (ratio / (1.0 - ratio)).ln();
            let v = f(&z, &mut rho)?;
            if v < best_f {
                best_f = v;
                best.copy_from_slice(&z);
            }
        }
        if !best_f.is_finite() {
            let x = vec![2.0; k];
            let evaluations = evaluations.get();
            return Ok(Found { latency_steps: f64::INFINITY, theta: f64::NAN, x, evaluations });
        }
        // Twice: a scan of each parameter's coordinate (coarse, then fine: the minimum over a
        // parameter can have several basins 0.1 apart), theta's coordinate moved with each
        // point; then Nelder–Mead from the best point, restarted with fresh simplices of two
        // sizes (a kink of the expression — max(r1, r2) of a convolution — makes ridges a single
        // run stalls on) until a restart gains less than 1e-9 relative. The second scan is finer,
        // around the first result.
        const COARSE: [f64; 11] = [-7.0, -5.0, -3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 3.0, 5.0];
        const SHIFTS: [f64; 5] = [-0.2, -0.1, 0.0, 0.1, 0.2];
        const STEPS: [f64; 2] = [1.0, 0.1];
        for pass in 0..2 {
            let (half, spacing) = if pass == 0 { (25, 0.04) } else { (15, 0.02) };
            for j in 1..=k {
                let mut z = best.clone();
                let (v0, a0) = (best[j], best[0]);
                let fine = (-half..=half).map(|i| f64::from(i) * spacing);
                let offsets: Vec<f64> = if pass == 0 {
                    COARSE.iter().copied().chain(fine).collect()
                } else {
                    fine.collect()
                };
                for v in offsets {
                    for shift in SHIFTS {
                        z[j] = v0 + v;
                        z[0] = a0 + shift;
                        let value = f(&z, &mut rho)?;
                        if value < best_f {
                            best_f = value;
                            best.copy_from_slice(&z);
                        }
                    }
                }
            }
            for run in 0..40 {
                let before = best_f;
                let step = STEPS[run % STEPS.len()];
                let (point, value) =
                    nelder_mead(&mut f, &mut rho, &best, best_f, step, 200 * (k + 1))?;
                if value < best_f {
                    best_f = value;
                    best = point;
                }
                if before - best_f <= 1e-9 * best_f.abs() {
                    break;
                }
            }
        }
        let x: Vec<f64> =
            best[1..].iter().map(|v| 1.0 / sigmoid(v.clamp(-V_LIMIT, V_LIMIT))).collect();
        let theta = self.pole(&x)?.min(1e300) * sigmoid(best[0]);
        Ok(Found { latency_steps: best_f, theta, x, evaluations: evaluations.get() })
    }
}

type Objective<'f, 'r> = dyn FnMut(&[f64], &mut [Rho<'r>]) -> Result<f64> + 'f;

/// Nelder–Mead (reflection 1, expansion 2, contraction 1/2, shrink 1/2) from `start` with an
/// axis-aligned initial simplex of edge `step`; stops when the simplex' values agree to 1e-9
/// relative and its edges are below 1e-6, or after `max_evals`.
fn nelder_mead<'r>(
    f: &mut Objective<'_, 'r>,
    rho: &mut [Rho<'r>],
    start: &[f64],
    start_value: f64,
    step: f64,
    max_evals: usize,
) -> Result<(Vec<f64>, f64)> {
    let d = start.len();
    let mut pts: Vec<Vec<f64>> = vec![start.to_vec()];
    let mut vals = vec![start_value];
    for i in 0..d {
        let mut p = start.to_vec();
        p[i] += step;
        vals.push(f(&p, rho)?);
        pts.push(p);
    }
    let mut evals = d;
    let lerp = |a: &[f64], b: &[f64], t: f64| -> Vec<f64> {
        a.iter().zip(b).map(|(x, y)| x + t * (y - x)).collect()
    };
    while evals < max_evals {
        let mut order: Vec<usize> = (0..=d).collect();
        order.sort_by(|a, b| vals[*a].total_cmp(&vals[*b]));
        pts = order.iter().map(|i| pts[*i].clone()).collect();
        vals = order.iter().map(|i| vals[*i]).collect();
        let (lo, hi) = (vals[0], vals[d]);
        let size = pts[1..]
            .iter()
            .flat_map(|p| p.iter().zip(&pts[0]).map(|(a, b)| (a - b).abs()))
            .fold(0.0, f64::max);
        if (hi - lo).abs() <= 1e-9 * lo.abs() && size < 1e-6 || size < 1e-12 {
            break;
        }
        let mut centroid = vec![0.0; d];
        for p in &pts[..d] {
            for (c, v) in centroid.iter_mut().zip(p) {
                *c += v / d as f64;
            }
        }
        let reflected = lerp(&centroid, &pts[d], -1.0);
        let fr = f(&reflected, rho)?;
        evals += 1;
        if fr < vals[0] {
            let expanded = lerp(&centroid, &pts[d], -2.0);
            let fe = f(&expanded, rho)?;
            evals += 1;
            if fe < fr {
                pts[d] = expanded;
                vals[d] = fe;
            } else {
                pts[d] = reflected;
                vals[d] = fr;
            }
        } else if fr < vals[d - 1] {
            pts[d] = reflected;
            vals[d] = fr;
        } else {
            let (target, ft) =
                if fr < vals[d] { (reflected, fr) } else { (pts[d].clone(), vals[d]) };
            let contracted = lerp(&centroid, &target, 0.5);
            let fc = f(&contracted, rho)?;
            evals += 1;
            if fc < ft {
                pts[d] = contracted;
                vals[d] = fc;
            } else {
                for i in 1..=d {
                    pts[i] = lerp(&pts[0], &pts[i], 0.5);
                    vals[i] = f(&pts[i], rho)?;
                    evals += 1;
                }
            }
        }
    }
    let best = (0..=d).min_by(|a, b| vals[*a].total_cmp(&vals[*b])).unwrap_or(0);
    Ok((pts[best].clone(), vals[best]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        // Two states: 1e-4 per step to switch; requests 0.01 / 0.05 per step of work 1 / 0.5.
        (vec![-1e-4, 1e-4, 2e-4, -2e-4], vec![0.01, 0.05], vec![1.0, 2.0])
    }

    /// `W` and `D` (mutually dependent) through a server of rate 0.2 per step.
    fn dependent_tree() -> Tree {
        let mut t = Tree::new();
        let (g, p, mu) = source();
        let s0 = t.add_source(g.clone(), p.clone(), mu.clone()).unwrap();
        let s1 = t.add_source(g, vec![0.02, 0.03], mu).unwrap();
        let w = t.add_leaf(s0).unwrap();
        let d = t.add_leaf(s1).unwrap();
        let c = t.add_constant(0.2).unwrap();
        let left = t.add_op(Kind::Leftover, d, c, None).unwrap();
        // The latency of W through the leftover of D: dependent (one parameter).
        t.set_root(w, left, Some(0), 1e-3).unwrap();
        t
    }

    #[test]
    fn independent_root_matches_theorem_one() {
        let mut t = Tree::new();
        let (g, p, mu) = source();
        let s = t.add_source(g, p, mu).unwrap();
        let a = t.add_leaf(s).unwrap();
        let c = t.add_constant(0.5).unwrap();
        t.set_root(a, c, None, 1e-3).unwrap();
        let theta = 0.3;
        let mut rho = t.rhos().unwrap();
        let ra = rho[0].at(theta);
        let z = theta * (ra - 0.5);
        let want = ((1e-3 * -z.exp_m1()).ln() / theta) / -0.5;
        assert!((t.latency(theta, &[]).unwrap() - want).abs() <= 1e-12 * want.abs());
        // Beyond the pole (mu = 1) the bound does not exist.
        assert!(t.latency(1.0, &[]).unwrap().is_infinite());
    }

    #[test]
    fn search_is_no_worse_than_a_dense_grid() {
        let t = dependent_tree();
        let found = t.search().unwrap();
        assert!(found.latency_steps.is_finite());
        let got = t.latency(found.theta, &found.x).unwrap();
        assert!((got - found.latency_steps).abs() <= 1e-9 * got);
        let mut grid_best = f64::INFINITY;
        for i in 1..200 {
            let x = 1.0 + 0.02 * i as f64;
            let pole = t.pole(&[x]).unwrap();
            for j in 1..400 {
                let theta = pole * j as f64 / 400.0;
                grid_best = grid_best.min(t.latency(theta, &[x]).unwrap());
            }
        }
        assert!(found.latency_steps <= grid_best * (1.0 + 1e-9), "{found:?} vs {grid_best}");
    }

    #[test]
    fn rejects_malformed_trees() {
        let mut t = Tree::new();
        assert!(t.add_leaf(0).is_err());
        assert!(t.add_constant(0.0).is_err());
        assert!(t.add_source(vec![0.0; 3], vec![0.1], vec![1.0]).is_err());
        assert!(t.search().is_err());
        let c = t.add_constant(1.0).unwrap();
        assert!(t.add_op(Kind::Aggregate, c, 7, None).is_err());
        assert!(t.set_root(c, c, None, 1.5).is_err());
        assert!(Kind::from_code(9).is_err());
    }
}
