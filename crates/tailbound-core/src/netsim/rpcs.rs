//! What the network simulator takes and gives: RPCs as columns in, per-RPC outcomes and run
//! counters out (the binding turns each column into a numpy array).

use crate::error::{Error, Result};

/// RPCs sorted by issue time, as columns (`tailbound.traces.rpc_arrivals.RpcArrivals`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RpcInput {
    /// Issue time, seconds, finite, ≥ 0, non-decreasing.
    pub time_s: Vec<f64>,
    /// Sending host, `< n_hosts`.
    pub src: Vec<u32>,
    /// Receiving host, `< n_hosts`, `≠ src`.
    pub dst: Vec<u32>,
    /// Payload, bytes, > 0.
    pub size_bytes: Vec<u64>,
    /// Requested class (0 the highest), `< classes`.
    pub cls: Vec<u8>,
}

impl RpcInput {
    /// Number of RPCs.
    pub fn len(&self) -> usize {
        self.time_s.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.time_s.is_empty()
    }

    /// Check the columns against a network of `n_hosts` hosts and `classes` classes; the error
    /// names the column and the row (`dst[7]`).
    pub fn validate(&self, n_hosts: u32, classes: usize) -> Result<()> {
        let n = self.time_s.len();
        let lens = [self.src.len(), self.dst.len(), self.size_bytes.len(), self.cls.len()];
        if lens.iter().any(|&k| k != n) {
            return Err(Error::Invalid(format!(
                "RPC columns of different lengths: time_s {n}, src {}, dst {}, size_bytes {}, cls {}",
                lens[0], lens[1], lens[2], lens[3]
            )));
        }
        let bad = |field: String, message: String| Err(Error::Field { field, message });
        let mut prev = 0.0;
        for i in 0..n {
            let t = self.time_s[i];
            if !(t.is_finite() && t >= prev) {
                return bad(
                    format!("time_s[{i}]"),
                    format!(
                        "must be finite, ≥ 0 and not before the previous RPC's {prev}, got {t}"
                    ),
                );
            }
            prev = t;
            let (s, d) = (self.src[i], self.dst[i]);
            if s >= n_hosts {
                return bad(format!("src[{i}]"), format!("host {s} of {n_hosts}"));
            }
            if d >= n_hosts || d == s {
                return bad(format!("dst[{i}]"), format!("host {d} of {n_hosts}, source {s}"));
            }
            if self.size_bytes[i] == 0 {
                return bad(format!("size_bytes[{i}]"), "must be > 0".into());
            }
            if usize::from(self.cls[i]) >= classes {
                return bad(format!("cls[{i}]"), format!("class {} of {classes}", self.cls[i]));
            }
        }
        Ok(())
    }
}

/// Per RPC, in input order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RpcOutcome {
    /// The class it ran at (the requested one, or the lowest when downgraded).
    pub class_run: Vec<u8>,
    /// Whether admission control downgraded it.
    pub downgraded: Vec<bool>,
    /// `p_admit` of its channel and requested class when it was issued (1 without admission
    /// control and for the lowest class).
    pub p_admit: Vec<f64>,
    /// When its last packet was acknowledged, seconds (NaN: not within the run).
    pub finish_s: Vec<f64>,
    /// Its RPC network latency, `finish_s − time_s`, seconds (NaN: unfinished).
    pub rnl_s: Vec<f64>,
    /// Its size in MTUs, `⌈size / MSS⌉` (the divisor of the per-MTU RNL).
    pub size_mtus: Vec<u32>,
}

impl RpcOutcome {
    /// Room for `n` RPCs, none finished.
    pub fn new(n: usize) -> Self {
        RpcOutcome {
            class_run: vec![0; n],
            downgraded: vec![false; n],
            p_admit: vec![1.0; n],
            finish_s: vec![f64::NAN; n],
            rnl_s: vec![f64::NAN; n],
            size_mtus: vec![0; n],
        }
    }
}

/// Counts of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Events processed.
    pub events: u64,
    /// Data packets sent, retransmissions included.
    pub data_packets: u64,
    /// Data packets sent again (go-back-N).
    pub retransmitted: u64,
    /// ACKs sent.
    pub acks: u64,
    /// Packets dropped by a full buffer, per class (data and ACKs).
    pub drops: Vec<u64>,
    /// Data packets dropped.
    pub data_drops: u64,
    /// ACKs dropped.
    pub ack_drops: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// RPCs downgraded by admission control.
    pub downgrades: u64,
    /// RPCs not finished at the end of the run.
    pub unfinished: u64,
    /// The simulated time at the end, seconds.
    pub end_s: f64,
}
