//! UMass Trace Repository SPC traces (the SPC-1 trace format of the Storage Performance
//! Council): `ASU,LBA,Size,Opcode,Timestamp[,…]` per line, no header.
//!
//! `ASU` is the application storage unit (the source id), `LBA` a block address in 512-byte
//! sectors, `Size` bytes, `Opcode` `r`/`R` for a read and `w`/`W` for a write, `Timestamp`
//! seconds since the start of the trace (origin 0). The format allows optional fields after the
//! timestamp; they are ignored.

use super::fields::{
    estimate_lines, lines, parse_i64_nonneg, parse_size, parse_source, parse_time, scaled, show,
    split_exact,
};
use super::{TraceColumns, READ, WRITE};
use crate::{Error, Result};

const FIELDS: [&str; 5] = ["asu", "lba", "size", "opcode", "timestamp"];

/// Bytes per logical block of an SPC trace's `LBA`.
pub const SECTOR_BYTES: i64 = 512;

/// Parse an SPC trace.
///
/// ```
/// let cols = tailbound_core::parse::spc::parse(b"0,20941264,8192,W,0.551706\n").unwrap();
/// assert_eq!((cols.time[0], cols.size[0], cols.op[0]), (0.551706, 8192, 1));
/// assert_eq!(cols.offset.unwrap()[0], 20941264 * 512);
/// ```
pub fn parse(data: &[u8]) -> Result<TraceColumns> {
    let mut cols = TraceColumns::with_capacity(estimate_lines(data), true, true);
    let (offsets, sources) = (cols.offset.as_mut().unwrap(), cols.source.as_mut().unwrap());
    for (line_no, line) in lines(data) {
        let [asu, lba, size, opcode, stamp] = split_exact(line, b',', line_no, &FIELDS, true)?;
        sources.push(parse_source(asu, line_no, FIELDS[0])?);
        let lba = parse_i64_nonneg(lba, line_no, FIELDS[1])?;
        offsets.push(scaled(lba, SECTOR_BYTES, line_no, FIELDS[1])?);
        cols.size.push(parse_size(size, line_no, FIELDS[2])?);
        cols.op.push(match opcode {
            b"r" | b"R" => READ,
            b"w" | b"W" => WRITE,
            other => {
                return Err(Error::parse(
                    line_no,
                    FIELDS[3],
                    format!("unknown op {}, expected r or w", show(other)),
                ))
            }
        });
        cols.time.push(parse_time(stamp, line_no, FIELDS[4], 1.0)?);
    }
    Ok(cols)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spc_reads_fields_and_ignores_extras() {
        let cols =
            parse(b"0,303567,3584,w,0.000000\n1,55590,3072,R,0.000000,x\n2,1,0,W,1.5\n").unwrap();
        assert_eq!(cols.time, vec![0.0, 0.0, 1.5]);
        assert_eq!(cols.op, vec![WRITE, READ, WRITE]);
        assert_eq!(cols.size, vec![3584, 3072, 0]);
        assert_eq!(cols.source, Some(vec![0, 1, 2]));
        assert_eq!(cols.offset, Some(vec![303567 * 512, 55590 * 512, 512]));
    }

    #[test]
    fn spc_errors_name_line_and_field() {
        let cases: [(&[u8], Error); 4] = [
            (b"0,1,512,x,0.1", Error::parse(1, "opcode", "unknown op 'x', expected r or w")),
            (b"0,1,-512,r,0.1", Error::parse(1, "size", "negative size: '-512'")),
            (b"0,1,512,r", Error::parse(1, "timestamp", "missing: expected 5 fields, found 4")),
            (b"0,1,512,r,0.1\n0,1,512,r,t", Error::parse(2, "timestamp", "not a number: 't'")),
        ];
        for (data, expected) in cases {
            assert_eq!(parse(data).unwrap_err(), expected);
        }
    }
}
