//! The reference MMPP fit of SNC-Meister (thesis §4.2.4): a trace's arrivals per interval cut
//! into at most [`MAX_STATES`] rate states, the per-step transition matrix between them and each
//! state's request probability and exponential work rate.
//!
//! This is the one implementation of the fit: `tailbound.snc.mmpp.fit_mmpp` calls [`fit`], and
//! `tailbound bound` fits a trace file's two network directions with [`fit_messages`] without
//! building a Python trace. The procedure, step by step, is documented in
//! `python/tailbound/snc/mmpp.py`; sums run in the order numpy ran them when the fit was written
//! in numpy (the per-state work sums in request order, each transition row's sum in numpy's
//! pairwise order: [`numpy_sum`]), so the fit is bit for bit the one it replaced.

use crate::error::{Error, Result};
use crate::parse::{TraceColumns, READ, WRITE};

/// The reference's interval: 1 s.
pub const INTERVAL_NS: i64 = 1_000_000_000;
/// At most this many states.
pub const MAX_STATES: usize = 10;
/// Width of a state in standard deviations of a Poisson count, unless all states are needed.
pub const DEFAULT_A: f64 = 2.0;
/// `mu` of a state no request fell into (the reference's default).
pub const EMPTY_STATE_MU: f64 = 1e6;

/// A fitted Markov-modulated Bernoulli process with exponential work.
#[derive(Debug, Clone, PartialEq)]
pub struct Mmpp {
    /// Number of states.
    pub n: usize,
    /// Per-step transition probabilities, `n × n` row-major.
    pub transition: Vec<f64>,
    /// Per-step probability of a request in each state.
    pub p_request: Vec<f64>,
    /// Rate (1 / mean) of the exponential work of each state's requests (`inf`: no work).
    pub mu: Vec<f64>,
    /// The states' request rates per second (ascending).
    pub lambdas: Vec<f64>,
    /// The width `a` the fit used.
    pub a: f64,
    /// Each interval's state (empty when the model was not fitted from a trace).
    pub state_of_interval: Vec<i64>,
}

impl Mmpp {
    /// A model from its parts; an error unless `transition` is `n × n` and the others have `n`
    /// entries (`state_of_interval` may be empty, else its states are below `n`).
    pub fn new(
        transition: Vec<f64>,
        p_request: Vec<f64>,
        mu: Vec<f64>,
        lambdas: Vec<f64>,
        a: f64,
        state_of_interval: Vec<i64>,
    ) -> Result<Self> {
        let n = p_request.len();
        if n == 0 || transition.len() != n * n || mu.len() != n || lambdas.len() != n {
            return Err(Error::Invalid(format!(
                "an MMPP needs n > 0 states, an n × n transition matrix and n of p_request, mu \
                 and lambdas; got {} transition entries, {n} of p_request, {} of mu, {} of lambdas",
                transition.len(),
                mu.len(),
                lambdas.len()
            )));
        }
        if state_of_interval.iter().any(|&s| s < 0 || s as usize >= n) {
            return Err(Error::Invalid(format!("state_of_interval names a state outside 0..{n}")));
        }
        Ok(Mmpp { n, transition, p_request, mu, lambdas, a, state_of_interval })
    }

    /// The generator `G = P - I`, row-major, its diagonal minus the off-diagonal row sums (so
    /// rows sum to 0 exactly as numpy's sum rounds them).
    pub fn generator(&self) -> Vec<f64> {
        let n = self.n;
        let mut g = self.transition.clone();
        for s in 0..n {
            g[s * n + s] = 0.0;
            let sum = numpy_sum(&g[s * n..(s + 1) * n]);
            g[s * n + s] = -sum;
        }
        g
    }

    /// The smallest `mu`: every state's MGF is infinite from there on.
    pub fn pole(&self) -> f64 {
        self.mu.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// A sum of `values` in numpy's order for a contiguous array (`ndarray.sum`: below 8 values one
/// after the other from 0; up to 128 values eight interleaved partial sums combined pairwise,
/// then the remainder). The fits hold at most [`MAX_STATES`] values per row.
pub fn numpy_sum(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 8 {
        return values.iter().fold(0.0, |acc, &v| acc + v);
    }
    if n > 128 {
        let half = (n / 2) - (n / 2) % 8;
        return numpy_sum(&values[..half]) + numpy_sum(&values[half..]);
    }
    let mut r = [0.0f64; 8];
    r.copy_from_slice(&values[..8]);
    let whole = n - n % 8;
    let mut i = 8;
    while i < whole {
        for j in 0..8 {
            r[j] += values[i + j];
        }
        i += 8;
    }
    let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for &v in &values[whole..] {
        res += v;
    }
    res
}

/// Arrivals per interval `[k T, (k+1) T)` from time 0 to the last arrival (`[0]` for none).
pub fn interval_counts(arrival_ns: &[i64], interval_ns: i64) -> Vec<i64> {
    let last = arrival_ns.iter().map(|&t| t.div_euclid(interval_ns)).max();
    let Some(last) = last else { return vec![0] };
    let mut counts = vec![0i64; last as usize + 1];
    for &t in arrival_ns {
        counts[t.div_euclid(interval_ns) as usize] += 1;
    }
    counts
}

/// `x²` as Python's `x ** 2` computes it: the C library's `pow`, which is not always the
/// correctly rounded `x * x` (one ulp apart on some rates; the fit was written in Python). The
/// exponent is hidden from the optimiser, which would otherwise turn the call into `x * x`.
fn squared(x: f64) -> f64 {
    x.powf(std::hint::black_box(2.0))
}

/// Place the states' rates top-down for width `a` into `lambdas`; the bottom state's lower
/// edge, or `-inf` when the rates fall below `low` before all states are placed.
fn place(a: f64, low: f64, high: f64, lambdas: &mut [f64]) -> f64 {
    let mut lam = squared((high + a * a / 4.0).sqrt() - a / 2.0);
    for state in (1..lambdas.len()).rev() {
        if lam < low {
            return f64::NEG_INFINITY;
        }
        lambdas[state] = lam;
        lam = squared(lam.sqrt() - a);
    }
    lambdas[0] = lam;
    lam - a * lam.sqrt()
}

/// The states' rates (ascending) and the width `a` for interval counts `counts` (non-empty).
pub fn place_states(counts: &[i64], max_states: usize) -> (Vec<f64>, f64) {
    let low = counts.iter().copied().min().unwrap_or(0) as f64;
    let high = counts.iter().copied().max().unwrap_or(0) as f64;
    let mut lambdas = vec![0.0; max_states];
    let a = DEFAULT_A;
    if place(a, low, high, &mut lambdas).is_finite() {
        // All states needed: widen them (binary search on a) until the bottom state's lower edge
        // reaches the smallest count.
        let (mut lo_a, mut hi_a) = (0.0f64, high);
        while hi_a - lo_a > 0.01 {
            let mid = lo_a + (hi_a - lo_a) / 2.0;
            if place(mid, low, high, &mut lambdas) > low {
                lo_a = mid;
            } else {
                hi_a = mid;
            }
        }
        let a = lo_a + (hi_a - lo_a) / 2.0;
        place(a, low, high, &mut lambdas);
        return (lambdas, a);
    }
    let mut placed: Vec<f64> = lambdas.into_iter().filter(|&lam| lam > 0.0).collect();
    if placed.is_empty() {
        // Even the top state lies below the smallest count: keep the top state alone (the
        // reference is left with no state here).
        placed.push(squared((high + a * a / 4.0).sqrt() - a / 2.0));
    }
    (placed, a)
}

/// Each interval's state: the highest `s >= 1` with `count > lambda_s - a sqrt(lambda_s)`, else 0.
pub fn assign_states(counts: &[i64], lambdas: &[f64], a: f64) -> Vec<i64> {
    let edges: Vec<f64> = lambdas.iter().map(|&lam| lam - a * lam.sqrt()).collect();
    counts
        .iter()
        .map(|&c| {
            let c = c as f64;
            (1..edges.len()).rev().find(|&s| c > edges[s]).unwrap_or(0) as i64
        })
        .collect()
}

/// Per-step transition matrix (`n × n` row-major) from the intervals' states: transitions
/// `s → t` over the steps spent in `s` (`floor(T · intervals / step)`, at least 1), the
/// diagonal one minus the rest.
pub fn transition_matrix(states: &[i64], n: usize, interval_ns: i64, step_s: f64) -> Vec<f64> {
    let mut counts = vec![0.0f64; n * n];
    for w in states.windows(2) {
        let (s, t) = (w[0] as usize, w[1] as usize);
        if s != t {
            counts[s * n + t] += 1.0;
        }
    }
    let mut intervals_in = vec![0i64; n];
    for &s in states {
        intervals_in[s as usize] += 1;
    }
    let mut matrix = vec![0.0f64; n * n];
    for s in 0..n {
        let duration_s = (intervals_in[s] * interval_ns) as f64 / 1e9;
        let steps = match (duration_s / step_s).floor() {
            0.0 => 1.0,
            steps => steps,
        };
        let row = &mut matrix[s * n..(s + 1) * n];
        for (t, value) in row.iter_mut().enumerate() {
            *value = counts[s * n + t] / steps;
        }
        row[s] = 0.0;
        row[s] = 1.0 - numpy_sum(row);
    }
    matrix
}

/// Fit the reference MMPP to arrival times (integer ns from the trace's origin, `>= 0`) and
/// each request's work; `step_s` is the SNC step (`tailbound.snc.bounds.STEP_S`).
pub fn fit(arrival_ns: &[i64], work: &[f64], interval_ns: i64, step_s: f64) -> Result<Mmpp> {
    if arrival_ns.len() != work.len() {
        return Err(Error::Invalid(format!(
            "{} arrivals but {} work values",
            arrival_ns.len(),
            work.len()
        )));
    }
    if interval_ns <= 0 || step_s.is_nan() || step_s <= 0.0 {
        return Err(Error::Invalid(format!(
            "interval_ns ({interval_ns}) and step_s ({step_s}) must be positive"
        )));
    }
    if arrival_ns.iter().any(|&t| t < 0) {
        return Err(Error::Invalid("arrival times must not be negative".into()));
    }
    let counts = interval_counts(arrival_ns, interval_ns);
    let (lambdas, a) = place_states(&counts, MAX_STATES);
    let n = lambdas.len();
    let states = assign_states(&counts, &lambdas, a);
    let transition = transition_matrix(&states, n, interval_ns, step_s);
    let mut requests = vec![0.0f64; n];
    let mut total_work = vec![0.0f64; n];
    for (&t, &w) in arrival_ns.iter().zip(work) {
        let s = states[(t / interval_ns) as usize] as usize;
        requests[s] += 1.0;
        total_work[s] += w;
    }
    let mu = requests
        .iter()
        .zip(&total_work)
        .map(|(&r, &w)| {
            if r > 0.0 {
                // A state whose requests carry no work at all: work is 0, MGF = 1.
                let mu = r / w;
                if mu.is_finite() {
                    mu
                } else {
                    f64::INFINITY
                }
            } else {
                EMPTY_STATE_MU
            }
        })
        .collect();
    let interval_s = interval_ns as f64 / 1e9;
    let p_request = lambdas.iter().map(|&lam| lam * step_s / interval_s).collect();
    Mmpp::new(transition, p_request, mu, lambdas, a, states)
}

/// Bytes on the wire of a request's message: `overhead + factor · size`, the factor the read's
/// or the write's (`tailbound.profiles.tokens.MessageSizes`, whose parameters the caller passes).
#[derive(Debug, Clone, Copy)]
pub struct Message {
    pub overhead_bytes: f64,
    pub read_factor: f64,
    pub write_factor: f64,
}

impl Message {
    fn bytes(&self, is_read: bool, size: i64) -> f64 {
        let factor = if is_read { self.read_factor } else { self.write_factor };
        self.overhead_bytes + factor * size as f64
    }
}

/// The fits of one trace's requests for each message model in `messages` (work = that message's
/// bytes): `time` in seconds from the trace's origin (sorted, finite, `>= 0`: the caller checks
/// the trace first), `is_read` and `size` per request. Arrivals are `rint(time · 1e9)` ns.
pub fn fit_messages(
    time: &[f64],
    is_read: &[bool],
    size: &[i64],
    messages: &[Message],
    interval_ns: i64,
    step_s: f64,
) -> Result<Vec<Mmpp>> {
    if time.len() != is_read.len() || time.len() != size.len() {
        return Err(Error::Invalid("time, is_read and size differ in length".into()));
    }
    let arrival_ns: Vec<i64> = time.iter().map(|&t| (t * 1e9).round_ties_even() as i64).collect();
    messages
        .iter()
        .map(|m| {
            let work: Vec<f64> =
                is_read.iter().zip(size).map(|(&read, &s)| m.bytes(read, s)).collect();
            fit(&arrival_ns, &work, interval_ns, step_s)
        })
        .collect()
}

/// The fits of a parsed trace's requests for each message model, as [`fit_messages`] gives
/// them, or `None` when the trace is not one the Python reader would take unchanged (no
/// request; a time not finite or outside `[0, max_time_s]`; a size outside
/// `[0, max_request_bytes]`; an operation neither read nor write; arrivals out of order): the caller then reads it through the reader, which names the fault
/// or sorts the trace with its warning. The limits are the caller's (`tailbound.limits`).
pub fn fit_columns(
    columns: &TraceColumns,
    max_time_s: f64,
    max_request_bytes: i64,
    messages: &[Message],
    interval_ns: i64,
    step_s: f64,
) -> Result<Option<Vec<Mmpp>>> {
    let time = &columns.time;
    let clean = !time.is_empty()
        && time.iter().all(|&t| t.is_finite() && (0.0..=max_time_s).contains(&t))
        && time.windows(2).all(|w| w[0] <= w[1])
        && columns.size.iter().all(|&s| (0..=max_request_bytes).contains(&s))
        && columns.op.iter().all(|&op| op == READ || op == WRITE);
    if !clean {
        return Ok(None);
    }
    let is_read: Vec<bool> = columns.op.iter().map(|&op| op == READ).collect();
    fit_messages(time, &is_read, &columns.size, messages, interval_ns, step_s).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_sum_orders() {
        let v: Vec<f64> = (0..11).map(|i| 0.1 * i as f64 + 1e-17 * i as f64).collect();
        let r8 = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
        assert_eq!(numpy_sum(&v), r8 + v[8] + v[9] + v[10]);
        assert_eq!(numpy_sum(&v[..3]), (0.0 + v[0] + v[1]) + v[2]);
        assert_eq!(numpy_sum(&[]), 0.0);
    }

    #[test]
    fn constant_rate_is_one_state() {
        // 100 requests/s for 4 s (the doctest of the Python fit_mmpp)
        let ns: Vec<i64> = (0..400).map(|i| i * 10_000_000).collect();
        let m = fit(&ns, &vec![1000.0; 400], INTERVAL_NS, 1e-5).unwrap();
        assert_eq!(m.n, 1);
        assert_eq!(m.transition, vec![1.0]);
        assert!((m.p_request[0] - 0.000819).abs() < 5e-7);
        assert_eq!(m.mu, vec![0.001]);
        assert_eq!(m.state_of_interval, vec![0, 0, 0, 0]);
    }

    #[test]
    fn two_rates() {
        // 4 s at 10 requests/s then 4 s at 400/s: eight states placed from the top, the low
        // intervals in state 0 and the high ones in the top state (values of the numpy fit)
        let mut ns = vec![];
        for s in 0..4i64 {
            ns.extend((0..10).map(|k| s * INTERVAL_NS + k * 100_000_000));
        }
        for s in 4..8i64 {
            ns.extend((0..400).map(|k| s * INTERVAL_NS + k * 2_500_000));
        }
        let work = vec![1.0; ns.len()];
        let m = fit(&ns, &work, INTERVAL_NS, 1e-5).unwrap();
        assert_eq!((m.n, m.a), (8, 2.0));
        assert_eq!(m.state_of_interval, vec![0, 0, 0, 0, 7, 7, 7, 7]);
        assert_eq!(m.mu, vec![1.0, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6, 1.0]);
        assert_eq!(m.transition[7], 2.500006250015625e-06);
        assert_eq!(m.transition[0], 0.99999749999375);
        let g = m.generator();
        assert!((0..m.n).all(|s| numpy_sum(&g[s * m.n..][..m.n]) == 0.0));
        assert_eq!(m.pole(), 1.0);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(fit(&[0, 1], &[1.0], INTERVAL_NS, 1e-5).is_err());
        assert!(fit(&[-1], &[1.0], INTERVAL_NS, 1e-5).is_err());
        assert!(Mmpp::new(vec![1.0], vec![0.1], vec![1.0], vec![1.0], 2.0, vec![1]).is_err());
    }

    #[test]
    fn messages_fit_each_direction() {
        let time = [0.25, 0.5, 1.5];
        let m = Message { overhead_bytes: 200.0, read_factor: 0.025, write_factor: 1.1 };
        let fits =
            fit_messages(&time, &[true, false, true], &[1000, 1000, 0], &[m], INTERVAL_NS, 1e-5)
                .unwrap();
        let direct = fit(
            &[250_000_000, 500_000_000, 1_500_000_000],
            &[225.0, 1300.0, 200.0],
            INTERVAL_NS,
            1e-5,
        )
        .unwrap();
        assert_eq!(fits, vec![direct]);
    }
}
