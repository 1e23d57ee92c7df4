//! Pruning an r-b curve to at most `k` segments without ever going below it.
//!
//! The r-b curve is convex, so the chord between any two of its vertices lies on or above it:
//! keeping a subset of the vertices (always both end points) gives a curve that is never below
//! the original, i.e. token buckets that are all still feasible (WorkloadCompactor keeps at most
//! 12 segments so its LP stays small). Which vertices to keep is chosen to minimise the *added
//! area* between the pruned and the original curve over `[r_first, r_last]` (utilisation ×
//! seconds of work): the exact optimum by dynamic programming over the vertices,
//! `cost(s, c) = min_a cost(s-1, a) + area(a, c)`, in `O(k m²)` for `m` vertices. Curves with more
//! than [`DP_VERTICES`] vertices are first thinned greedily (repeatedly dropping the vertex whose
//! removal adds the least area, the triangle it forms with its neighbours); the dynamic programme
//! then chooses among the survivors, still measuring area against the original curve.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::{Error, Result};

/// Vertex count up to which the dynamic programme runs on all vertices.
pub const DP_VERTICES: usize = 1500;

/// Indices of the vertices to keep (ascending, first and last included, at most `k + 1`) of
/// the convex, non-increasing curve through `(rates[i], buckets[i])`.
///
/// ```
/// use tailbound_core::rb::prune;
/// let rates = [0.1, 0.2, 0.3, 0.5, 1.0];
/// let buckets = [10.0, 5.0, 3.0, 2.0, 1.5];
/// // dropping 0.2 and 0.5 adds 0.15 + 0.2 of area, less than any other pair
/// assert_eq!(prune(&rates, &buckets, 2).unwrap(), vec![0, 2, 4]);
/// ```
pub fn prune(rates: &[f64], buckets: &[f64], k: usize) -> Result<Vec<usize>> {
    if rates.len() != buckets.len() || rates.is_empty() {
        return Err(Error::Invalid("prune needs equally long, non-empty rates and buckets".into()));
    }
    if k == 0 {
        return Err(Error::Invalid("prune needs at least one segment".into()));
    }
    let increasing = rates.windows(2).all(|p| p[0] < p[1]);
    if !increasing || rates.iter().any(|r| !r.is_finite()) {
        return Err(Error::Invalid("prune needs finite, strictly increasing rates".into()));
    }
    let m = rates.len();
    if m <= k + 1 {
        return Ok((0..m).collect());
    }
    // under[i]: area under the original curve from rates[0] to rates[i] (trapezoids)
    let mut under = vec![0.0; m];
    for i in 1..m {
        under[i] = under[i - 1] + 0.5 * (buckets[i - 1] + buckets[i]) * (rates[i] - rates[i - 1]);
    }
    let added = |a: usize, c: usize| {
        let chord = 0.5 * (buckets[a] + buckets[c]) * (rates[c] - rates[a]);
        (chord - (under[c] - under[a])).max(0.0)
    };
    let candidates =
        if m > DP_VERTICES { thin(rates, buckets, DP_VERTICES) } else { (0..m).collect() };
    Ok(best_subset(&candidates, k, added))
}

/// The exact optimum over `candidates` (indices into the curve, first and last kept) of at
/// most `k` segments, minimising the summed `added(a, c)` of the chords kept.
fn best_subset(candidates: &[usize], k: usize, added: impl Fn(usize, usize) -> f64) -> Vec<usize> {
    let m = candidates.len();
    let segments = k.min(m - 1);
    // cost[c]: least area reaching candidate c with s segments; parent[s][c] for backtracking
    let mut cost: Vec<f64> = (0..m).map(|c| added(candidates[0], candidates[c])).collect();
    cost[0] = f64::INFINITY; // a segment must advance
    let mut parent = vec![vec![0usize; m]];
    for _ in 1..segments {
        let mut next = vec![f64::INFINITY; m];
        let mut from = vec![0usize; m];
        for c in 1..m {
            for a in 1..c {
                let value = cost[a] + added(candidates[a], candidates[c]);
                if value < next[c] {
                    next[c] = value;
                    from[c] = a;
                }
            }
        }
        // With fewer segments available the previous layer's path is kept as is.
        for c in 0..m {
            if cost[c] <= next[c] {
                next[c] = cost[c];
                from[c] = usize::MAX;
            }
        }
        cost = next;
        parent.push(from);
    }
    let mut kept = vec![candidates[m - 1]];
    let (mut c, mut s) = (m - 1, segments - 1);
    loop {
        let a = parent[s][c];
        if a == usize::MAX {
            s -= 1; // this layer inherited the path from the one below
            continue;
        }
        if s == 0 {
            break;
        }
        kept.push(candidates[a]);
        c = a;
        s -= 1;
    }
    kept.push(candidates[0]);
    kept.reverse();
    kept
}

/// Greedy thinning to `target` vertices: drop the vertex whose triangle with its current
/// neighbours is smallest (that triangle is exactly the area its removal adds), repeatedly.
fn thin(rates: &[f64], buckets: &[f64], target: usize) -> Vec<usize> {
    let m = rates.len();
    let triangle = |p: usize, v: usize, q: usize| {
        let cross = (rates[v] - rates[p]) * (buckets[q] - buckets[p])
            - (rates[q] - rates[p]) * (buckets[v] - buckets[p]);
        0.5 * cross.abs()
    };
    let mut prev: Vec<usize> = (0..m).map(|i| i.wrapping_sub(1)).collect();
    let mut next: Vec<usize> = (1..=m).collect();
    let mut version = vec![0u32; m];
    let mut alive = vec![true; m];
    let mut heap = BinaryHeap::new();
    for v in 1..m - 1 {
        heap.push(Reverse((Area(triangle(v - 1, v, v + 1)), v, 0u32)));
    }
    let mut left = m;
    while left > target {
        let Some(Reverse((_, v, ver))) = heap.pop() else { break };
        if !alive[v] || ver != version[v] {
            continue;
        }
        alive[v] = false;
        left -= 1;
        let (p, q) = (prev[v], next[v]);
        next[p] = q;
        prev[q] = p;
        for u in [p, q] {
            if u != 0 && u != m - 1 {
                version[u] += 1;
                heap.push(Reverse((Area(triangle(prev[u], u, next[u])), u, version[u])));
            }
        }
    }
    (0..m).filter(|&i| alive[i]).collect()
}

/// An area ordered totally (areas are finite), for the heap.
struct Area(f64);

impl PartialEq for Area {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Area {}

impl PartialOrd for Area {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Area {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A convex decreasing curve with `m` vertices: b = 1 / r sampled on a geometric grid.
    fn curve(m: usize) -> (Vec<f64>, Vec<f64>) {
        let rates: Vec<f64> = (0..m).map(|i| 0.01 * 1.01f64.powi(i as i32)).collect();
        let buckets = rates.iter().map(|r| 1.0 / r).collect();
        (rates, buckets)
    }

    fn area(rates: &[f64], buckets: &[f64], kept: &[usize]) -> f64 {
        let mut total = 0.0;
        for p in kept.windows(2) {
            let (a, c) = (p[0], p[1]);
            let chord = 0.5 * (buckets[a] + buckets[c]) * (rates[c] - rates[a]);
            let under: f64 = (a..c)
                .map(|i| 0.5 * (buckets[i] + buckets[i + 1]) * (rates[i + 1] - rates[i]))
                .sum();
            total += chord - under;
        }
        total
    }

    #[test]
    fn prune_keeps_ends_and_at_most_k_segments() {
        let (rates, buckets) = curve(300);
        for k in [1, 2, 5, 12, 299, 400] {
            let kept = prune(&rates, &buckets, k).unwrap();
            assert_eq!((kept[0], *kept.last().unwrap()), (0, 299));
            assert!(kept.len() <= k + 1 && kept.windows(2).all(|p| p[0] < p[1]));
            assert_eq!(kept.len(), (k + 1).min(300));
        }
    }

    #[test]
    fn prune_is_optimal_against_exhaustive_search() {
        let (rates, buckets) = curve(12);
        for k in 1..=5 {
            let kept = prune(&rates, &buckets, k).unwrap();
            let mut best = f64::INFINITY;
            for mask in 0u32..(1 << 10) {
                if mask.count_ones() as usize + 1 > k {
                    continue;
                }
                let mut subset = vec![0];
                subset.extend((1..11).filter(|i| mask & (1 << (i - 1)) != 0));
                subset.push(11);
                best = best.min(area(&rates, &buckets, &subset));
            }
            assert!((area(&rates, &buckets, &kept) - best).abs() < 1e-12, "k = {k}");
        }
    }

    #[test]
    fn prune_thins_large_curves() {
        let (rates, buckets) = curve(5000);
        let kept = prune(&rates, &buckets, 12).unwrap();
        assert_eq!(kept.len(), 13);
        assert_eq!((kept[0], kept[12]), (0, 4999));
    }

    #[test]
    fn prune_rejects_bad_input() {
        assert!(prune(&[], &[], 3).is_err());
        assert!(prune(&[0.1, 0.1], &[1.0, 1.0], 3).is_err());
        assert!(prune(&[0.1, 0.2], &[1.0, 1.0], 0).is_err());
    }
}
