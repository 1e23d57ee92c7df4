//! rbGen: the bucket size of a token bucket at each of many rates (thesis §2.3.1, Algorithm 2.1).
//!
//! For every rate `r` the bucket of Algorithm 2.1 follows the Lindley recursion
//! `B_j = max(B_{j-1} - r (t_j - t_{j-1}), 0) + w_j` and `b(r) = max_j B_j`: the smallest bucket
//! (seconds of work) that lets the requests through without delay at a refill rate `r`
//! (a utilisation). One pass over the trace serves a chunk of [`CHUNK`] rates held in registers;
//! the inner loop over the chunk is branch-free so the compiler vectorises it, and the chunk is
//! compiled for AVX-512 and AVX2 as well as the baseline, chosen at run time.
//!
//! The variant [`rbgen_argmax`] also returns, per rate, the interval `[i, j]` of requests whose
//! bucket reached the maximum: the bucket restarts at request `j` when it had drained to zero
//! before `j` arrived, so the interval starts at the last restart. Its work `W` and duration
//! `D` give the tangent `W - r D` of the convex curve `b` at `r` (used by [`crate::rb::exact`]).

use crate::{Error, Result};

/// Rates handled per pass over the trace. 32 rates keep the state of the arg-max variant in 24
/// of the 32 AVX-512 registers (checked in the assembly: the loop has no loads or stores of
/// state). In a standalone timing of 8, 16, 32 and 64 rates per pass (on a loaded machine, so
/// noisy) 32 and 64 were fastest; 64 would not fit the arg-max state in registers.
pub const CHUNK: usize = 32;

/// Passes with at most this many rates left use a narrower kernel: one AVX-512 register per
/// state array, so a pass for the few rates of the exact curve's first levels costs less.
pub const SMALL_CHUNK: usize = 8;

/// Check that the arrays describe a trace: equal lengths, finite non-decreasing times, finite
/// non-negative tokens, finite non-negative rates.
pub fn validate(time: &[f64], tokens: &[f64], rates: &[f64]) -> Result<()> {
    if time.len() != tokens.len() {
        return Err(Error::Invalid(format!(
            "time has {} entries but tokens has {}",
            time.len(),
            tokens.len()
        )));
    }
    if let Some(j) = time.iter().position(|t| !t.is_finite()) {
        return Err(Error::Invalid(format!("time[{j}] = {} is not finite", time[j])));
    }
    if let Some(j) = time.windows(2).position(|p| p[1] < p[0]) {
        return Err(Error::Invalid(format!(
            "time must be non-decreasing: time[{}] = {} < time[{j}] = {}",
            j + 1,
            time[j + 1],
            time[j]
        )));
    }
    if let Some(j) = tokens.iter().position(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(Error::Invalid(format!(
            "tokens[{j}] = {} is not a finite value >= 0",
            tokens[j]
        )));
    }
    if let Some(k) = rates.iter().position(|r| !(r.is_finite() && *r >= 0.0)) {
        return Err(Error::Invalid(format!(
            "rates[{k}] = {} is not a finite value >= 0",
            rates[k]
        )));
    }
    Ok(())
}

/// `b(r)` (seconds of work) for every rate in `rates`, for requests arriving at `time` (seconds,
/// non-decreasing) with `tokens` (seconds of work each). `threads > 1` splits the rates.
///
/// ```
/// use tailbound_core::rb::rbgen;
/// let b = rbgen(&[0.0, 1.0, 1.5], &[1.0, 1.0, 1.0], &[0.5, 1.0, 4.0], 1).unwrap();
/// assert_eq!(b, vec![2.25, 1.5, 1.0]);
/// ```
pub fn rbgen(time: &[f64], tokens: &[f64], rates: &[f64], threads: usize) -> Result<Vec<f64>> {
    validate(time, tokens, rates)?;
    let mut out = vec![0.0; rates.len()];
    for_chunks(
        rates,
        &mut out,
        threads,
        |r, o| o.copy_from_slice(&plain::<CHUNK>(time, tokens, r)[..o.len()]),
        |r, o| o.copy_from_slice(&plain::<SMALL_CHUNK>(time, tokens, r)[..o.len()]),
    );
    Ok(out)
}

/// `b(r)` with the interval that attains it: for each rate, `(b, first, last)` where requests
/// `first..=last` are the ones whose tokens filled the bucket to `b` (the earliest such
/// interval when several tie).
pub fn rbgen_argmax(
    time: &[f64],
    tokens: &[f64],
    rates: &[f64],
    threads: usize,
) -> Result<Vec<(f64, usize, usize)>> {
    validate(time, tokens, rates)?;
    Ok(argmax_unchecked(time, tokens, rates, threads))
}

/// [`rbgen_argmax`] on arrays already validated.
pub(crate) fn argmax_unchecked(
    time: &[f64],
    tokens: &[f64],
    rates: &[f64],
    threads: usize,
) -> Vec<(f64, usize, usize)> {
    let mut out = vec![(0.0, 0, 0); rates.len()];
    fn unpack<const C: usize>(m: Argmax<C>, o: &mut [(f64, usize, usize)]) {
        for (k, slot) in o.iter_mut().enumerate() {
            *slot = (m.0[k], m.1[k] as usize, m.2[k] as usize);
        }
    }
    for_chunks(
        rates,
        &mut out,
        threads,
        |r, o| unpack(argmax::<CHUNK>(time, tokens, r), o),
        |r, o| unpack(argmax::<SMALL_CHUNK>(time, tokens, r), o),
    );
    out
}

/// Run `work` on every chunk of up to [`CHUNK`] rates (padded with the chunk's last rate) and
/// its slice of `out`, spreading chunks over `threads` scoped threads. A last chunk of at most
/// [`SMALL_CHUNK`] rates goes to `small` instead.
fn for_chunks<T: Send>(
    rates: &[f64],
    out: &mut [T],
    threads: usize,
    work: impl Fn(&[f64; CHUNK], &mut [T]) + Sync,
    small: impl Fn(&[f64; SMALL_CHUNK], &mut [T]) + Sync,
) {
    let run = |rates: &[f64], out: &mut [T]| {
        for (r, o) in rates.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            let last = *r.last().unwrap_or(&0.0);
            if r.len() <= SMALL_CHUNK {
                let mut padded = [last; SMALL_CHUNK];
                padded[..r.len()].copy_from_slice(r);
                small(&padded, o);
            } else {
                let mut padded = [last; CHUNK];
                padded[..r.len()].copy_from_slice(r);
                work(&padded, o);
            }
        }
    };
    let chunks = rates.len().div_ceil(CHUNK);
    let threads = threads.clamp(1, chunks.max(1));
    if threads == 1 {
        run(rates, out);
        return;
    }
    let per_thread = chunks.div_ceil(threads) * CHUNK;
    std::thread::scope(|s| {
        for (r, o) in rates.chunks(per_thread).zip(out.chunks_mut(per_thread)) {
            s.spawn(|| run(r, o));
        }
    });
}

/// Algorithm 2.1 for one chunk of rates. `if a > b { a } else { b }` (not `f64::max`, whose NaN
/// rule blocks vectorisation) is exact here because no value is NaN.
#[inline(always)]
fn plain_kernel<const C: usize>(time: &[f64], tokens: &[f64], r: &[f64; C]) -> [f64; C] {
    let mut bucket = [0.0f64; C];
    let mut best = [0.0f64; C];
    // Algorithm 2.1 starts at prevTime = 0 with empty buckets; starting at the first arrival
    // gives the same buckets for times >= 0 and stays right for negative times.
    let mut prev = time.first().copied().unwrap_or(0.0);
    for (&t, &w) in time.iter().zip(tokens) {
        let dt = t - prev;
        prev = t;
        for i in 0..C {
            let drained = bucket[i] - r[i] * dt;
            bucket[i] = if drained > 0.0 { drained } else { 0.0 } + w;
            best[i] = if bucket[i] > best[i] { bucket[i] } else { best[i] };
        }
    }
    best
}

/// Per rate: the maximum bucket, and the first and last request of its interval.
type Argmax<const C: usize> = ([f64; C], [f64; C], [f64; C]);

/// Algorithm 2.1 tracking the interval of the maximum. Request indices travel as `f64` lanes
/// (exact below 2^53) so that the selects vectorise alongside the buckets.
#[inline(always)]
fn argmax_kernel<const C: usize>(time: &[f64], tokens: &[f64], r: &[f64; C]) -> Argmax<C> {
    let mut bucket = [0.0f64; C];
    let mut start = [0.0f64; C];
    let mut best = [0.0f64; C];
    let mut best_first = [0.0f64; C];
    let mut best_last = [0.0f64; C];
    let mut prev = time.first().copied().unwrap_or(0.0);
    for (j, (&t, &w)) in time.iter().zip(tokens).enumerate() {
        let dt = t - prev;
        prev = t;
        let jf = j as f64;
        for i in 0..C {
            let drained = bucket[i] - r[i] * dt;
            // An emptied bucket restarts the interval at this request.
            let restart = drained <= 0.0;
            start[i] = if restart { jf } else { start[i] };
            bucket[i] = if restart { 0.0 } else { drained } + w;
            let better = bucket[i] > best[i];
            best[i] = if better { bucket[i] } else { best[i] };
            best_first[i] = if better { start[i] } else { best_first[i] };
            best_last[i] = if better { jf } else { best_last[i] };
        }
    }
    (best, best_first, best_last)
}

/// Instantiate a kernel for AVX-512, AVX2 and the baseline target and pick one at run time.
macro_rules! dispatch {
    ($name:ident, $kernel:ident, $ret:ident) => {
        fn $name<const C: usize>(time: &[f64], tokens: &[f64], r: &[f64; C]) -> $ret<C> {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn avx512<const C: usize>(time: &[f64], tokens: &[f64], r: &[f64; C]) -> $ret<C> {
                    $kernel(time, tokens, r)
                }
                #[target_feature(enable = "avx2")]
                fn avx2<const C: usize>(time: &[f64], tokens: &[f64], r: &[f64; C]) -> $ret<C> {
                    $kernel(time, tokens, r)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F, checked just above.
                    return unsafe { avx512(time, tokens, r) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    return unsafe { avx2(time, tokens, r) };
                }
            }
            $kernel(time, tokens, r)
        }
    };
}

/// The buckets' maxima of a chunk of `C` rates.
type Buckets<const C: usize> = [f64; C];

dispatch!(plain, plain_kernel, Buckets);
dispatch!(argmax, argmax_kernel, Argmax);

#[cfg(test)]
mod tests {
    use super::super::testing::uniform;
    use super::*;

    /// The definition: the most work of any interval of requests minus what drains meanwhile.
    fn brute_force(time: &[f64], tokens: &[f64], r: f64) -> f64 {
        let mut best: f64 = 0.0;
        for i in 0..time.len() {
            let mut work = 0.0;
            for j in i..time.len() {
                work += tokens[j];
                best = best.max(work - r * (time[j] - time[i]));
            }
        }
        best
    }

    /// A small deterministic pseudo-random trace (xorshift), with bursts of equal times.
    fn trace(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut next = uniform(seed);
        let mut t = 0.0;
        let mut time = Vec::new();
        let mut tokens = Vec::new();
        for _ in 0..n {
            if next() > 0.3 {
                t += next() * next();
            }
            time.push(t);
            tokens.push(next() * 0.2);
        }
        (time, tokens)
    }

    #[test]
    fn rbgen_hand_example() {
        // three unit requests at 0, 1, 1.5 s; at r = 0.5 the bucket peaks at 1 + 0.5 + 0.75
        let b = rbgen(&[0.0, 1.0, 1.5], &[1.0; 3], &[0.5], 1).unwrap();
        assert_eq!(b, vec![2.25]);
    }

    #[test]
    fn rbgen_matches_brute_force_for_many_rates_and_threads() {
        for seed in 1..20 {
            let (time, tokens) = trace(60, seed);
            let rates: Vec<f64> = (0..75).map(|k| 0.01 * k as f64).collect();
            // 75 rates: two full chunks and a small one; 5 rates: only the small kernel
            for (threads, rates) in
                [(1, &rates[..]), (2, &rates[..]), (3, &rates[..]), (1, &rates[3..8])]
            {
                let b = rbgen(&time, &tokens, rates, threads).unwrap();
                let m = rbgen_argmax(&time, &tokens, rates, threads).unwrap();
                for (k, &r) in rates.iter().enumerate() {
                    let expected = brute_force(&time, &tokens, r);
                    assert!((b[k] - expected).abs() < 1e-12, "seed {seed} r {r}");
                    assert_eq!(b[k], m[k].0);
                }
            }
        }
    }

    #[test]
    fn rbgen_argmax_interval_attains_the_maximum() {
        for seed in 1..20 {
            let (time, tokens) = trace(80, seed);
            let rates = [0.0, 0.05, 0.2, 0.7, 3.0, 1e9];
            for (k, &(b, first, last)) in
                rbgen_argmax(&time, &tokens, &rates, 1).unwrap().iter().enumerate()
            {
                assert!(first <= last && last < time.len());
                let work: f64 = tokens[first..=last].iter().sum();
                let value = work - rates[k] * (time[last] - time[first]);
                assert!((value - b).abs() < 1e-12, "seed {seed} rate {}", rates[k]);
            }
        }
    }

    #[test]
    fn rbgen_empty_trace_and_no_rates() {
        assert_eq!(rbgen(&[], &[], &[0.5, 1.0], 1).unwrap(), vec![0.0, 0.0]);
        assert!(rbgen(&[0.0], &[1.0], &[], 2).unwrap().is_empty());
    }

    #[test]
    fn rbgen_rejects_bad_input() {
        assert!(rbgen(&[0.0, 1.0], &[1.0], &[0.5], 1).is_err());
        assert!(rbgen(&[1.0, 0.0], &[1.0, 1.0], &[0.5], 1).is_err());
        assert!(rbgen(&[0.0, f64::NAN], &[1.0, 1.0], &[0.5], 1).is_err());
        assert!(rbgen(&[0.0], &[-1.0], &[0.5], 1).is_err());
        assert!(rbgen(&[0.0], &[1.0], &[-0.5], 1).is_err());
        let e = rbgen(&[1.0, 0.0], &[1.0, 1.0], &[0.5], 1).unwrap_err();
        assert!(e.to_string().contains("time[1]"), "{e}");
    }
}
