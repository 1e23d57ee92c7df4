//! Leaky token buckets (thesis §2.2): a request adds its tokens (seconds of work) to the bucket,
//! which leaks at rate `r` (a utilisation); the request conforms if the bucket has room for them
//! without exceeding its size `b` (seconds of work). PriorityMeister enforces several buckets per
//! workload at once: a request conforms only if every bucket has room.

use crate::error::{Error, Result};

/// Tolerance on bucket room, in seconds of work, so that floating-point rounding of the leak never
/// delays a request that exactly fits.
const ROOM_EPS: f64 = 1e-12;

/// One leaky bucket `(rate, size)` with its fill level at `last`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    /// Leak rate, a utilisation of the stage (work seconds per second), `0 < rate`.
    pub rate: f64,
    /// Size in seconds of work, `size >= 0`. A request larger than the bucket waits for it to
    /// empty, so `size = 0` paces requests at `rate` (the effective-bandwidth baseline's `b = 0`).
    pub size: f64,
    level: f64,
    last: f64,
}

impl TokenBucket {
    /// An empty bucket; rejects a non-positive rate, a negative size or non-finite parameters.
    pub fn new(rate: f64, size: f64) -> Result<Self> {
        if !(rate > 0.0 && rate.is_finite() && size >= 0.0 && size.is_finite()) {
            return Err(Error::Invalid(format!(
                "a token bucket needs rate > 0 and size >= 0, got ({rate}, {size})"
            )));
        }
        Ok(Self { rate, size, level: 0.0, last: f64::NEG_INFINITY })
    }

    fn level_at(&self, now: f64) -> f64 {
        if self.last == f64::NEG_INFINITY {
            return 0.0;
        }
        (self.level - self.rate * (now - self.last)).max(0.0)
    }

    /// The earliest time `>= now` at which `cost` tokens fit. A request larger than the bucket
    /// fits once the bucket is empty (it could never conform otherwise; it then overfills it).
    pub fn ready_at(&self, cost: f64, now: f64) -> f64 {
        let level = self.level_at(now);
        let excess = level + cost.min(self.size) - self.size;
        if excess <= ROOM_EPS {
            now
        } else {
            now + excess / self.rate
        }
    }

    /// Add `cost` tokens at `now` (the caller has checked [`Self::ready_at`]).
    pub fn charge(&mut self, cost: f64, now: f64) {
        self.level = self.level_at(now) + cost;
        self.last = now;
    }

    /// Leak `seconds` more at `now` than the clock says (pClock's tag shift: the workload is
    /// treated as if its requests had come `seconds` earlier).
    pub fn leak(&mut self, seconds: f64, now: f64) {
        self.level = (self.level_at(now) - self.rate * seconds).max(0.0);
        self.last = now;
    }
}

/// All the buckets of one workload at one queue; empty means unlimited.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BucketSet {
    buckets: Vec<TokenBucket>,
}

impl BucketSet {
    /// Buckets from `(rate, size)` pairs.
    pub fn new(pairs: &[(f64, f64)]) -> Result<Self> {
        let buckets = pairs.iter().map(|&(r, b)| TokenBucket::new(r, b)).collect::<Result<_>>()?;
        Ok(Self { buckets })
    }

    /// Whether the set limits anything.
    pub fn is_unlimited(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The earliest time `>= now` at which every bucket has room for `cost`.
    pub fn ready_at(&self, cost: f64, now: f64) -> f64 {
        self.buckets.iter().fold(now, |t, b| t.max(b.ready_at(cost, now)))
    }

    /// Charge `cost` tokens to every bucket.
    pub fn charge(&mut self, cost: f64, now: f64) {
        for b in &mut self.buckets {
            b.charge(cost, now);
        }
    }

    /// [`TokenBucket::leak`] every bucket.
    pub fn leak(&mut self, seconds: f64, now: f64) {
        for b in &mut self.buckets {
            b.leak(seconds, now);
        }
    }
}

/// The output times of a FIFO token-bucket shaper: request `i` arrives at `arrival[i]` with
/// `cost[i]` tokens and leaves as soon as it is at the head and every bucket has room,
/// `release_i = min{t ≥ max(arrival_i, release_{i−1}) : every bucket fits cost_i at t}`.
/// The released stream conforms to every `(r, b)` (requests larger than `b` excepted).
pub fn shape(arrival: &[f64], cost: &[f64], buckets: &[(f64, f64)]) -> Result<Vec<f64>> {
    if arrival.len() != cost.len() {
        return Err(Error::Invalid("arrival and cost need the same length".into()));
    }
    let mut set = BucketSet::new(buckets)?;
    let mut prev = f64::NEG_INFINITY;
    let mut out = Vec::with_capacity(arrival.len());
    for (&a, &c) in arrival.iter().zip(cost) {
        let t = set.ready_at(c, a.max(prev));
        set.charge(c, t);
        out.push(t);
        prev = t;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_releases_conforming_stream() {
        let out = shape(&[0.0, 0.0, 0.0, 10.0], &[1.0, 1.0, 1.0, 1.0], &[(0.5, 2.0)]).unwrap();
        assert_eq!(out[..2], [0.0, 0.0]);
        assert!((out[2] - 2.0).abs() < 1e-12);
        assert_eq!(out[3], 10.0);
    }

    #[test]
    fn bucket_admits_burst_then_paces_at_rate() {
        let mut b = TokenBucket::new(0.5, 2.0).unwrap();
        assert_eq!(b.ready_at(1.0, 0.0), 0.0);
        b.charge(1.0, 0.0);
        b.charge(1.0, 0.0);
        // full: one more unit of work needs 1 / 0.5 = 2 s of leaking
        assert!((b.ready_at(1.0, 0.0) - 2.0).abs() < 1e-12);
        assert_eq!(b.ready_at(1.0, 3.0), 3.0);
    }

    #[test]
    fn bucket_larger_request_than_size_waits_for_empty() {
        let mut b = TokenBucket::new(1.0, 1.0).unwrap();
        b.charge(0.5, 0.0);
        assert!((b.ready_at(5.0, 0.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn bucket_of_size_zero_paces_at_its_rate() {
        // b = 0: every request waits for the previous one's tokens to leak away.
        let out = shape(&[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0], &[(0.5, 0.0)]).unwrap();
        assert_eq!(out, vec![0.0, 2.0, 4.0]);
        assert!(TokenBucket::new(0.5, -1.0).is_err());
    }

    #[test]
    fn bucket_leak_credits_tokens_down_to_empty() {
        let mut b = TokenBucket::new(0.5, 2.0).unwrap();
        b.charge(3.0, 0.0); // 1 over: room for 1 more at (3 + 1 − 2) / 0.5 = 4
        assert!((b.ready_at(1.0, 0.0) - 4.0).abs() < 1e-12);
        b.leak(2.0, 0.0); // as if 2 s had passed: level 2, room for 1 at 2
        assert!((b.ready_at(1.0, 0.0) - 2.0).abs() < 1e-12);
        b.leak(100.0, 0.0); // never below empty
        b.charge(2.0, 0.0);
        assert_eq!(b.ready_at(0.0, 0.0), 0.0);
        assert!((b.ready_at(1.0, 0.0) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn bucket_set_needs_room_in_every_bucket() {
        let mut s = BucketSet::new(&[(1.0, 1.0), (0.1, 10.0)]).unwrap();
        s.charge(1.0, 0.0);
        // the fast bucket is full for 1 s; the slow one still has room
        assert!((s.ready_at(1.0, 0.0) - 1.0).abs() < 1e-12);
        assert!(BucketSet::new(&[(0.0, 1.0)]).is_err());
    }
}
