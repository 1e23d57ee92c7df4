//! CloudPhysics VSCSI binary traces: fixed-size little-endian records, no header.
//!
//! Version 1 records are 32 bytes:
//! `u32 serial, u32 length_bytes, u32 n_sg, u16 cmd, u16 version, u64 lbn, u64 ts_us`;
//! version 2 records are 40 bytes:
//! `u16 cmd, u16 version, u32 serial, u32 length_bytes, u32 n_sg, u64 lbn, u64 ts_us, u64 rt_us`.
//! The high byte of `version` is the format version (1 or 2), which is how the first record
//! tells the layout (as CloudPhysics' own reader and libCacheSim do).
//!
//! `cmd` is a SCSI opcode. READ(6/10/12/16) (0x08, 0x28, 0xa8, 0x88) are reads and
//! WRITE(6/10/12/16) (0x0a, 0x2a, 0xaa, 0x8a) writes. Other commands (TEST UNIT READY,
//! SYNCHRONIZE CACHE, INQUIRY, …) move no user data: they are skipped and counted in
//! [`TraceColumns::skipped`], or are an error when the caller asks for strictness.
//! The offset is `lbn × 512` (VMware's virtual SCSI disks address 512-byte blocks), the size
//! `length_bytes`. Time zero is the earliest timestamp and `origin_s` that timestamp in seconds
//! on the recording's own clock (it is not a Unix time: CloudPhysics counted from host boot).

use super::fields::{first_too_late, too_late};
use super::{rebase_ticks, TraceColumns, READ, WRITE};
use crate::{Error, Result};

/// Bytes per block of `lbn`.
pub const BLOCK_BYTES: i64 = 512;

const READ_CMDS: [u16; 4] = [0x08, 0x28, 0xa8, 0x88];
const WRITE_CMDS: [u16; 4] = [0x0a, 0x2a, 0xaa, 0x8a];

/// Record layout of one VSCSI format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Format version (1 or 2).
    pub version: u8,
    /// Bytes per record.
    pub record_bytes: usize,
    cmd: usize,
    ver: usize,
    length: usize,
    lbn: usize,
    ts: usize,
}

/// Version 1: 32-byte records.
pub const V1: Layout =
    Layout { version: 1, record_bytes: 32, cmd: 12, ver: 14, length: 4, lbn: 16, ts: 24 };
/// Version 2: 40-byte records with a response time.
pub const V2: Layout =
    Layout { version: 2, record_bytes: 40, cmd: 0, ver: 2, length: 8, lbn: 16, ts: 24 };

fn u16_at(data: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([data[at], data[at + 1]])
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

fn u64_at(data: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(data[at..at + 8].try_into().unwrap())
}

/// The layout of `data` judged by the version byte of its first record, or `None` when neither
/// layout fits. Version 1 is tried first: a version 2 record would have to hold 2^24
/// scatter-gather segments to pass for one, while a version 1 serial number can pass for a
/// version 2 header.
pub fn layout_of(data: &[u8]) -> Option<Layout> {
    [V1, V2].into_iter().find(|l| {
        data.len() >= l.record_bytes && (u16_at(data, l.ver) >> 8) == u16::from(l.version)
    })
}

/// Parse a VSCSI trace. With `skip_other`, records whose command is neither a read nor a write
/// are counted in `skipped`; without, the first one is an error. Errors name the 1-based record.
///
/// ```
/// let mut rec = [0u8; 32];
/// rec[4..8].copy_from_slice(&4096u32.to_le_bytes());
/// rec[12..14].copy_from_slice(&0x28u16.to_le_bytes());
/// rec[14..16].copy_from_slice(&0x0100u16.to_le_bytes());
/// rec[16..24].copy_from_slice(&8u64.to_le_bytes());
/// rec[24..32].copy_from_slice(&2_500_000u64.to_le_bytes());
/// let cols = tailbound_core::parse::vscsi::parse(&rec, true).unwrap();
/// assert_eq!((cols.time[0], cols.size[0], cols.op[0], cols.origin_s), (0.0, 4096, 0, 2.5));
/// assert_eq!(cols.offset.unwrap()[0], 4096);
/// ```
pub fn parse(data: &[u8], skip_other: bool) -> Result<TraceColumns> {
    if data.is_empty() {
        return Ok(TraceColumns::default());
    }
    if data.len() < V1.record_bytes {
        let message = format!("truncated: {} of {} bytes", data.len(), V1.record_bytes);
        return Err(Error::parse(1, "record", message));
    }
    let layout = layout_of(data).ok_or_else(|| {
        Error::parse(1, "version", "not a VSCSI record: version byte is neither 1 nor 2")
    })?;
    let size = layout.record_bytes;
    let n = data.len() / size;
    if data.len() % size != 0 {
        return Err(Error::parse(
            n + 1,
            "record",
            format!("truncated: {} of {size} bytes", data.len() % size),
        ));
    }
    let mut cols = TraceColumns::with_capacity(n, true, false);
    let offsets = cols.offset.as_mut().unwrap();
    let mut ticks = Vec::with_capacity(n);
    for (i, rec) in data.chunks_exact(size).enumerate() {
        let record = i + 1;
        let version = u16_at(rec, layout.ver) >> 8;
        if version != u16::from(layout.version) {
            return Err(Error::parse(
                record,
                "version",
                format!("version {version} in a version {} trace", layout.version),
            ));
        }
        let cmd = u16_at(rec, layout.cmd);
        let op = if READ_CMDS.contains(&cmd) {
            READ
        } else if WRITE_CMDS.contains(&cmd) {
            WRITE
        } else if skip_other {
            cols.skipped += 1;
            continue;
        } else {
            return Err(Error::parse(
                record,
                "cmd",
                format!("SCSI command {cmd:#04x} is neither a read nor a write"),
            ));
        };
        let lbn = i64::try_from(u64_at(rec, layout.lbn)).ok();
        let offset = lbn.and_then(|b| b.checked_mul(BLOCK_BYTES)).ok_or_else(|| {
            Error::parse(record, "lbn", "block number × 512 bytes overflows 64 bits")
        })?;
        let ts = i64::try_from(u64_at(rec, layout.ts))
            .map_err(|_| Error::parse(record, "ts_us", "timestamp overflows 63 bits"))?;
        cols.op.push(op);
        cols.size.push(i64::from(u32_at(rec, layout.length)));
        offsets.push(offset);
        ticks.push(ts);
    }
    (cols.time, cols.origin_s) = rebase_ticks(&ticks, 1_000_000, 0);
    if let Some(i) = first_too_late(&cols.time) {
        // the i-th read or write (skipped records have no time)
        let is_io = |rec: &[u8]| {
            let cmd = u16_at(rec, layout.cmd);
            READ_CMDS.contains(&cmd) || WRITE_CMDS.contains(&cmd)
        };
        let record = data.chunks_exact(size).enumerate().filter(|(_, r)| is_io(r)).nth(i);
        return Err(too_late(record.map_or(i + 1, |(k, _)| k + 1), "ts_us", cols.time[i]));
    }
    Ok(cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(cmd: u16, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut r = Vec::with_capacity(32);
        r.extend(7u32.to_le_bytes());
        r.extend(len.to_le_bytes());
        r.extend(1u32.to_le_bytes());
        r.extend(cmd.to_le_bytes());
        r.extend(0x0100u16.to_le_bytes());
        r.extend(lbn.to_le_bytes());
        r.extend(ts.to_le_bytes());
        r
    }

    fn v2(cmd: u16, len: u32, lbn: u64, ts: u64) -> Vec<u8> {
        let mut r = Vec::with_capacity(40);
        r.extend(cmd.to_le_bytes());
        r.extend(0x0200u16.to_le_bytes());
        r.extend(7u32.to_le_bytes());
        r.extend(len.to_le_bytes());
        r.extend(1u32.to_le_bytes());
        r.extend(lbn.to_le_bytes());
        r.extend(ts.to_le_bytes());
        r.extend(99u64.to_le_bytes());
        r
    }

    #[test]
    fn vscsi_v1_records() {
        let data = [v1(0x2a, 512, 10, 1_000_500), v1(0x28, 4096, 1, 1_000_000)].concat();
        let cols = parse(&data, false).unwrap();
        assert_eq!(cols.time, vec![0.0005, 0.0]);
        assert_eq!(cols.op, vec![WRITE, READ]);
        assert_eq!(cols.size, vec![512, 4096]);
        assert_eq!(cols.offset, Some(vec![5120, 512]));
        assert_eq!((cols.origin_s, cols.skipped, cols.source), (1.0, 0, None));
    }

    #[test]
    fn vscsi_v2_records() {
        let data = [v2(0x88, 512, 10, 5), v2(0x8a, 1024, 0, 7)].concat();
        assert_eq!(layout_of(&data), Some(V2));
        let cols = parse(&data, false).unwrap();
        assert_eq!(cols.op, vec![READ, WRITE]);
        assert_eq!(cols.size, vec![512, 1024]);
        assert_eq!(cols.time, vec![0.0, 2e-6]);
    }

    #[test]
    fn vscsi_other_commands_skip_or_fail() {
        let data = [v1(0x28, 512, 0, 0), v1(0x35, 0, 0, 1), v1(0x2a, 512, 0, 2)].concat();
        let cols = parse(&data, true).unwrap();
        assert_eq!((cols.len(), cols.skipped), (2, 1));
        assert_eq!(
            parse(&data, false).unwrap_err(),
            Error::parse(2, "cmd", "SCSI command 0x35 is neither a read nor a write")
        );
    }

    #[test]
    fn vscsi_truncated_record_is_named() {
        let mut data = [v1(0x28, 512, 0, 0), v1(0x28, 512, 0, 1)].concat();
        data.truncate(50);
        assert_eq!(
            parse(&data, true).unwrap_err(),
            Error::parse(2, "record", "truncated: 18 of 32 bytes")
        );
    }

    #[test]
    fn vscsi_bad_version_is_named() {
        let mut data = [v1(0x28, 512, 0, 0), v1(0x28, 512, 0, 1)].concat();
        data[32 + 15] = 3;
        assert_eq!(
            parse(&data, true).unwrap_err(),
            Error::parse(2, "version", "version 3 in a version 1 trace")
        );
        assert!(parse(&[0u8; 32], true).is_err());
        // A version 1 serial number that looks like a version 2 header does not fool detection.
        let mut data = v1(0x28, 512, 0, 0);
        data[3] = 2;
        assert_eq!(layout_of(&data), Some(V1));
        assert!(parse(&[], true).unwrap().is_empty());
    }

    #[test]
    fn vscsi_refuses_a_span_of_more_than_max_time_naming_the_record() {
        let record = |cmd: u16, ts: u64| {
            let mut rec = [0u8; 32];
            rec[12..14].copy_from_slice(&cmd.to_le_bytes());
            rec[14..16].copy_from_slice(&0x0100u16.to_le_bytes());
            rec[24..32].copy_from_slice(&ts.to_le_bytes());
            rec
        };
        // a skipped command between: the late read is record 3
        let data = [record(0x28, 0), record(0x00, 0), record(0x28, 1 << 62)].concat();
        let err = parse(&data, true).unwrap_err();
        assert!(matches!(&err, Error::Parse { line: 3, field, .. } if field == "ts_us"), "{err}");
    }
}
