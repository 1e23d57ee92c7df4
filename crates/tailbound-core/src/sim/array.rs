//! A disk array's service model (PSLO, `docs/pslo.md`, the paper's Fig. 4): throughput grows
//! with the requests outstanding up to a knee, then falls, and the tail rises with them.
//!
//! The default device model (`device.rs`) is processor sharing of a unit rate: throughput never
//! depends on depth, which the other systems' bounds need. A striped array (the paper's 16-disk
//! RAID-0) is not like that: requests on different spindles proceed in parallel, so throughput
//! grows with depth, until the spindles are busy and further requests only queue inside the array
//! and interfere (longer seeks, controller contention). This model says that with four
//! parameters; every dispatched request progresses at the same speed, so the device's virtual
//! clock stays exact.
//!
//! **Model.** A request's work `w` is seconds of service on one *channel* (a spindle, the token
//! or disk model's cost), multiplied at dispatch by a per-request factor `m` (below). With `n`
//! requests in service, each progresses at speed (seconds of work per second)
//!
//! - `s(n) = 1 / (1 + β·(n − 1))` for `n ≤ K` (`K = channels`, `β = interference`: requests
//!   sharing the array's controller slow each other a little), and
//! - `s(n) = s(K) · (K / n) / (1 + α·(n − K))` for `n > K` (`α = thrash`: the `K` channels are
//!   shared by `n` requests, and every request beyond the knee costs each a further fraction α).
//!
//! So the throughput `X(n) = n·s(n)` (in requests of unit work per second) rises as
//! `n / (1 + β(n − 1))` up to `K` (monotone for `β < 1`), peaks at the knee
//! `X(K) = K / (1 + β(K − 1))`, and falls as `X(K) / (1 + α(n − K))` beyond it (flat for
//! `α = 0`); a request's time in service `w·m / s(n)` grows by the factor `1 + β` per request
//! below the knee and by `(n/K)·(1 + α(n − K))` beyond it — the jump of Fig. 4.
//!
//! **Tail.** `m` is Pareto with shape `a = tail_shape` and mean 1 (`m = x_m·U^(−1/a)`,
//! `x_m = (a − 1)/a`), `U` uniform in (0, 1] drawn deterministically from the request's index
//! and `seed` (SplitMix64), so runs stay reproducible and independent of event order. Then
//! `P(w·m/s > L) = (x_m·w / (s·L))^a`: when the speed drops by a factor `f`, violations of a
//! latency bound `L` grow by `f^a` — the calibration rule of `docs/simulator.md`. Without
//! `tail_shape` every `m` is 1.

use serde::Deserialize;

use crate::error::{Error, Result};

/// The array model's parameters (`DeviceSpec::array`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArrayModel {
    /// `K`: requests the array serves in parallel at full speed (its knee), >= 1.
    pub channels: u32,
    /// `β` in [0, 1): the slowdown each further request in service causes below the knee.
    #[serde(default)]
    pub interference: f64,
    /// `α` >= 0: the further slowdown per request beyond the knee.
    #[serde(default)]
    pub thrash: f64,
    /// Pareto shape `a > 1` of the per-request work factor (mean 1); none: no factor.
    #[serde(default)]
    pub tail_shape: Option<f64>,
    /// Seed of the per-request factors.
    #[serde(default)]
    pub seed: u64,
}

impl ArrayModel {
    /// Check every parameter's domain (`at` names the device).
    pub fn validate(&self, at: &str) -> Result<()> {
        let bad = |field: &str, why: &str| {
            Err(Error::Invalid(format!("{at}.array.{field}: {why}; got {self:?}")))
        };
        if self.channels == 0 {
            return bad("channels", "must be >= 1");
        }
        if !(0.0..1.0).contains(&self.interference) {
            return bad("interference", "must be in [0, 1)");
        }
        if !(self.thrash >= 0.0 && self.thrash.is_finite()) {
            return bad("thrash", "must be finite and >= 0");
        }
        if let Some(a) = self.tail_shape {
            if !(a > 1.0 && a.is_finite()) {
                return bad("tail_shape", "must be finite and > 1");
            }
        }
        Ok(())
    }

    /// `s(n)`: seconds of work per second each of `n >= 1` requests in service receives.
    /// Non-increasing in `n` (tested), which the device's rescheduling relies on: dispatching
    /// more requests never brings a finish forward, so the pending completion event may only
    /// fire early (`Device::reschedule`).
    pub fn speed(&self, n: u32) -> f64 {
        let k = self.channels;
        let below = |n: u32| 1.0 / (1.0 + self.interference * f64::from(n.saturating_sub(1)));
        if n <= k {
            return below(n.max(1));
        }
        let (nf, kf) = (f64::from(n), f64::from(k));
        below(k) * (kf / nf) / (1.0 + self.thrash * (nf - kf))
    }

    /// `X(n) = n·s(n)`: seconds of work served per second with `n` requests in service.
    pub fn throughput(&self, n: u32) -> f64 {
        f64::from(n) * self.speed(n)
    }

    /// Request `id`'s work factor `m` (mean 1; 1 without a tail).
    pub fn factor(&self, id: u64) -> f64 {
        let Some(a) = self.tail_shape else {
            return 1.0;
        };
        // U in (0, 1]: the top 53 bits, shifted off zero
        let u = ((splitmix64(id ^ self.seed.rotate_left(32)) >> 11) as f64 + 1.0)
            * (1.0 / (1u64 << 53) as f64);
        (a - 1.0) / a * u.powf(-1.0 / a)
    }
}

/// SplitMix64's output function (Steele, Lea and Flood, OOPSLA 2014): a well-mixed 64-bit
/// hash of `x`.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> ArrayModel {
        ArrayModel { channels: 4, interference: 0.1, thrash: 0.25, tail_shape: Some(3.0), seed: 7 }
    }

    #[test]
    fn array_throughput_rises_to_the_knee_and_falls_beyond() {
        let m = model();
        for n in 1..4 {
            assert!(m.throughput(n + 1) > m.throughput(n), "n = {n}");
        }
        for n in 4..16 {
            assert!(m.throughput(n + 1) < m.throughput(n), "n = {n}");
        }
        // hand-computed: X(4) = 4 / 1.3, X(8) = X(4) / (1 + 0.25·4)
        assert!((m.throughput(4) - 4.0 / 1.3).abs() < 1e-12);
        assert!((m.throughput(8) - 4.0 / 1.3 / 2.0).abs() < 1e-12);
        for n in 1..64 {
            assert!(m.speed(n + 1) <= m.speed(n), "n = {n}");
        }
        let flat = ArrayModel { thrash: 0.0, ..model() };
        assert!((flat.throughput(12) - flat.throughput(4)).abs() < 1e-12);
    }

    #[test]
    fn array_service_time_jumps_beyond_the_knee() {
        let m = model();
        let stretch = |n| 1.0 / m.speed(n);
        // below the knee: 1 + β per request
        assert!((stretch(4) / stretch(3) - 1.3 / 1.2).abs() < 1e-12);
        // two past it: (6/4)·(1 + 0.5) = 2.25, against 1.3/1.2 ≈ 1.08 for the step before
        assert!((stretch(6) / stretch(4) - 2.25).abs() < 1e-12);
    }

    #[test]
    fn array_tail_percentile_jumps_beyond_the_knee() {
        // the 99.9th percentile of w·m/s(n) over many requests, w = 1
        let m = model();
        let factors: Vec<f64> = (0..200_000).map(|i| m.factor(i)).collect();
        let mean = factors.iter().sum::<f64>() / factors.len() as f64;
        assert!((mean - 1.0).abs() < 0.02, "mean {mean}");
        let mut sorted = factors.clone();
        sorted.sort_by(f64::total_cmp);
        let q = sorted[(0.999 * sorted.len() as f64) as usize];
        // Pareto(3) with mean 1: quantile (2/3)·1000^(1/3) = 6.67
        assert!((q - 20.0 / 3.0).abs() < 0.5, "q {q}");
        let p = |n: u32| q / m.speed(n);
        assert!(p(4) / p(1) < 1.5);
        assert!(p(6) / p(4) > 2.0);
        // violations of the bound p(4): none-ish extra at the knee, ×f^a beyond it
        let bound = p(4);
        let over = |n: u32| factors.iter().filter(|&&f| f / m.speed(n) > bound).count();
        assert!(over(3) < over(4) + 1);
        assert!(over(6) > 8 * over(4));
    }

    #[test]
    fn array_factors_are_reproducible_and_seeded() {
        let m = model();
        assert_eq!(m.factor(42), m.factor(42));
        assert_ne!(m.factor(42), ArrayModel { seed: 8, ..model() }.factor(42));
        assert_eq!(ArrayModel { tail_shape: None, ..model() }.factor(42), 1.0);
    }

    #[test]
    fn array_bad_parameters_are_refused_naming_the_field() {
        let cases: [(ArrayModel, &str); 4] = [
            (ArrayModel { channels: 0, ..model() }, "channels"),
            (ArrayModel { interference: 1.0, ..model() }, "interference"),
            (ArrayModel { thrash: -0.1, ..model() }, "thrash"),
            (ArrayModel { tail_shape: Some(1.0), ..model() }, "tail_shape"),
        ];
        for (m, field) in cases {
            let e = m.validate("devices[0]").unwrap_err().to_string();
            assert!(e.contains(&format!("devices[0].array.{field}")), "{e}");
        }
        assert!(model().validate("devices[0]").is_ok());
    }
}
