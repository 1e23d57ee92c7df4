//! The storage enforcer's disk rule for sequential writes (thesis §2.2.1, "Disk challenges").
//!
//! "If sequential write requests are executed one after another, then by the time the second
//! request is issued, it will already be too late to write the next sequential chunk of data. The
//! disk head will have already spun past the location to write the data, and an entire disk
//! rotation is necessary. So our implementation specifically identifies sequential (or nearly
//! sequential) writes and sends batches of these requests to the disk so they can be written in
//! one pass. We also limit the number of requests in a batch [...]. Note that this only applies to
//! sequential writes since sequential reads will find their data in the disk cache."
//!
//! **Model.** A write *continues* the disk's last access when that access was a write ending at
//! byte `e` and the new write starts at `o` with `0 <= o - e <= gap_bytes` (nearly sequential:
//! the skipped bytes cost `(o - e) / transfer_bandwidth` of rotation). The cost of a write at
//! dispatch is then (reads keep the token model's cost: they hit the disk cache):
//!
//! - continuing a write **still in service** (the disk has both and writes them in one pass):
//!   `skip + transfer`;
//! - continuing a write that **finished at `t_end`**: the sector passes under the head at
//!   `t_end + skip + k·revolution`; the write waits for the first passage strictly after the
//!   dispatch time `now` (dispatched at `t_end` itself it has just missed it: a whole revolution),
//!   so its cost is `wait + transfer`;
//! - not continuing the last access: the token model's cost, except that a write the token model
//!   priced as sequential (cost no more than its transfer time: it continued its own trace) but
//!   whose stream another request interrupted pays `reposition + transfer` (the head moved away).
//!
//! **Batching** (`batch_requests > 1`, decided by the dispatcher, `crate::sched::dispatch`; the
//! costs below are this model's): after dispatching a write, the dispatcher keeps asking its
//! scheduler; while the next request in the scheduler's own order is a write continuing the batch,
//! it joins the batch (at most `batch_requests` requests; the bytes limit still applies). A batch
//! holds one dispatch slot and is written in one pass: its requests are served back to back, each
//! costing `skip + transfer`, and complete one by one. The batch never overtakes a request the
//! scheduler ranks first, so priorities and rate limits are kept; the first request that does not
//! continue the batch waits at the head of the line as usual.
//!
//! Where the thesis is silent: the rotational position is tracked from the last write only (the
//! disk is assumed to have done nothing else since, which the "continues the last access" test
//! guarantees); the defaults of the scenario builder are a batch of at most 8 requests and
//! "nearly sequential" = a gap of at most 64 KiB (`docs/simulator.md`).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::sched::dispatch::WriteBatching;

/// The disk rule's parameters (absent for SSDs and memory devices).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskRules {
    /// Seconds per revolution (`60 / rpm`).
    pub revolution: f64,
    /// Media transfer rate in bytes per second.
    pub transfer_bandwidth: f64,
    /// Seconds of positioning (seek + rotation) for a write whose stream was interrupted.
    pub reposition: f64,
    /// Most requests in a batch of sequential writes; 1 disables batching.
    pub batch_requests: u32,
    /// Largest forward gap in bytes between a write and the end of the previous one for the
    /// write to count as (nearly) sequential.
    pub gap_bytes: f64,
}

impl DiskRules {
    /// Check every parameter's domain.
    pub fn validate(&self, at: &str) -> Result<()> {
        let ok = self.revolution > 0.0
            && self.revolution.is_finite()
            && self.transfer_bandwidth > 0.0
            && self.transfer_bandwidth.is_finite()
            && self.reposition >= 0.0
            && self.reposition.is_finite()
            && self.gap_bytes >= 0.0
            && self.gap_bytes.is_finite()
            && self.batch_requests >= 1;
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "{at}.disk: revolution and transfer_bandwidth must be positive, reposition and \
                 gap_bytes finite and >= 0, batch_requests >= 1; got {self:?}"
            )))
        }
    }

    /// Seconds to transfer `size` bytes.
    pub fn transfer(&self, size: f64) -> f64 {
        size / self.transfer_bandwidth
    }

    /// The dispatcher's part of the rule: which writes continue a batch, and how many a batch
    /// takes (`crate::sched::dispatch`).
    pub fn batching(&self) -> WriteBatching {
        WriteBatching { max_requests: self.batch_requests, gap_bytes: self.gap_bytes }
    }

    /// Seconds of rotation to skip a gap from byte `end` to byte `offset`, if the write at
    /// `offset` is (nearly) sequential after `end`.
    pub fn skip(&self, end: f64, offset: f64) -> Option<f64> {
        self.batching().continues(end, offset).map(|gap| gap / self.transfer_bandwidth)
    }

    /// Seconds of work of a write of `size` bytes at `offset` written in the same pass right
    /// after one ending at `end` (a batch member): the rotation over the gap and the transfer.
    pub fn continued(&self, end: f64, offset: f64, size: f64) -> f64 {
        (offset - end) / self.transfer_bandwidth + self.transfer(size)
    }

    /// Seconds a write waits at `now` for its sector, `skip` seconds of rotation past the end
    /// of a write that finished at `finished`: the first passage `finished + skip + k·revolution`
    /// strictly after `now`.
    pub fn rotation_wait(&self, finished: f64, skip: f64, now: f64) -> f64 {
        let first = finished + skip;
        if first > now {
            return first - now;
        }
        let turns = ((now - first) / self.revolution).floor() + 1.0;
        let wait = first + turns * self.revolution - now;
        // rounding can put `now` a hair past the computed passage: take the next one
        if wait <= 0.0 {
            wait + self.revolution
        } else {
            wait
        }
    }
}

/// The disk's last access, as far as the rule needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LastAccess {
    /// The request's identifier.
    pub id: u64,
    /// Whether it was a write.
    pub write: bool,
    /// Its end offset in bytes (`offset + size`; NaN if unknown).
    pub end: f64,
    /// When it finished (`None` while in service).
    pub finished: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> DiskRules {
        DiskRules {
            revolution: 0.008,
            transfer_bandwidth: 1e8,
            reposition: 0.012,
            batch_requests: 8,
            gap_bytes: 65536.0,
        }
    }

    #[test]
    fn disk_rotation_wait_is_a_revolution_right_after_the_end() {
        let r = rules();
        assert!((r.rotation_wait(1.0, 0.0, 1.0) - 0.008).abs() < 1e-12);
        assert!((r.rotation_wait(1.0, 0.0, 1.003) - 0.005).abs() < 1e-12);
        assert!((r.rotation_wait(1.0, 0.0, 1.011) - 0.005).abs() < 1e-12);
        // a gap not yet reached: wait for it in the same turn
        assert!((r.rotation_wait(1.0, 0.0005, 1.0001) - 0.0004).abs() < 1e-12);
    }

    #[test]
    fn disk_skip_accepts_only_small_forward_gaps() {
        let r = rules();
        assert_eq!(r.skip(100.0, 100.0), Some(0.0));
        assert!((r.skip(0.0, 65536.0).unwrap() - 65536.0 / 1e8).abs() < 1e-15);
        assert_eq!(r.skip(0.0, 65537.0), None);
        assert_eq!(r.skip(100.0, 99.0), None);
        assert_eq!(r.skip(f64::NAN, 0.0), None);
    }

    #[test]
    fn disk_rules_reject_bad_parameters() {
        let mut r = rules();
        assert!(r.validate("devices[0]").is_ok());
        r.batch_requests = 0;
        assert!(r.validate("devices[0]").is_err());
        let mut r = rules();
        r.revolution = 0.0;
        assert!(r.validate("devices[0]").is_err());
    }
}
