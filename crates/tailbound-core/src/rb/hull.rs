//! The exact r-b curve by divide and conquer over the trace, `O(n log² n)` whatever its shape.
//!
//! The tangent method of [`super::exact`] costs one trace pass per batch of rates, so its time
//! grows with the number of breakpoints: fine for real traces (tens), quadratic for a trace whose
//! cumulative work is a smooth concave function of time (every request a breakpoint). This
//! route does not evaluate rates at all. For requests `lo..hi` split at `mid`,
//!
//! `b(r) = max(b_left(r), b_right(r), max_{j ≥ mid} (C_{j+1} − r t_j) − min_{i < mid} (C_i − r t_i))`
//!
//! with `C_k` the tokens before request `k`. The crossing term is an upper envelope of "end"
//! lines minus a lower envelope of "start" lines; on each interval between their breakpoints it
//! is the line of one interval `[i, j]`. Every piece is such a line, so `b` on the range is the
//! upper envelope of the left and right curves' lines and the crossing pieces (each convex
//! piecewise-linear function is the upper envelope of its own lines). Envelopes are cut to rates
//! `≥ min_rate`, which keeps them small.

use super::exact::{upper_envelope, PrefixWork, Tangent};

/// Ranges this short are solved by the same recursion without splitting further allocations:
/// their lines are all intervals, at most `LEAF · (LEAF + 1) / 2`.
const LEAF: usize = 16;

/// The lines of the upper envelope of `b` on `[min_rate, ∞)` (steepest first).
pub(crate) fn hull_lines(time: &[f64], prefix: &PrefixWork, min_rate: f64) -> Vec<Tangent> {
    if time.is_empty() {
        return Vec::new();
    }
    range_lines(time, prefix, 0, time.len(), min_rate)
}

fn range_lines(time: &[f64], prefix: &PrefixWork, lo: usize, hi: usize, r0: f64) -> Vec<Tangent> {
    if hi - lo <= LEAF {
        // every interval of the range: the definition, for a handful of requests
        let lines = (lo..hi)
            .flat_map(|i| (i..hi).map(move |j| (i, j)))
            .map(|(i, j)| Tangent {
                work: prefix.work(i, j),
                duration: time[j] - time[i],
                first: i,
                last: j,
            })
            .collect();
        return upper_envelope(lines, r0).0;
    }
    let mid = lo + (hi - lo) / 2;
    let mut lines = range_lines(time, prefix, lo, mid, r0);
    lines.extend(range_lines(time, prefix, mid, hi, r0));
    lines.extend(crossing(time, prefix, lo, mid, hi, r0));
    upper_envelope(lines, r0).0
}

/// The pieces of `max_{i in lo..mid, j in mid..hi} (W_ij − r D_ij)` on `[r0, ∞)`.
fn crossing(
    time: &[f64],
    prefix: &PrefixWork,
    lo: usize,
    mid: usize,
    hi: usize,
    r0: f64,
) -> Vec<Tangent> {
    // End lines C_{j+1} − r t_j, and start lines negated (−C_i + r t_i) so that one upper
    // envelope routine serves both. `first` carries the request index.
    let point = |work: f64, duration: f64, k: usize| Tangent { work, duration, first: k, last: k };
    let ends = (mid..hi).map(|j| point(prefix.before(j + 1), time[j], j)).collect();
    let starts = (lo..mid).map(|i| point(-prefix.before(i), -time[i], i)).collect();
    let (ends, end_from) = upper_envelope(ends, r0);
    let (starts, start_from) = upper_envelope(starts, r0);
    let mut pieces = Vec::with_capacity(ends.len() + starts.len());
    let (mut e, mut s) = (0, 0);
    loop {
        let (i, j) = (starts[s].first, ends[e].first);
        pieces.push(Tangent {
            work: prefix.work(i, j),
            duration: time[j] - time[i],
            first: i,
            last: j,
        });
        match (end_from.get(e + 1), start_from.get(s + 1)) {
            (None, None) => break,
            (Some(_), None) => e += 1,
            (None, Some(_)) => s += 1,
            (Some(x), Some(y)) => {
                if x <= y {
                    e += 1;
                } else {
                    s += 1;
                }
            }
        }
    }
    pieces
}
