//! The decomposition of a request stream by a response-time threshold (Lu, Jin and Varman,
//! "RTT: graduated QoS by decomposing bursts", ICDCS 2009; the decomposition algorithm Wang's
//! Nested QoS thesis cites for choosing a class, §3.2.3, its ref. [31]; `docs/nested-qos.md`).
//!
//! Requests in arrival order are offered to a *primary* FIFO queue served at `rate` (work
//! seconds per second, a utilisation). Request `k` (arrival `a_k` s, work `x_k` s) stays in the
//! primary stream when it would finish there within `delta` of arriving, given only the requests
//! kept before it; otherwise it is moved out (to the overflow stream, which takes no service
//! from the primary queue):
//!
//! ```text
//! f_k = max(F_{k−1}, a_k) + x_k / rate;   keep_k = (f_k − a_k ≤ δ);   F_k = keep_k ? f_k : F_{k−1}
//! ```
//!
//! with `F_0 = −∞`. Every kept request finishes within `δ` at `rate`, so the kept stream
//! conforms to the token bucket `(rate · δ, rate)` (its work arriving in `[s, t]` is served
//! within `[s, t + δ]`). Unlike a FIFO server that serves every request, the excess of a burst
//! does not delay the requests after it, so a smaller rate keeps a given fraction.

use crate::error::{Error, Result};

/// Relative slack on `δ`, so that floating-point sums never move out a request that finishes
/// exactly at its deadline.
const SLACK: f64 = 1e-12;

/// Which requests stay in the primary stream (module documentation): `time` arrivals (s,
/// non-decreasing), `work` per request (s of work at `rate` 1), `rate` > 0, `delta` ≥ 0 (s).
///
/// Rejects arrays of different lengths, a decreasing arrival, non-finite or negative work, a
/// rate not positive and finite, or a `delta` negative or not finite.
pub fn primary(time: &[f64], work: &[f64], rate: f64, delta: f64) -> Result<Vec<bool>> {
    check(time, work, rate, delta)?;
    let limit = delta * (1.0 + SLACK);
    let mut finish = f64::NEG_INFINITY;
    Ok(time
        .iter()
        .zip(work)
        .map(|(&a, &x)| {
            let done = finish.max(a) + x / rate;
            let keep = done - a <= limit;
            if keep {
                finish = done;
            }
            keep
        })
        .collect())
}

/// How many requests stay in the primary stream: the count of [`primary`], without the mask.
pub fn primary_count(time: &[f64], work: &[f64], rate: f64, delta: f64) -> Result<usize> {
    check(time, work, rate, delta)?;
    let limit = delta * (1.0 + SLACK);
    let mut finish = f64::NEG_INFINITY;
    let mut kept = 0;
    for (&a, &x) in time.iter().zip(work) {
        let done = finish.max(a) + x / rate;
        if done - a <= limit {
            finish = done;
            kept += 1;
        }
    }
    Ok(kept)
}

fn check(time: &[f64], work: &[f64], rate: f64, delta: f64) -> Result<()> {
    if time.len() != work.len() {
        return Err(Error::Invalid(format!(
            "decomposition: {} arrivals but {} work values",
            time.len(),
            work.len()
        )));
    }
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(Error::Invalid(format!(
            "decomposition: rate must be > 0 and finite, got {rate}"
        )));
    }
    if !(delta >= 0.0 && delta.is_finite()) {
        return Err(Error::Invalid(format!(
            "decomposition: delta must be >= 0 and finite, got {delta}"
        )));
    }
    if let Some(k) = work.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
        return Err(Error::Invalid(format!(
            "decomposition: request {k} has work {}, expected finite and >= 0",
            work[k]
        )));
    }
    if time.iter().any(|t| !t.is_finite()) {
        return Err(Error::Invalid("decomposition: arrivals must be finite".into()));
    }
    if let Some(k) = time.windows(2).position(|w| w[1] < w[0]) {
        return Err(Error::Invalid(format!(
            "decomposition: arrivals must be non-decreasing, request {} at {} after {}",
            k + 1,
            time[k + 1],
            time[k]
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_keeps_what_fits_and_the_request_after_it() {
        // four 1 ms requests at 0, one at 3.5 ms, δ = 2 ms at rate 1: the first two finish at
        // 1 and 2 ms, the third and fourth would finish at 3 ms (moved out, taking no service),
        // the fifth finds the queue empty and finishes at 4.5 ms.
        let time = [0.0, 0.0, 0.0, 0.0, 0.0035];
        let work = [1e-3; 5];
        let keep = primary(&time, &work, 1.0, 2e-3).unwrap();
        assert_eq!(keep, [true, true, false, false, true]);
        assert_eq!(primary_count(&time, &work, 1.0, 2e-3).unwrap(), 3);
        // a FIFO server of every request would finish the fifth at 5 ms (1.5 ms late)
    }

    #[test]
    fn a_moved_request_does_not_delay_a_later_small_one() {
        // a 3 ms request cannot fit 2 ms at rate 1 at all; the 1 ms one after it still does
        let keep = primary(&[0.0, 0.0, 0.0], &[1e-3, 3e-3, 1e-3], 1.0, 2e-3).unwrap();
        assert_eq!(keep, [true, false, true]);
        // twice the rate: 0.5 ms, then 1.5 ms finishing at 2 ms, then 2.5 ms > 2 ms
        let keep = primary(&[0.0, 0.0, 0.0], &[1e-3, 3e-3, 1e-3], 2.0, 2e-3).unwrap();
        assert_eq!(keep, [true, true, false]);
    }

    #[test]
    fn with_uniform_work_the_count_is_non_decreasing_in_the_rate() {
        // the bisection of the Python side finds the least rate when it is; a deterministic
        // pseudo-random trace of bursts and gaps
        let mut state = 12345_u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut t = 0.0;
        let (mut time, mut work) = (vec![], vec![]);
        for _ in 0..2000 {
            t += if next() < 0.2 { 0.0 } else { next() * 2e-3 };
            time.push(t);
            work.push(1e-3);
        }
        let mut last = 0;
        for k in 1..200 {
            let n = primary_count(&time, &work, 0.01 * f64::from(k), 5e-3).unwrap();
            assert!(n >= last, "rate {}: {n} < {last}", 0.01 * f64::from(k));
            last = n;
        }
        assert_eq!(last, time.len());
    }

    #[test]
    fn with_work_of_different_sizes_a_faster_rate_can_keep_fewer() {
        // δ = 2.2 ms: at rate 1 the 2.1 ms request fits and blocks both 1 ms ones; at rate 0.94
        // it does not (2.23 ms) and both 1 ms ones do (1.06 and 2.13 ms)
        let (time, work) = ([0.0; 3], [2.1e-3, 1e-3, 1e-3]);
        assert_eq!(primary_count(&time, &work, 1.0, 2.2e-3).unwrap(), 1);
        assert_eq!(primary_count(&time, &work, 0.94, 2.2e-3).unwrap(), 2);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(primary(&[0.0], &[1.0, 2.0], 1.0, 1.0).is_err());
        assert!(primary(&[1.0, 0.0], &[1.0, 1.0], 1.0, 1.0).is_err());
        assert!(primary(&[0.0], &[-1.0], 1.0, 1.0).is_err());
        assert!(primary(&[0.0], &[1.0], 0.0, 1.0).is_err());
        assert!(primary(&[0.0], &[1.0], 1.0, f64::NAN).is_err());
        assert!(primary_count(&[f64::NAN], &[1.0], 1.0, 1.0).is_err());
        assert_eq!(primary(&[], &[], 1.0, 1.0).unwrap(), Vec::<bool>::new());
    }
}
