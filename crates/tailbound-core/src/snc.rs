//! Perron roots for the MGF bounds of Markov-modulated arrivals (stochastic network calculus).
//!
//! An MMPP's effective rate is `rho(theta) = log sp(diag(MGF(theta)) P) / theta` (thesis §4.2.1,
//! Table 4.1). With per-step transition probabilities of order 1e-5, `diag(MGF) P` is `I + B` with
//! `B = diag(MGF) G + diag(MGF - 1)` tiny, where `G = P - I` is the generator; its spectral radius
//! is `1 + r` with `r` the Perron root (largest real eigenvalue) of the Metzler matrix `B`.
//!
//! [`perron_roots`] computes `r` for many `theta` at once by shifted inverse iteration with
//! Collatz–Wielandt bounds: for a positive vector `w`, `min_i (Bw)_i / w_i <= r <=
//! max_i (Bw)_i / w_i`. The shift stays above the upper bound, so `shift I - B` is a
//! non-singular M-matrix (Gaussian elimination without pivoting is stable on it and its inverse
//! is non-negative). The returned value is the final upper bound: never below `r` (a bound built
//! on it stays an upper bound) and equal to it to rounding when the iteration converges.

use crate::error::{Error, Result};

const MAX_ITERATIONS: usize = 200;
const TOLERANCE: f64 = 1e-15;

/// Perron roots of `B_k = diag(1 + e_k) G + diag(e_k)` for each row `e_k` of `excess`.
///
/// `generator` is `G` row-major (`n × n`, rows summing to 0, non-negative off the diagonal);
/// `excess` holds `MGF_s(theta) - 1` row-major (`count × n`), all finite and `>= 0`.
pub fn perron_roots(generator: &[f64], n: usize, excess: &[f64]) -> Result<Vec<f64>> {
    if n == 0 || generator.len() != n * n {
        return Err(Error::Invalid(format!(
            "generator has {} entries, expected {n} × {n}",
            generator.len()
        )));
    }
    if excess.len() % n != 0 {
        return Err(Error::Invalid(format!(
            "excess has {} entries, not a multiple of {n} states",
            excess.len()
        )));
    }
    let mut b = vec![0.0; n * n];
    let mut work = Workspace::new(n);
    let mut out = Vec::with_capacity(excess.len() / n);
    for e in excess.chunks_exact(n) {
        if e.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(Error::Invalid("excess must be finite and non-negative".into()));
        }
        for i in 0..n {
            for j in 0..n {
                b[i * n + j] = (1.0 + e[i]) * generator[i * n + j];
            }
            b[i * n + i] += e[i];
        }
        out.push(perron_root(&b, n, &mut work));
    }
    Ok(out)
}

/// One MMPP's Perron roots for successive excess rows, reusing the workspace (and its warm-start
/// vector) across calls: what [`perron_roots`] does per row, for callers that interleave sources.
pub struct PerronSolver {
    n: usize,
    generator: Vec<f64>,
    b: Vec<f64>,
    work: Workspace,
}

impl PerronSolver {
    /// A solver for the generator `G` (`n × n`, row-major).
    pub fn new(generator: &[f64], n: usize) -> Result<Self> {
        if n == 0 || generator.len() != n * n {
            return Err(Error::Invalid(format!(
                "generator has {} entries, expected {n} × {n}",
                generator.len()
            )));
        }
        Ok(PerronSolver {
            n,
            generator: generator.to_vec(),
            b: vec![0.0; n * n],
            work: Workspace::new(n),
        })
    }

    /// Perron root of `diag(1 + e) G + diag(e)` (`e` finite, non-negative, length `n`).
    #[allow(clippy::needless_range_loop)] // row-major index arithmetic, as in `perron_roots`
    pub fn root(&mut self, e: &[f64]) -> f64 {
        let n = self.n;
        for i in 0..n {
            for j in 0..n {
                self.b[i * n + j] = (1.0 + e[i]) * self.generator[i * n + j];
            }
            self.b[i * n + i] += e[i];
        }
        perron_root(&self.b, n, &mut self.work)
    }
}

struct Workspace {
    a: Vec<f64>,
    v: Vec<f64>,
    w: Vec<f64>,
}

impl Workspace {
    fn new(n: usize) -> Self {
        Workspace { a: vec![0.0; n * n], v: vec![1.0; n], w: vec![0.0; n] }
    }
}

/// Largest real eigenvalue of one Metzler matrix `b` (`n × n`, row-major).
fn perron_root(b: &[f64], n: usize, ws: &mut Workspace) -> f64 {
    if n == 1 {
        return b[0];
    }
    let scale = b.iter().fold(0.0_f64, |m, x| m.max(x.abs())).max(f64::MIN_POSITIVE);
    let mut hi = (0..n).map(|i| b[i * n..(i + 1) * n].iter().sum::<f64>()).fold(f64::MIN, f64::max);
    // Collatz–Wielandt with the all-ones vector: min row sum <= r <= max row sum.
    let mut lo = (0..n).map(|i| b[i * n..(i + 1) * n].iter().sum::<f64>()).fold(f64::MAX, f64::min);
    // Warm start: the previous matrix's Perron vector (rows come in increasing theta, so it is
    // nearly right) gives Collatz–Wielandt bounds before any iteration.
    if ws.v.iter().all(|x| *x > 0.0 && x.is_finite()) {
        let (warm_hi, warm_lo) = ratio_bounds(b, n, &ws.v);
        hi = hi.min(warm_hi);
        lo = lo.max(warm_lo.min(hi));
    } else {
        ws.v.iter_mut().for_each(|x| *x = 1.0);
    }
    let mut stalled = 0;
    for _ in 0..MAX_ITERATIONS {
        let shift = hi + (1e-3 * (hi - lo)).max(TOLERANCE * scale);
        if !solve_shifted(b, n, shift, ws) {
            // Rounding put the shift at the eigenvalue: step further up and retry.
            hi += TOLERANCE * scale;
            continue;
        }
        let max_w = ws.w.iter().fold(0.0_f64, |m, x| m.max(*x));
        for i in 0..n {
            ws.w[i] = (ws.w[i] / max_w).max(f64::MIN_POSITIVE);
        }
        let (new_hi, new_lo) = ratio_bounds(b, n, &ws.w);
        ws.v.copy_from_slice(&ws.w);
        let improved = hi - new_hi.min(hi);
        hi = new_hi.min(hi);
        lo = lo.max(new_lo.min(hi));
        if hi - lo <= TOLERANCE * scale {
            break;
        }
        // A reducible matrix keeps a low ratio on its other classes: stop when hi stalls.
        stalled = if improved <= TOLERANCE * scale { stalled + 1 } else { 0 };
        if stalled >= 3 {
            break;
        }
    }
    hi
}

/// Collatz–Wielandt bounds `(max_i (Bw)_i / w_i, min_i (Bw)_i / w_i)` for a positive `w`.
///
/// The lower bound only steers the shift and the stopping test. Components that have died out
/// belong to other classes of a reducible chain (their ratio is their own rate, below `r`);
/// ignoring them lets the shift converge to `r` there too. The result is the upper bound either
/// way.
fn ratio_bounds(b: &[f64], n: usize, w: &[f64]) -> (f64, f64) {
    let top = w.iter().fold(0.0_f64, |m, x| m.max(*x));
    let (mut hi, mut lo) = (f64::MIN, f64::MAX);
    for i in 0..n {
        let row = &b[i * n..(i + 1) * n];
        let ratio = row.iter().zip(w).map(|(x, y)| x * y).sum::<f64>() / w[i];
        hi = hi.max(ratio);
        if w[i] >= 1e-9 * top {
            lo = lo.min(ratio);
        }
    }
    (hi, lo)
}

/// Solve `(shift I - b) w = v` into `ws.w` by Gaussian elimination without pivoting; false if a
/// pivot is not positive (the shift is not above the Perron root).
fn solve_shifted(b: &[f64], n: usize, shift: f64, ws: &mut Workspace) -> bool {
    let a = &mut ws.a;
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] = -b[i * n + j];
        }
        a[i * n + i] += shift;
    }
    ws.w.copy_from_slice(&ws.v);
    for k in 0..n {
        let pivot = a[k * n + k];
        if pivot.is_nan() || pivot <= 0.0 {
            return false;
        }
        for i in k + 1..n {
            let factor = a[i * n + k] / pivot;
            if factor != 0.0 {
                for j in k + 1..n {
                    a[i * n + j] -= factor * a[k * n + j];
                }
                ws.w[i] -= factor * ws.w[k];
            }
        }
    }
    for k in (0..n).rev() {
        let mut s = ws.w[k];
        for j in k + 1..n {
            s -= a[k * n + j] * ws.w[j];
        }
        ws.w[k] = s / a[k * n + k];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn two_states_match_the_closed_form() {
        // G = [[-a, a], [b, -b]], e = (e0, e1)
        let (ra, rb) = (1e-3, 4e-3);
        let g = [-ra, ra, rb, -rb];
        let cases: [[f64; 2]; 4] = [[1e-4, 5e-4], [0.0, 0.0], [2e-2, 1e-6], [0.3, 0.3]];
        for e in cases {
            let m00 = (1.0 + e[0]) * -ra + e[0];
            let m11 = (1.0 + e[1]) * -rb + e[1];
            let bc = (1.0 + e[0]) * ra * (1.0 + e[1]) * rb;
            let expect = (m00 + m11) / 2.0 + (((m00 - m11) / 2.0).powi(2) + bc).sqrt();
            let got = perron_roots(&g, 2, &e).unwrap()[0];
            assert!(close(got, expect, 1e-12) || (got - expect).abs() < 1e-18, "{got} {expect}");
            assert!(got >= expect - 1e-18);
        }
    }

    #[test]
    fn diagonal_matrix_gives_largest_entry() {
        let g = [0.0; 9];
        let got = perron_roots(&g, 3, &[0.1, 0.5, 0.2]).unwrap();
        assert!(close(got[0], 0.5, 1e-14));
    }

    #[test]
    fn cyclic_three_states() {
        // a symmetric cycle with equal excess: r = e exactly (G has Perron root 0)
        let q = 1e-4;
        let g = [-q, q, 0.0, 0.0, -q, q, q, 0.0, -q];
        let got = perron_roots(&g, 3, &[0.01, 0.01, 0.01]).unwrap();
        assert!(close(got[0], 0.01, 1e-12), "{}", got[0]);
    }

    #[test]
    fn strongly_coupled_states_converge() {
        // Large mixing and excess (found by a property test: a wrong initial lower bound once
        // stopped the iteration 0.1% above the root).
        let q = 0.05;
        let g = [-2.0 * q, q, q, q, -2.0 * q, q, q, q, -2.0 * q];
        let e = [0.9, 0.1, 0.5];
        let got = perron_roots(&g, 3, &e).unwrap()[0];
        // power iteration on B + I (non-negative) as an independent check
        let mut b = [0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                b[i * 3 + j] = (1.0 + e[i]) * g[i * 3 + j] + if i == j { e[i] + 1.0 } else { 0.0 };
            }
        }
        let mut v = [1.0; 3];
        let mut lambda = 0.0;
        for _ in 0..5000 {
            let w: Vec<f64> = (0..3).map(|i| (0..3).map(|j| b[i * 3 + j] * v[j]).sum()).collect();
            lambda = w.iter().cloned().fold(0.0, f64::max);
            for i in 0..3 {
                v[i] = w[i] / lambda;
            }
        }
        assert!(close(got, lambda - 1.0, 1e-10), "{got} {}", lambda - 1.0);
    }

    #[test]
    fn rejects_bad_shapes_and_values() {
        assert!(perron_roots(&[0.0; 3], 2, &[0.0, 0.0]).is_err());
        assert!(perron_roots(&[0.0; 4], 2, &[0.0, 0.0, 0.0]).is_err());
        assert!(perron_roots(&[0.0; 4], 2, &[f64::INFINITY, 0.0]).is_err());
    }
}
