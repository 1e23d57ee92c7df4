//! Trace parsers: each turns the bytes of one trace format into columns of requests.
//!
//! Every parser takes the whole file as a byte slice and returns a [`TraceColumns`] (or, for the
//! Azure LLM format, [`azure::LlmColumns`]) in file order; sorting, validation of the finished
//! trace and the file name belong to the caller. A malformed record is an
//! [`Error::Parse`](crate::Error::Parse) naming its 1-based line (record number for binary
//! formats) and the field at fault.
//!
//! Units: time in seconds since the trace's origin, sizes and offsets in bytes.

pub mod ascii;
pub mod azure;
mod fields;
pub mod msr;
pub mod spc;
pub mod vscsi;
pub mod wc;

/// Value of [`TraceColumns::op`] for a read.
pub const READ: u8 = 0;
/// Value of [`TraceColumns::op`] for a write.
pub const WRITE: u8 = 1;

/// The requests of a parsed trace, one entry per request in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceColumns {
    /// Arrival time in seconds since `origin_s`.
    pub time: Vec<f64>,
    /// [`READ`] or [`WRITE`].
    pub op: Vec<u8>,
    /// Request size in bytes (never negative).
    pub size: Vec<i64>,
    /// Byte offset on the device, when the format records one.
    pub offset: Option<Vec<i64>>,
    /// Source id (device, disk, ASU), when the format records one.
    pub source: Option<Vec<i32>>,
    /// Absolute time of `time == 0` in seconds (0 for formats that count from the file's zero).
    pub origin_s: f64,
    /// Records deliberately left out (VSCSI commands that are neither reads nor writes).
    pub skipped: usize,
}

impl TraceColumns {
    /// Empty columns with room for `n` requests.
    fn with_capacity(n: usize, offset: bool, source: bool) -> Self {
        TraceColumns {
            time: Vec::with_capacity(n),
            op: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            offset: offset.then(|| Vec::with_capacity(n)),
            source: source.then(|| Vec::with_capacity(n)),
            origin_s: 0.0,
            skipped: 0,
        }
    }

    /// Number of requests.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// True when no request was parsed.
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }
}

/// Rebase integer timestamps counted in `ticks_per_s` ticks since an epoch: time zero becomes the
/// earliest timestamp. Returns the times in seconds and the earliest timestamp in seconds since
/// a later epoch `epoch_shift_s` seconds after the ticks' own (FILETIME to Unix, say). The whole
/// seconds are shifted as integers before the fraction is added, so that 64-bit tick counts lose
/// no more precision than the final `f64` must.
fn rebase_ticks(ticks: &[i64], ticks_per_s: i64, epoch_shift_s: i64) -> (Vec<f64>, f64) {
    let Some(&first) = ticks.iter().min() else {
        return (Vec::new(), 0.0);
    };
    let scale = ticks_per_s as f64;
    // in i128: the span of two i64 tick counts can exceed i64
    let time = ticks.iter().map(|&t| (i128::from(t) - i128::from(first)) as f64 / scale).collect();
    let whole = (first.div_euclid(ticks_per_s) - epoch_shift_s) as f64;
    let frac = first.rem_euclid(ticks_per_s) as f64 / scale;
    (time, whole + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebase_ticks_counts_from_the_earliest() {
        let (time, origin) = rebase_ticks(&[30, 10, 25], 10, 0);
        assert_eq!(time, vec![2.0, 0.0, 1.5]);
        assert_eq!(origin, 1.0);
    }

    #[test]
    fn rebase_ticks_keeps_sub_second_origin_of_large_counts() {
        // 1.7e18 ns plus 123 ns: `t as f64` alone would round the 123 ns away (its ulp is 256).
        let t = 1_700_000_000_000_000_123_i64;
        let (_, origin) = rebase_ticks(&[t], 1_000_000_000, 0);
        assert_eq!(origin, 1_700_000_000.0 + 123e-9);
        assert!(origin > 1_700_000_000.0);
    }

    #[test]
    fn rebase_ticks_shifts_whole_seconds_before_adding_the_fraction() {
        // 9 ticks after the shifted epoch: (whole + frac) - shift would round the 0.9 µs away.
        let (_, origin) = rebase_ticks(&[116_444_736_000_000_009], 10_000_000, 11_644_473_600);
        assert_eq!(origin, 9e-7);
    }
}
