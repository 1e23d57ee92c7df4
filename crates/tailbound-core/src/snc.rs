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
/// Keep a factorisation while each solve shrinks the Collatz–Wielandt gap at least this much.
const REFACTOR_GAIN: f64 = 1e3;

/// Perron roots of `B_k = diag(1 + e_k) G + diag(e_k)` for each row `e_k` of `excess`.
///
/// `generator` is `G` row-major (`n × n`, rows summing to 0, non-negative off the diagonal);
/// `excess` holds `MGF_s(theta) - 1` row-major (`count × n`), all finite and `>= 0`.
pub fn perron_roots(generator: &[f64], n: usize, excess: &[f64]) -> Result<Vec<f64>> {
    let mut solver = PerronSolver::new(generator, n)?;
    if excess.len() % n != 0 {
        return Err(Error::Invalid(format!(
            "excess has {} entries, not a multiple of {n} states",
            excess.len()
        )));
    }
    let mut out = Vec::with_capacity(excess.len() / n);
    for e in excess.chunks_exact(n) {
        if e.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(Error::Invalid("excess must be finite and non-negative".into()));
        }
        out.push(solver.root(e));
    }
    Ok(out)
}

/// One MMPP's Perron roots for successive excess rows, reusing its workspace and its warm-start
/// vector across calls (what [`perron_roots`] does per row, for callers that interleave sources).
///
/// Each root is one shifted inverse iteration: the shift comes from the Collatz–Wielandt bounds
/// of the warm-start vector (the previous root's Perron vector, or one the caller supplies with
/// [`PerronSolver::warm_start`]); one factorisation of `shift I - B` is reused while every solve
/// shrinks the bounds' gap by at least [`REFACTOR_GAIN`] (the error shrinks by
/// `(shift - r) / (shift - lambda_2)` per solve, tiny once the shift is close to `r`), and a new
/// shift is taken otherwise. The solves give the Collatz–Wielandt ratios of the new vector
/// without a matrix product (`(shift I - B) w = v` means `(Bw)_i / w_i = shift - v_i / w_i`);
/// the value returned is the final vector's upper bound computed with the matrix. With a warm
/// start from a nearby `theta` (interpolated by the caller from its neighbours' vectors), one
/// factorisation and one or two solves are typical. `B` itself is never formed: its rows are
/// `(1 + e_i)` times `G`'s with the diagonal `B_ii` replaced.
pub struct PerronSolver {
    n: usize,
    /// `G`, row-major.
    generator: Vec<f64>,
    /// Largest off-diagonal entry of each row of `G` (for the tolerance's scale, `max |B_ij|`).
    off_max: Vec<f64>,
    /// Row sums of `G` (zero up to rounding): `B`'s row sums are `(1 + e_i) G_i1 + e_i`.
    row_sum: Vec<f64>,
    /// The current root's `1 + e_i` and `B_ii = (1 + e_i) G_ii + e_i`.
    row_scale: Vec<f64>,
    diag: Vec<f64>,
    /// LU factors of `shift I - B` (row-major, the unit lower triangle's multipliers below the
    /// diagonal) and the reciprocals of `U`'s diagonal.
    a: Vec<f64>,
    d: Vec<f64>,
    /// The current vector `v` and the solve's result `w`.
    v: Vec<f64>,
    w: Vec<f64>,
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
        let off_max = generator
            .chunks_exact(n)
            .enumerate()
            .map(|(i, row)| {
                let others = row.iter().enumerate().filter(|(j, _)| *j != i);
                others.fold(0.0_f64, |m, (_, x)| m.max(x.abs()))
            })
            .collect();
        Ok(PerronSolver {
            n,
            generator: generator.to_vec(),
            off_max,
            row_sum: generator.chunks_exact(n).map(|row| row.iter().sum()).collect(),
            row_scale: vec![0.0; n],
            diag: vec![0.0; n],
            a: vec![0.0; n * n],
            d: vec![0.0; n],
            v: vec![1.0; n],
            w: vec![0.0; n],
        })
    }

    /// Use `v` (positive, length `n`: a Perron vector of a nearby `theta`) as the next root's
    /// starting vector; ignored if it has the wrong length or a non-positive entry.
    pub fn warm_start(&mut self, v: &[f64]) {
        if v.len() == self.n && v.iter().all(|x| *x > 0.0 && x.is_finite()) {
            self.v.copy_from_slice(v);
        }
    }

    /// The last root's Perron vector (largest entry 1).
    pub fn vector(&self) -> &[f64] {
        &self.v
    }

    /// Perron root of `diag(1 + e) G + diag(e)` (`e` finite, non-negative, length `n`).
    ///
    /// Dispatches on `n` so that the common sizes (the reference MMPP fit has at most 10 states)
    /// run the same code with `n` a compile-time constant.
    pub fn root(&mut self, e: &[f64]) -> f64 {
        match self.n {
            1 => e[0] + (1.0 + e[0]) * self.generator[0],
            3 => self.root_n(e, 3),
            4 => self.root_n(e, 4),
            5 => self.root_n(e, 5),
            6 => self.root_n(e, 6),
            7 => self.root_n(e, 7),
            8 => self.root_n(e, 8),
            9 => self.root_n(e, 9),
            10 => self.root_n(e, 10),
            n => self.root_n(e, n),
        }
    }

    #[inline(always)]
    fn root_n(&mut self, e: &[f64], n: usize) -> f64 {
        let mut scale = f64::MIN_POSITIVE;
        for (i, ei) in e[..n].iter().enumerate() {
            let s = 1.0 + ei;
            self.row_scale[i] = s;
            self.diag[i] = s * self.generator[i * n + i] + ei;
            scale = scale.max(self.diag[i].abs()).max(s * self.off_max[i]);
        }
        let tol = TOLERANCE * scale;
        // Collatz–Wielandt with the all-ones vector (B's row sums: min <= r <= max), then with
        // the starting vector: a poor start must not give a poor shift.
        let (mut hi, mut lo) = (f64::MIN, f64::MAX);
        for ((s, g), ei) in self.row_scale[..n].iter().zip(&self.row_sum).zip(e) {
            let sum = s * g + ei;
            hi = hi.max(sum);
            lo = lo.min(sum);
        }
        let v = &mut self.v[..n];
        // A warm start concentrated on other states (the previous root's class, or states whose
        // excess was the largest) can leave the iteration so slow on this root's states that it
        // stalls at a loose upper bound (the stall rule below is meant for reducible chains): if
        // it stalls from a warm start, it restarts once from the all-ones vector.
        let mut may_restart = false;
        if v.iter().all(|x| *x > 0.0 && x.is_finite()) {
            may_restart = true;
            let (warm_hi, warm_lo) = self.ratio_bounds(n);
            hi = hi.min(warm_hi);
            lo = lo.max(warm_lo.min(hi));
        } else {
            v.iter_mut().for_each(|x| *x = 1.0);
        }
        let mut stalled = 0;
        let mut refactor = true;
        let mut shift = hi;
        for _ in 0..MAX_ITERATIONS {
            if refactor {
                shift = hi + (1e-3 * (hi - lo)).max(tol);
                if !self.factor_shifted(n, shift) {
                    // Rounding put the shift at the eigenvalue: step further up and retry.
                    hi += tol;
                    continue;
                }
            }
            self.solve_factored(n);
            let (v, w) = (&mut self.v[..n], &self.w[..n]);
            let top = w.iter().fold(0.0_f64, |m, x| if *x > m { *x } else { m });
            if !(top > 0.0 && top.is_finite()) {
                // The factorisation has gone bad (a shift too close to `r` for rounding).
                refactor = true;
                hi += tol;
                continue;
            }
            // The Collatz–Wielandt ratios of `w` from the solve (see `ratio_bounds` for the
            // lower bound's rule).
            let (mut min_q, mut max_q) = (f64::MAX, f64::MIN);
            for (vi, wi) in v.iter().zip(w) {
                let q = vi / wi;
                min_q = if q < min_q { q } else { min_q };
                if *wi >= 1e-9 * top && q > max_q {
                    max_q = q;
                }
            }
            let (new_hi, new_lo) = (shift - min_q, shift - max_q);
            for (vi, wi) in v.iter_mut().zip(w) {
                *vi = (wi / top).max(f64::MIN_POSITIVE);
            }
            let gap = hi - lo;
            let improved = hi - new_hi.min(hi);
            hi = new_hi.min(hi);
            lo = lo.max(new_lo.min(hi));
            if hi - lo <= tol {
                break;
            }
            // A reducible matrix keeps a low ratio on its other classes: stop when hi stalls.
            stalled = if improved <= tol { stalled + 1 } else { 0 };
            if stalled >= 3 && may_restart {
                may_restart = false;
                stalled = 0;
                refactor = true;
                self.v[..n].iter_mut().for_each(|x| *x = 1.0);
                continue;
            }
            if stalled >= 3 {
                break;
            }
            refactor = hi - lo > gap / REFACTOR_GAIN;
        }
        // The final vector's bound computed with the matrix; if the iteration ran out before
        // converging, the running bound (from the solves) where it is lower.
        let exact = self.ratio_bounds(n).0;
        if hi - lo <= tol {
            exact
        } else {
            exact.min(hi)
        }
    }

    /// Collatz–Wielandt bounds `(max_i (Bv)_i / v_i, min_i (Bv)_i / v_i)` of the current `v`.
    ///
    /// The lower bound only steers the shift and the stopping test. Components that have died
    /// out belong to other classes of a reducible chain (their ratio is their own rate, below
    /// `r`); ignoring them lets the shift converge to `r` there too. The result is the upper
    /// bound either way.
    #[inline(always)]
    fn ratio_bounds(&self, n: usize) -> (f64, f64) {
        let (g, v) = (&self.generator[..n * n], &self.v[..n]);
        let top = v.iter().fold(0.0_f64, |m, x| if *x > m { *x } else { m });
        let (mut hi, mut lo) = (f64::MIN, f64::MAX);
        for (i, ((row, vi), s)) in g.chunks_exact(n).zip(v).zip(&self.row_scale).enumerate() {
            // (Bv)_i = (1 + e_i) sum_{j != i} G_ij v_j + B_ii v_i
            let off = row.iter().zip(v).map(|(x, y)| x * y).sum::<f64>() - row[i] * vi;
            let ratio = (s * off + self.diag[i] * vi) / vi;
            hi = if ratio > hi { ratio } else { hi };
            if *vi >= 1e-9 * top && ratio < lo {
                lo = ratio;
            }
        }
        (hi, lo)
    }

    /// LU factors of `shift I - B` into `a` and `d` by Gaussian elimination without pivoting;
    /// false if a pivot is not positive (the shift is not above the Perron root).
    #[inline(always)]
    fn factor_shifted(&mut self, n: usize, shift: f64) -> bool {
        let (a, g) = (&mut self.a[..n * n], &self.generator[..n * n]);
        for (i, (arow, grow)) in a.chunks_exact_mut(n).zip(g.chunks_exact(n)).enumerate() {
            let s = self.row_scale[i];
            for (x, y) in arow.iter_mut().zip(grow) {
                *x = -s * y;
            }
            arow[i] = shift - self.diag[i];
        }
        for k in 0..n {
            let (top, rest) = a.split_at_mut((k + 1) * n);
            let pivot_row = &top[k * n..];
            let pivot = pivot_row[k];
            if pivot.is_nan() || pivot <= 0.0 {
                return false;
            }
            let inv = 1.0 / pivot;
            self.d[k] = inv;
            for row in rest.chunks_exact_mut(n) {
                // Zeros are common (a fitted chain only has the transitions it saw): skip them.
                if row[k] != 0.0 {
                    let factor = row[k] * inv;
                    row[k] = factor;
                    for (x, y) in row[k + 1..].iter_mut().zip(&pivot_row[k + 1..]) {
                        *x -= factor * y;
                    }
                }
            }
        }
        true
    }

    /// `w = (shift I - B)^-1 v` from the factors of [`Self::factor_shifted`].
    #[inline(always)]
    fn solve_factored(&mut self, n: usize) {
        let (a, d, w) = (&self.a[..n * n], &self.d[..n], &mut self.w[..n]);
        w.copy_from_slice(&self.v[..n]);
        for i in 1..n {
            let row = &a[i * n..i * n + i];
            let s = row.iter().zip(&w[..i]).map(|(x, y)| x * y).sum::<f64>();
            w[i] -= s;
        }
        for k in (0..n).rev() {
            let row = &a[k * n..(k + 1) * n];
            let s = row[k + 1..].iter().zip(&w[k + 1..]).map(|(x, y)| x * y).sum::<f64>();
            w[k] = (w[k] - s) * d[k];
        }
    }
}

/// Pseudo-random test inputs shared by this module's tests and `snc_fast`'s.
#[cfg(test)]
pub(crate) mod testing {
    /// A fixed linear congruential sequence of uniform numbers in `[0, 1)`.
    pub(crate) struct Lcg(pub(crate) u64);

    impl Lcg {
        pub(crate) fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A generator of `n` states: each off-diagonal transition present when its draw exceeds
    /// `keep_above`, with rate `scale` times the draw; rows sum to zero.
    pub(crate) fn sample_generator(
        rng: &mut Lcg,
        n: usize,
        keep_above: f64,
        scale: f64,
    ) -> Vec<f64> {
        let mut g = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let u = rng.next();
                if i != j && u > keep_above {
                    g[i * n + j] = scale * u;
                }
            }
            g[i * n + i] = -(0..n).filter(|&j| j != i).map(|j| g[i * n + j]).sum::<f64>();
        }
        g
    }
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
    fn a_warm_start_on_another_class_does_not_stop_above_the_root() {
        // States 0 and 1 coupled, state 2 isolated (a reducible chain); the roots move between
        // the classes, so each warm start has the other class's components dead. The last
        // root is on {0, 1} with close diagonals (found by the numpy property test, seed
        // 9703761: it stopped 1.7e-7 above the root, at the row-sum bound).
        let (a, b) = (8.556_189_392_140_998e-8, 8.451_629_298_456_636e-8);
        let g = [-a, a, 0.0, b, -b, 0.0, 0.0, 0.0, 0.0];
        #[rustfmt::skip]
        let e = [
            0.984_553_001_473_370_9, 0.146_112_633_308_985_83, 0.884_509_825_209_673_1,
            0.794_198_824_461_599, 0.102_904_786_518_082_21, 0.815_579_310_202_778_9,
            0.336_334_060_171_501_6, 0.359_605_622_027_603_16, 0.439_444_010_090_524_25,
            0.978_348_962_895_267_6, 0.962_349_230_231_990_1, 0.199_489_852_116_979_45,
        ];
        let got = perron_roots(&g, 3, &e).unwrap();
        let (e0, e1) = (e[9], e[10]);
        let m00 = (1.0 + e0) * -a + e0;
        let m11 = (1.0 + e1) * -b + e1;
        let bc = (1.0 + e0) * a * (1.0 + e1) * b;
        let expect = (m00 + m11) / 2.0 + (((m00 - m11) / 2.0).powi(2) + bc).sqrt();
        assert!(got[3] >= expect - 1e-15 && got[3] - expect < 1e-14, "{} {expect}", got[3]);
    }

    #[test]
    fn a_slow_warm_start_does_not_stop_above_the_root() {
        // Irreducible, weakly coupled (found by the numpy property test, seed 1879175): the
        // previous root's vector lies on states 0 and 2, this root's on states 1 and 3 with
        // diagonals 7.6e-4 apart; from the warm start the iteration stalled at the row-sum
        // bound, 1.2e-5 above the root.
        #[rustfmt::skip]
        let g = [
            -1.793_896_29e-5, 2.322_279_69e-6, 6.818_018_85e-6, 8.798_664_37e-6,
            5.484_563_16e-7, -6.132_206_71e-6, 2.430_994_22e-7, 5.340_650_97e-6,
            8.460_008_7e-6, 3.743_290_95e-6, -1.633_616_01e-5, 4.132_860_41e-6,
            9.014_220_15e-6, 1.545_696_89e-6, 8.049_839_89e-6, -1.860_975_69e-5,
        ];
        let e = [0.778_51, 0.628_87, 0.778_50, 0.706_58, 0.004_33, 0.938_41, 0.588_49, 0.937_65];
        let warm = perron_roots(&g, 4, &e).unwrap()[1];
        let cold = perron_roots(&g, 4, &e[4..]).unwrap()[0];
        // power iteration on B + I (non-negative) as an independent check
        let mut b = [0.0; 16];
        for i in 0..4 {
            for j in 0..4 {
                b[i * 4 + j] =
                    (1.0 + e[4 + i]) * g[i * 4 + j] + if i == j { 1.0 + e[4 + i] } else { 0.0 };
            }
        }
        let mut v = [1.0; 4];
        let mut lambda = 0.0;
        for _ in 0..200_000 {
            let w: Vec<f64> = (0..4).map(|i| (0..4).map(|j| b[i * 4 + j] * v[j]).sum()).collect();
            let top = w.iter().cloned().fold(0.0, f64::max);
            lambda = top / v.iter().cloned().fold(0.0, f64::max);
            v.iter_mut().zip(&w).for_each(|(x, y)| *x = y / top);
        }
        let expect = lambda - 1.0;
        assert!(close(cold, expect, 1e-9), "{cold} {expect}");
        assert!(warm >= cold - 1e-15 && warm - cold < 1e-13, "{warm} {cold}");
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

    /// A pseudo-random generator of `n` states, some transitions absent as in a fitted chain.
    fn sample_generator(n: usize, seed: u64) -> Vec<f64> {
        super::testing::sample_generator(&mut super::testing::Lcg(seed), n, 0.4, 1e-5)
    }

    /// The root does not depend on the starting vector (only the work does): a cold start, the
    /// previous root's vector, a caller's vector and a useless one agree to rounding.
    #[test]
    fn warm_starts_do_not_change_the_root() {
        let n = 10;
        let g = sample_generator(n, 7);
        let mut warm = PerronSolver::new(&g, n).unwrap();
        for k in 0..40 {
            let theta = 1e-6 * (1.0 + k as f64);
            let e: Vec<f64> =
                (0..n).map(|i| 1e-3 * (i + 1) as f64 * theta / (1e-4 - theta / 2.0)).collect();
            let cold = PerronSolver::new(&g, n).unwrap().root(&e);
            let from_previous = warm.root(&e);
            let mut given = PerronSolver::new(&g, n).unwrap();
            given.warm_start(warm.vector());
            let from_own_vector = given.root(&e);
            let mut odd = PerronSolver::new(&g, n).unwrap();
            let skewed: Vec<f64> = (0..n).map(|i| 10f64.powi(-(i as i32) * 30)).collect();
            odd.warm_start(&skewed);
            let from_skewed = odd.root(&e);
            for got in [from_previous, from_own_vector, from_skewed] {
                assert!(close(got, cold, 1e-13), "theta {theta}: {got} vs {cold}");
            }
            // the vector is the Perron vector: B v = r v
            let v = warm.vector();
            for i in 0..n {
                let bv: f64 =
                    (0..n).map(|j| (1.0 + e[i]) * g[i * n + j] * v[j]).sum::<f64>() + e[i] * v[i];
                assert!((bv - cold * v[i]).abs() <= 1e-12 * cold, "row {i}");
            }
        }
    }

    #[test]
    fn warm_start_ignores_unusable_vectors() {
        let g = sample_generator(4, 3);
        let e = [1e-4, 2e-4, 3e-4, 4e-4];
        let expect = PerronSolver::new(&g, 4).unwrap().root(&e);
        for bad in
            [vec![1.0, 0.0, 1.0, 1.0], vec![1.0, -1.0, 1.0, 1.0], vec![1.0; 3], vec![f64::NAN; 4]]
        {
            let mut solver = PerronSolver::new(&g, 4).unwrap();
            solver.warm_start(&bad);
            assert_eq!(solver.root(&e), expect);
        }
    }

    #[test]
    fn rejects_bad_shapes_and_values() {
        assert!(perron_roots(&[0.0; 3], 2, &[0.0, 0.0]).is_err());
        assert!(perron_roots(&[0.0; 4], 2, &[0.0, 0.0, 0.0]).is_err());
        assert!(perron_roots(&[0.0; 4], 2, &[f64::INFINITY, 0.0]).is_err());
    }
}
