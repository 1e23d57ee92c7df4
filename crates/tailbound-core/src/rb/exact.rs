//! The exact r-b curve: every breakpoint of `b(r)`, with no grid error.
//!
//! `b(r) = max over intervals [i, j] of (W_ij - r D_ij)`, with `W_ij` the tokens (seconds of work)
//! of requests `i..=j` and `D_ij = t_j - t_i`, is the upper envelope of one line per interval:
//! convex, piecewise linear and non-increasing in `r`. Each evaluation of rbGen at a rate `r`
//! that also returns the arg-max interval gives a *tangent* `W - r D` touching `b` at `r`.
//!
//! The curve is found adaptively (the chord-and-tangent, or "sandwich", method): start from the
//! tangent at the lowest rate (the mean rate) and the flat tangent `b = max work of requests
//! arriving at one instant` that `b` reaches at its peak rate. For two neighbouring tangents
//! `a` (touching at a lower rate) and `c`, intersect them at `r* = (W_a - W_c) / (D_a - D_c)` and
//! evaluate `b(r*)`. If `b(r*)` equals the tangents' value there, `b = max(a, c)` between the
//! touching points (a convex function that meets a supporting line at two points follows it in
//! between), so `r*` is a breakpoint; otherwise the new tangent lies strictly between them and the
//! search continues on both sides. All intersection rates of one level are evaluated in a single
//! multi-rate pass over the trace.
//!
//! Floating point: a tangent's work comes from compensated prefix sums of the tokens (not from
//! the running bucket), so lines are accurate to a few ulps of `W + r D`. A new tangent counts
//! only if it beats the old ones at `r*` by more than [`RELATIVE_TOLERANCE`] times `W + r D` and
//! its duration lies strictly between theirs, which also guarantees termination (durations are
//! distinct finite values). The curve can therefore miss a breakpoint whose height above the
//! neighbouring tangents is below that tolerance, or below the rounding of the Lindley recursion
//! that picks the arg-max (about `n · ε` relative for a busy period of `n` requests).

use super::hull::hull_lines;
use super::rbgen::{argmax_unchecked, validate};
use crate::{Error, Result};

/// A new tangent must beat the known ones by this fraction of `W + r D` to count.
pub const RELATIVE_TOLERANCE: f64 = 1e-12;

/// With [`Method::Auto`], a recursion level with more intersections than this to evaluate
/// hands over to the divide-and-conquer route: the curve has hundreds of breakpoints, and
/// every further level would cost a pass per 32 of them.
pub const AUTO_SWITCH: usize = 128;

/// How to find the exact curve; all give the same curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Tangents and intersections, batched per level (the method of this module).
    Tangents,
    /// Divide and conquer over the trace ([`super::hull`]), `O(n log² n)` for any curve.
    Hull,
    /// Tangents while the curve has few breakpoints, then divide and conquer.
    Auto,
}

/// A tangent of the r-b curve: requests `first..=last` carry `work` seconds of work over
/// `duration` seconds (`t_last - t_first`); the line is `b = work - r · duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tangent {
    pub work: f64,
    pub duration: f64,
    pub first: usize,
    pub last: usize,
}

impl Tangent {
    /// The line's bucket (seconds of work) at rate `r`.
    pub fn at(&self, r: f64) -> f64 {
        self.work - r * self.duration
    }
}

/// The exact curve: vertices `(rates[k], buckets[k])` with `rates[0]` the lowest rate asked
/// for and the last vertex the peak rate (above which `b` stays constant). `tangents[k]` is the
/// line of the segment starting at vertex `k` (the last one is flat).
#[derive(Debug, Clone, PartialEq)]
pub struct ExactCurve {
    pub rates: Vec<f64>,
    pub buckets: Vec<f64>,
    pub tangents: Vec<Tangent>,
    /// Passes over the trace (recursion levels, each one batched).
    pub passes: usize,
    /// Rates evaluated in all.
    pub evaluations: usize,
    /// The method that produced the curve ([`Method::Tangents`] or [`Method::Hull`]).
    pub method: Method,
}

/// Prefix sums of the tokens with Neumaier compensation: `work(i, j)` is accurate to a few
/// ulps of the interval's own work rather than of the whole trace's.
pub(crate) struct PrefixWork {
    hi: Vec<f64>,
    lo: Vec<f64>,
}

impl PrefixWork {
    pub(crate) fn new(tokens: &[f64]) -> Self {
        let mut hi = Vec::with_capacity(tokens.len() + 1);
        let mut lo = Vec::with_capacity(tokens.len() + 1);
        let (mut sum, mut compensation) = (0.0f64, 0.0f64);
        hi.push(0.0);
        lo.push(0.0);
        for &w in tokens {
            let next = sum + w;
            compensation += if sum.abs() >= w.abs() { (sum - next) + w } else { (w - next) + sum };
            sum = next;
            hi.push(sum);
            lo.push(compensation);
        }
        PrefixWork { hi, lo }
    }

    /// Tokens of requests `first..=last`.
    pub(crate) fn work(&self, first: usize, last: usize) -> f64 {
        (self.hi[last + 1] - self.hi[first]) + (self.lo[last + 1] - self.lo[first])
    }

    /// Tokens of the requests before request `k`.
    pub(crate) fn before(&self, k: usize) -> f64 {
        self.hi[k] + self.lo[k]
    }
}

/// The exact r-b curve of requests at `time` (s, non-decreasing) with `tokens` (s of work) on
/// rates from `min_rate` (usually the mean rate) upward; `threads` as in [`super::rbgen`].
///
/// ```
/// use tailbound_core::rb::exact_rb_curve;
/// // unit requests at 0, 1 and 1.5 s: b(r) = max(3 - 1.5 r, 2 - 0.5 r, 1)
/// let c = exact_rb_curve(&[0.0, 1.0, 1.5], &[1.0, 1.0, 1.0], 0.5, 1).unwrap();
/// assert_eq!(c.rates, vec![0.5, 1.0, 2.0]);
/// assert_eq!(c.buckets, vec![2.25, 1.5, 1.0]);
/// ```
pub fn exact_rb_curve(
    time: &[f64],
    tokens: &[f64],
    min_rate: f64,
    threads: usize,
) -> Result<ExactCurve> {
    exact_rb_curve_with(time, tokens, min_rate, threads, Method::Auto)
}

/// [`exact_rb_curve`] with a chosen [`Method`].
pub fn exact_rb_curve_with(
    time: &[f64],
    tokens: &[f64],
    min_rate: f64,
    threads: usize,
    method: Method,
) -> Result<ExactCurve> {
    validate(time, tokens, &[min_rate])?;
    if time.is_empty() {
        return Err(Error::Invalid("the exact r-b curve needs at least one request".into()));
    }
    let prefix = PrefixWork::new(tokens);
    let tangent = |(_, first, last): (f64, usize, usize)| Tangent {
        work: prefix.work(first, last),
        duration: time[last] - time[first],
        first,
        last,
    };
    let mut curve = ExactCurve {
        rates: vec![],
        buckets: vec![],
        tangents: vec![],
        passes: 0,
        evaluations: 0,
        method: Method::Tangents,
    };
    if method == Method::Hull {
        curve.method = Method::Hull;
        envelope(hull_lines(time, &prefix, min_rate), min_rate, &mut curve);
        return Ok(curve);
    }
    let first = tangent(argmax_unchecked(time, tokens, &[min_rate], threads)[0]);
    curve.passes = 1;
    curve.evaluations = 1;
    let mut found = vec![first];
    if first.duration > 0.0 {
        let flat = instant_tangent(time, &prefix);
        found.push(flat);
        let mut pending = vec![(first, flat)];
        while !pending.is_empty() {
            if method == Method::Auto && pending.len() > AUTO_SWITCH {
                curve.method = Method::Hull;
                found = hull_lines(time, &prefix, min_rate);
                break;
            }
            let rates: Vec<f64> = pending.iter().map(|(a, c)| intersection(a, c)).collect();
            let tangents = argmax_unchecked(time, tokens, &rates, threads);
            curve.passes += 1;
            curve.evaluations += rates.len();
            let mut next = Vec::new();
            for ((a, c), (&r, &m)) in pending.iter().zip(rates.iter().zip(&tangents)) {
                let e = tangent(m);
                let known = a.at(r).max(c.at(r));
                let scale = e.work.abs() + r * e.duration;
                if e.duration < a.duration
                    && e.duration > c.duration
                    && e.at(r) > known + RELATIVE_TOLERANCE * scale
                {
                    found.push(e);
                    next.push((*a, e));
                    next.push((e, *c));
                }
            }
            pending = next;
        }
    }
    envelope(found, min_rate, &mut curve);
    Ok(curve)
}

/// Where `a` and `c` (with `D_a > D_c`) cross.
fn intersection(a: &Tangent, c: &Tangent) -> f64 {
    (a.work - c.work) / (a.duration - c.duration)
}

/// The flat tangent `b = W`: the most work arriving at one instant (requests with equal times),
/// which is `b(r)` for every rate above the peak rate.
fn instant_tangent(time: &[f64], prefix: &PrefixWork) -> Tangent {
    let mut best = Tangent { work: prefix.work(0, 0), duration: 0.0, first: 0, last: 0 };
    let mut group = 0;
    for j in 1..time.len() {
        if time[j] != time[group] {
            group = j;
        }
        let work = prefix.work(group, j);
        if work > best.work {
            best = Tangent { work, duration: 0.0, first: group, last: j };
        }
    }
    best
}

/// The upper envelope of `lines` on `[min_rate, ∞)` into `curve`'s vertices and tangents.
fn envelope(lines: Vec<Tangent>, min_rate: f64, curve: &mut ExactCurve) {
    let (hull, starts) = upper_envelope(lines, min_rate);
    let mut buckets: Vec<f64> = hull.iter().zip(&starts).map(|(l, &r)| l.at(r)).collect();
    // Rounding may raise a vertex by an ulp above its left neighbour; b is non-increasing.
    for k in 1..buckets.len() {
        buckets[k] = buckets[k].min(buckets[k - 1]);
    }
    curve.rates = starts;
    curve.buckets = buckets;
    curve.tangents = hull;
}

/// The lines of the upper envelope of `lines` (values `work − r · duration`) on
/// `[min_rate, ∞)`, in order, with the rate from which each one leads (the first is `min_rate`).
/// Lines of equal duration keep the one with the most work. `O(m log m)`.
pub(crate) fn upper_envelope(mut lines: Vec<Tangent>, min_rate: f64) -> (Vec<Tangent>, Vec<f64>) {
    // Steepest first: the envelope runs through lines in order of decreasing duration.
    lines.sort_by(|a, b| b.duration.total_cmp(&a.duration).then(b.work.total_cmp(&a.work)));
    let mut hull: Vec<Tangent> = Vec::with_capacity(lines.len());
    let mut starts: Vec<f64> = Vec::with_capacity(lines.len());
    for line in lines {
        loop {
            let Some(top) = hull.last() else {
                hull.push(line);
                starts.push(min_rate);
                break;
            };
            if line.duration == top.duration {
                break; // sorted by work too: `top` is at least as high everywhere
            }
            let x = intersection(top, &line);
            if x > *starts.last().unwrap() {
                hull.push(line);
                starts.push(x);
                break;
            }
            // `line` overtakes `top` before `top` ever leads: `top` is not on the envelope.
            hull.pop();
            starts.pop();
        }
    }
    (hull, starts)
}

#[cfg(test)]
mod tests {
    use super::super::rbgen::rbgen;
    use super::super::testing::uniform;
    use super::*;

    fn trace(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut next = uniform(seed);
        let (mut t, mut time, mut tokens) = (0.0, vec![], vec![]);
        for _ in 0..n {
            if next() > 0.2 {
                t += next() * next() * 0.1;
            }
            time.push(t);
            tokens.push(next() * next() * 0.01);
        }
        (time, tokens)
    }

    /// The piecewise-linear interpolation of the vertices, constant beyond the last.
    fn value(c: &ExactCurve, r: f64) -> f64 {
        let k = c.rates.partition_point(|&x| x <= r);
        if k == c.rates.len() {
            return *c.buckets.last().unwrap();
        }
        let (r0, r1, b0, b1) = (c.rates[k - 1], c.rates[k], c.buckets[k - 1], c.buckets[k]);
        b0 + (b1 - b0) * (r - r0) / (r1 - r0)
    }

    #[test]
    fn exact_curve_hand_example() {
        let c = exact_rb_curve(&[0.0, 1.0, 1.5], &[1.0; 3], 0.5, 1).unwrap();
        assert_eq!(c.rates, vec![0.5, 1.0, 2.0]);
        assert_eq!(c.buckets, vec![2.25, 1.5, 1.0]);
        assert_eq!(c.tangents.len(), 3);
        assert_eq!(c.tangents[2].duration, 0.0);
    }

    #[test]
    fn exact_curve_equals_dense_rbgen() {
        for seed in 1..30 {
            let (time, tokens) = trace(400, seed);
            let mean = tokens.iter().sum::<f64>() / time.last().unwrap();
            let c = exact_rb_curve(&time, &tokens, mean, 1).unwrap();
            assert!(c.rates.windows(2).all(|p| p[0] < p[1]));
            assert!(c.buckets.windows(2).all(|p| p[0] >= p[1]));
            let peak = *c.rates.last().unwrap();
            let grid: Vec<f64> =
                (0..=2000).map(|k| mean + (2.0 * peak - mean) * k as f64 / 2000.0).collect();
            let dense = rbgen(&time, &tokens, &grid, 1).unwrap();
            for (&r, &b) in grid.iter().zip(&dense) {
                let tol = 1e-12 * (1.0 + b + r * time.last().unwrap());
                assert!(
                    (value(&c, r) - b).abs() <= tol,
                    "seed {seed} r {r}: {} vs {b}",
                    value(&c, r)
                );
            }
            // at its own vertices the curve is rbGen's value
            let at_vertices = rbgen(&time, &tokens, &c.rates, 1).unwrap();
            for (k, &b) in at_vertices.iter().enumerate() {
                assert!((c.buckets[k] - b).abs() <= 1e-12 * (1.0 + b), "seed {seed} vertex {k}");
            }
        }
    }

    #[test]
    fn exact_methods_agree() {
        for seed in 1..30 {
            let (time, tokens) = trace(700, seed);
            let mean = tokens.iter().sum::<f64>() / time.last().unwrap();
            for min_rate in [0.0, mean, 3.0 * mean] {
                let a = exact_rb_curve_with(&time, &tokens, min_rate, 1, Method::Tangents).unwrap();
                let h = exact_rb_curve_with(&time, &tokens, min_rate, 1, Method::Hull).unwrap();
                assert_eq!(h.method, Method::Hull);
                assert_eq!(a.rates.len(), h.rates.len(), "seed {seed}");
                for k in 0..a.rates.len() {
                    let tol = 1e-12 * (1.0 + a.rates[k]);
                    assert!((a.rates[k] - h.rates[k]).abs() <= tol, "seed {seed} vertex {k}");
                    assert!((a.buckets[k] - h.buckets[k]).abs() <= 1e-12 * (1.0 + a.buckets[k]));
                }
            }
        }
    }

    #[test]
    fn exact_auto_switches_on_many_breakpoints() {
        // decelerating arrivals: cumulative work is concave, every request is a breakpoint
        let n = 2000;
        let time: Vec<f64> = (0..n).map(|k| (k * k) as f64 / n as f64).collect();
        let tokens = vec![1e-3; n];
        let mean = 1e-3 * n as f64 / time[n - 1];
        let auto = exact_rb_curve(&time, &tokens, mean, 1).unwrap();
        assert_eq!(auto.method, Method::Hull);
        let tangents = exact_rb_curve_with(&time, &tokens, mean, 1, Method::Tangents).unwrap();
        assert_eq!(auto.rates.len(), tangents.rates.len());
        assert!(auto.rates.len() > 900);
        for (a, b) in auto.buckets.iter().zip(&tangents.buckets) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b));
        }
    }

    #[test]
    fn exact_curve_of_a_steady_trace_is_one_point() {
        // one request per second of 0.5 s work: b = 0.5 at every rate >= the mean
        let time: Vec<f64> = (0..10).map(f64::from).collect();
        let c = exact_rb_curve(&time, &[0.5; 10], 0.55, 1).unwrap();
        assert_eq!((c.rates, c.buckets), (vec![0.55], vec![0.5]));
    }

    #[test]
    fn exact_curve_ties_and_simultaneous_arrivals() {
        // two identical bursts: equal maxima at every rate, and simultaneous requests
        let time = [0.0, 0.0, 0.5, 10.0, 10.0, 10.5];
        // whole trace 6 - 10.5 r, each burst 3 - 0.5 r, each instant 2
        let c = exact_rb_curve(&time, &[1.0; 6], 0.5, 2).unwrap();
        assert_eq!(c.rates, vec![0.5, 2.0]);
        assert_eq!(c.buckets, vec![2.75, 2.0]);
        let c = exact_rb_curve(&time, &[1.0; 6], 0.1, 1).unwrap();
        assert_eq!(c.rates, vec![0.1, 0.3, 2.0]);
        assert_eq!(c.buckets.len(), 3);
        assert!((c.buckets[0] - 4.95).abs() < 1e-12 && (c.buckets[1] - 2.85).abs() < 1e-12);
    }

    #[test]
    fn exact_curve_rejects_empty_trace() {
        assert!(exact_rb_curve(&[], &[], 0.1, 1).is_err());
    }
}
