//! The RPC network latency (RNL) of Aequitas and its tail (SIGCOMM 2022, §2.2.1 and Appendix A).
//!
//! RNL is `t1 − t0`: `t0` when the RPC's first packet reaches the transport (its issue into the
//! channel, so its wait in the channel's RPC FIFO counts), `t1` when its last packet is
//! acknowledged; only the payload direction counts. The SLO is normalised per MTU: an RPC of
//! `size` MTUs meets a target `T` when `RNL / size < T` (Algorithm 1, line 15), so a larger RPC
//! gets a proportionally larger absolute target. A size in MTUs is a whole number of packets,
//! `⌈bytes / payload per packet⌉` (the authors' simulator: `size_in_pkt = ceil(size / mss)` with
//! `mss = mtu − hdr_size = 5120 − 40`, so a 32 KiB RPC is 7 MTUs).
//!
//! Tails: [`percentile`] is the inverted CDF (the smallest value with at least a fraction `p` at
//! or below it), as `tailbound.sim.results.percentile`. [`tail_over_middle`] takes it over the
//! middle `keep` of the RPCs ranked by start time, as the authors' simulator reports its tails
//! over the middle 80% (`run/experiment.cpp`, dropping warm-up and drain).
//!
//! ```
//! use tailbound_core::control::aequitas::rnl::{rnl_per_mtu, size_in_mtus, ARTIFACT_MSS_BYTES};
//! let size = size_in_mtus(32768.0, ARTIFACT_MSS_BYTES).unwrap();
//! assert_eq!(size, 7.0);
//! assert!((rnl_per_mtu(1.0e-3, 1.0e-3 + 21e-6, size).unwrap() - 3e-6).abs() < 1e-15);
//! ```

use crate::error::{Error, Result};

/// The authors' simulator's MTU, bytes on the wire (`mtu: 5120`).
pub const ARTIFACT_MTU_BYTES: f64 = 5120.0;
/// The authors' simulator's header per packet, bytes (`hdr_size`, 40).
pub const ARTIFACT_HEADER_BYTES: f64 = 40.0;
/// The payload of one of its packets, bytes (`mss = mtu − hdr_size`).
pub const ARTIFACT_MSS_BYTES: f64 = ARTIFACT_MTU_BYTES - ARTIFACT_HEADER_BYTES;

/// The size in MTUs of an RPC of `bytes` payload bytes (positive) with `mss_bytes` of payload a
/// packet: `⌈bytes / mss⌉`.
pub fn size_in_mtus(bytes: f64, mss_bytes: f64) -> Result<f64> {
    if !(bytes.is_finite() && bytes > 0.0) {
        return Err(Error::Invalid(format!("bytes must be > 0, got {bytes}")));
    }
    if !(mss_bytes.is_finite() && mss_bytes > 0.0) {
        return Err(Error::Invalid(format!("mss_bytes must be > 0, got {mss_bytes}")));
    }
    Ok((bytes / mss_bytes).ceil())
}

/// The RNL in seconds of an RPC issued into its channel at `issue_s` whose last packet was
/// acknowledged at `last_ack_s` (not before the issue).
pub fn rnl(issue_s: f64, last_ack_s: f64) -> Result<f64> {
    if !(issue_s.is_finite() && last_ack_s.is_finite() && last_ack_s >= issue_s) {
        return Err(Error::Invalid(format!(
            "the last ACK ({last_ack_s} s) must be finite and not before the issue ({issue_s} s)"
        )));
    }
    Ok(last_ack_s - issue_s)
}

/// The RNL per MTU, seconds: [`rnl`] divided by `size_mtus` (positive).
pub fn rnl_per_mtu(issue_s: f64, last_ack_s: f64, size_mtus: f64) -> Result<f64> {
    if !(size_mtus.is_finite() && size_mtus > 0.0) {
        return Err(Error::Invalid(format!("size must be > 0 MTUs, got {size_mtus}")));
    }
    Ok(rnl(issue_s, last_ack_s)? / size_mtus)
}

fn check_p(p: f64) -> Result<()> {
    if !(p > 0.0 && p <= 1.0) {
        return Err(Error::Invalid(format!("the percentile must be in (0, 1], got {p}")));
    }
    Ok(())
}

/// The `p`-percentile (`0 < p ≤ 1`) of `values` by the inverted CDF: the `⌈p·n⌉`-th smallest;
/// NaN when empty. Values must not be NaN.
pub fn percentile(values: &[f64], p: f64) -> Result<f64> {
    check_p(p)?;
    if values.iter().any(|v| v.is_nan()) {
        return Err(Error::Invalid("the values must not be NaN".into()));
    }
    if values.is_empty() {
        return Ok(f64::NAN);
    }
    let mut v = values.to_vec();
    // ⌈p·n⌉ with a tolerance, so that 0.999 · 1000 is 999 and not 1000 by rounding.
    let rank = ((p * v.len() as f64) - 1e-9).ceil().max(1.0) as usize;
    let (_, x, _) = v.select_nth_unstable_by(rank - 1, f64::total_cmp);
    Ok(*x)
}

/// The `p`-percentile of `values` over the RPCs whose rank by `start_s` (ties by position) lies
/// in the middle fraction `keep ∈ (0, 1]`: ranks `⌊n(1 − keep)/2⌋ .. ⌊n(1 + keep)/2⌋`. NaN when
/// none is kept.
pub fn tail_over_middle(start_s: &[f64], values: &[f64], p: f64, keep: f64) -> Result<f64> {
    check_p(p)?;
    if !(keep > 0.0 && keep <= 1.0) {
        return Err(Error::Invalid(format!("keep must be in (0, 1], got {keep}")));
    }
    if start_s.len() != values.len() {
        return Err(Error::Invalid(format!(
            "{} start times for {} values",
            start_s.len(),
            values.len()
        )));
    }
    if start_s.iter().any(|t| t.is_nan()) {
        return Err(Error::Invalid("the start times must not be NaN".into()));
    }
    let n = values.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| start_s[a].total_cmp(&start_s[b]));
    // Floors with a tolerance, so that 10 · (1 − 0.8) / 2 is 1 and not 0 by rounding.
    let lo = (n as f64 * (1.0 - keep) / 2.0 + 1e-9).floor() as usize;
    let hi = ((n as f64 * (1.0 + keep) / 2.0 + 1e-9).floor() as usize).min(n);
    let kept: Vec<f64> = order[lo..hi].iter().map(|&i| values[i]).collect();
    percentile(&kept, p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_in_mtus_rounds_up_to_whole_packets() {
        assert_eq!(size_in_mtus(32768.0, ARTIFACT_MSS_BYTES).unwrap(), 7.0); // 6.45 → 7
        assert_eq!(size_in_mtus(65536.0, ARTIFACT_MSS_BYTES).unwrap(), 13.0); // 12.9 → 13
        assert_eq!(size_in_mtus(5080.0, ARTIFACT_MSS_BYTES).unwrap(), 1.0);
        assert_eq!(size_in_mtus(5081.0, ARTIFACT_MSS_BYTES).unwrap(), 2.0);
        assert_eq!(size_in_mtus(1.0, ARTIFACT_MSS_BYTES).unwrap(), 1.0);
        assert!(size_in_mtus(0.0, 5080.0).is_err());
        assert!(size_in_mtus(100.0, 0.0).is_err());
    }

    #[test]
    fn rnl_counts_the_fifo_wait_and_divides_by_size() {
        // Issued at 10 µs, waited 5 µs in the channel FIFO, sent, last ACK at 45 µs.
        assert!((rnl(10e-6, 45e-6).unwrap() - 35e-6).abs() < 1e-18);
        assert!((rnl_per_mtu(10e-6, 45e-6, 7.0).unwrap() - 5e-6).abs() < 1e-18);
        assert_eq!(rnl(1.0, 1.0).unwrap(), 0.0);
        assert!(rnl(2.0, 1.0).is_err());
        assert!(rnl(f64::NAN, 1.0).is_err());
        assert!(rnl_per_mtu(0.0, 1.0, 0.0).is_err());
    }

    #[test]
    fn percentile_is_the_inverted_cdf() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&v, 0.75).unwrap(), 3.0);
        assert_eq!(percentile(&v, 0.76).unwrap(), 4.0);
        assert_eq!(percentile(&v, 1.0).unwrap(), 4.0);
        assert_eq!(percentile(&v, 0.01).unwrap(), 1.0);
        let thousand: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(percentile(&thousand, 0.999).unwrap(), 999.0);
        assert!(percentile(&[], 0.5).unwrap().is_nan());
        assert!(percentile(&v, 0.0).is_err());
        assert!(percentile(&[f64::NAN], 0.5).is_err());
    }

    #[test]
    fn tail_over_middle_drops_warm_up_and_drain() {
        // Ten RPCs started at 0..9 s (given out of order); the first and last (by start) are huge.
        let start = [9.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let value = [100.0, 100.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        assert_eq!(tail_over_middle(&start, &value, 1.0, 0.8).unwrap(), 8.0);
        assert_eq!(tail_over_middle(&start, &value, 1.0, 1.0).unwrap(), 100.0);
        assert_eq!(tail_over_middle(&start, &value, 0.5, 0.8).unwrap(), 4.0);
        assert!(tail_over_middle(&start, &value[..3], 1.0, 0.8).is_err());
        assert!(tail_over_middle(&start, &value, 1.0, 0.0).is_err());
        assert!(tail_over_middle(&[], &[], 0.9, 0.8).unwrap().is_nan());
    }
}
