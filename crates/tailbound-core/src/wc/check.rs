//! wcLatencyChecker (thesis §5.2.1): each queue within capacity (Eq. 5.4) and each tenant's
//! bound, the sum over its three queues of Eq. 5.1 (Eq. 5.5) plus its delay in its own
//! token-bucket shaper at each stage, within its SLO.
//!
//! `rate` and `bucket` hold each tenant's `(r, b)` per stage (utilisation, seconds of work).

use super::{queue_ids, validate_limits, ModelTerms, Placed, RATE_CAP, STORAGE};
use crate::{Error, Result};

/// numpy's `maximum`: NaN wins.
fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Sum of configured rates per queue: `[net_in, net_out, storage_0, ..]` over `devices`
/// devices, for tenants on devices `device_of` with rates `rate`; an error when a tenant's
/// device is not among them.
pub fn queue_rate_sums(device_of: &[usize], rate: &[[f64; 3]], devices: usize) -> Result<Vec<f64>> {
    if rate.len() != device_of.len() {
        return Err(Error::Invalid(format!(
            "rate: {} rows for {} tenants",
            rate.len(),
            device_of.len()
        )));
    }
    if let Some(d) = device_of.iter().find(|&&d| d >= devices) {
        return Err(Error::Invalid(format!(
            "a tenant is on device {d} of a server with {devices}"
        )));
    }
    let mut sums = vec![0.0; 2 + devices];
    for s in 0..3 {
        for (&d, r) in device_of.iter().zip(rate) {
            sums[[0, 2 + d, 1][s]] += r[s];
        }
    }
    Ok(sums)
}

/// Eq. 5.1 for each tenant at each of its queues:
/// `(c_j + Σ_{k same queue, SLO_k <= SLO_j} b_k) / (1 − Σ_{k same queue, SLO_k < SLO_j} r_k)`
/// (infinite when the rate sum reaches 1), with `c_j` the model's constants and, at a device
/// where equal levels share, `SLO_k <= SLO_j` in the rate sum too.
pub fn queue_delays(
    tenants: &[Placed<'_>],
    rate: &[[f64; 3]],
    bucket: &[[f64; 3]],
    model: ModelTerms<'_>,
) -> Result<Vec<[f64; 3]>> {
    let n = tenants.len();
    validate_limits(n, rate, bucket)?;
    model.validate(n)?;
    let q = queue_ids(tenants);
    let mut out = vec![[0.0; 3]; n];
    for (j, t) in tenants.iter().enumerate() {
        let slo = t.tenant.slo_s;
        let extra = model.of(j);
        for s in 0..3 {
            let shared = s == STORAGE && model.shares_levels;
            let (mut b_sum, mut r_sum) = (0.0, 0.0);
            for (k, u) in tenants.iter().enumerate() {
                if q[k][s] != q[j][s] {
                    continue;
                }
                let other = u.tenant.slo_s;
                if other <= slo {
                    b_sum += bucket[k][s];
                }
                if other < slo || (shared && other == slo) {
                    r_sum += rate[k][s];
                }
            }
            b_sum += extra[s];
            out[j][s] = if r_sum < 1.0 { b_sum / (1.0 - r_sum).max(1e-300) } else { f64::INFINITY };
        }
    }
    Ok(out)
}

/// Each tenant's delay in its own token-bucket shaper at each stage:
/// `h(α, r t + b) = max_i ((α(x_i) − b)/r − x_i)+` over the breakpoints of its arrival curve
/// `α` (for `r = 0`: 0 when `b` covers the curve's last breakpoint, else infinite), infinite
/// when `r` is below the curve's tail rate.
pub fn shaper_delays(
    tenants: &[Placed<'_>],
    rate: &[[f64; 3]],
    bucket: &[[f64; 3]],
) -> Result<Vec<[f64; 3]>> {
    validate_limits(tenants.len(), rate, bucket)?;
    let mut out = vec![[0.0; 3]; tenants.len()];
    for (j, t) in tenants.iter().enumerate() {
        for s in 0..3 {
            let a = &t.tenant.arrival[s];
            let (r, b) = (rate[j][s], bucket[j][s]);
            let positive = r > 0.0;
            let divisor = if positive { r } else { 1.0 };
            let mut worst = f64::NEG_INFINITY;
            for (x, y) in a.xs.iter().zip(&a.ys) {
                let d = (y - b) / divisor - x;
                worst = if worst == f64::NEG_INFINITY { d } else { nan_max(worst, d) };
            }
            let delay = if positive {
                nan_max(0.0, worst)
            } else if *a.ys.last().expect("an arrival curve has a point") <= b {
                0.0
            } else {
                f64::INFINITY
            };
            out[j][s] = if a.tail > r * (1.0 + 1e-12) + 1e-15 { f64::INFINITY } else { delay };
        }
    }
    Ok(out)
}

/// Each tenant's predicted worst-case latency (s): its queue delays plus its shaper delays,
/// summed over its three stages.
pub fn latency_bounds(
    tenants: &[Placed<'_>],
    rate: &[[f64; 3]],
    bucket: &[[f64; 3]],
    model: ModelTerms<'_>,
) -> Result<Vec<f64>> {
    let queue = queue_delays(tenants, rate, bucket, model)?;
    let shaper = shaper_delays(tenants, rate, bucket)?;
    Ok(queue
        .iter()
        .zip(&shaper)
        .map(|(q, h)| (q[0] + h[0]) + (q[1] + h[1]) + (q[2] + h[2]))
        .collect())
}

/// The wcLatencyChecker: every queue within capacity (`Σ r <= 0.999 + 1e-9`) and every bound
/// within its SLO (`<= SLO (1 + 1e-9)`).
pub fn check(
    tenants: &[Placed<'_>],
    rate: &[[f64; 3]],
    bucket: &[[f64; 3]],
    devices: usize,
    model: ModelTerms<'_>,
) -> Result<bool> {
    validate_limits(tenants.len(), rate, bucket)?;
    let device_of: Vec<usize> = tenants.iter().map(|t| t.device).collect();
    if queue_rate_sums(&device_of, rate, devices)?.iter().any(|&s| s > RATE_CAP + 1e-9) {
        return Ok(false);
    }
    let bounds = latency_bounds(tenants, rate, bucket, model)?;
    Ok(bounds.iter().zip(tenants).all(|(b, t)| *b <= t.tenant.slo_s * (1.0 + 1e-9)))
}

#[cfg(test)]
mod tests {
    use super::super::WcTenant;
    use super::*;

    fn tenant(slo: f64) -> WcTenant {
        let r = [0.1, 0.5, 1.0];
        let b = [0.05, 0.01, 0.0];
        WcTenant::new(slo, [&r, &r, &r], [&b, &b, &b]).unwrap()
    }

    #[test]
    fn eq51_of_two_levels() {
        let (a, b) = (tenant(0.1), tenant(0.5));
        let placed = [Placed { tenant: &a, device: 0 }, Placed { tenant: &b, device: 0 }];
        let rate = [[0.5; 3], [0.2; 3]];
        let bucket = [[0.01; 3], [0.03; 3]];
        let d = queue_delays(&placed, &rate, &bucket, ModelTerms::default()).unwrap();
        assert_eq!(d[0], [0.01; 3]); // the top level: its own bucket
        assert_eq!(d[1][0], (0.01 + 0.03) / (1.0 - 0.5));
        // a's (0.5, 0.01) lies on its curve: no shaper delay; b's 0.2 is above its mean
        let h = shaper_delays(&placed, &rate, &bucket).unwrap();
        assert_eq!(h[0], [0.0; 3]);
        assert!(h[1][0] > 0.0 && h[1][0].is_finite());
        let sums = queue_rate_sums(&[0, 0], &rate, 1).unwrap();
        assert_eq!(sums, vec![0.7, 0.7, 0.7]);
        assert!(queue_rate_sums(&[0, 0], &rate, 0).is_err());
    }

    #[test]
    fn a_rate_below_the_mean_is_an_infinite_delay() {
        let a = tenant(0.1);
        let placed = [Placed { tenant: &a, device: 0 }];
        let h = shaper_delays(&placed, &[[0.05, 0.5, 0.5]], &[[1.0; 3]]).unwrap();
        assert!(h[0][0].is_infinite());
        let ok = check(&placed, &[[0.05, 0.5, 0.5]], &[[1.0; 3]], 1, ModelTerms::default());
        assert!(!ok.unwrap());
        assert!(check(&placed, &[[0.5; 3]], &[[0.01; 3]], 1, ModelTerms::default()).unwrap());
        assert!(check(&placed, &[[f64::NAN; 3]], &[[0.01; 3]], 1, ModelTerms::default()).is_err());
    }
}
