//! WorkloadCompactor / SNC-Meister traces: `arrival_ns,0xSIZE,OP` per line, no header.
//!
//! `arrival_ns` is a decimal count of nanoseconds since the start of the recording (origin 0),
//! `0xSIZE` the request size in bytes in hexadecimal, `OP` one of `DiskRead`, `DiskWrite`
//! (storage traces) or `Get`, `Put` (key-value traces), matched without regard to case.

use super::fields::{estimate_lines, lines, parse_hex, parse_u64, show, split_exact};
use super::{TraceColumns, READ, WRITE};
use crate::{Error, Result};

const FIELDS: [&str; 3] = ["arrival_ns", "size", "op"];

/// Parse a WorkloadCompactor CSV trace.
///
/// ```
/// let cols = tailbound_core::parse::wc::parse(b"1500000000,0x1000,DiskRead\n").unwrap();
/// assert_eq!((cols.time[0], cols.size[0], cols.op[0]), (1.5, 4096, 0));
/// ```
pub fn parse(data: &[u8]) -> Result<TraceColumns> {
    let mut cols = TraceColumns::with_capacity(estimate_lines(data), false, false);
    for (line_no, line) in lines(data) {
        let [arrival, size, op] = split_exact(line, b',', line_no, &FIELDS, false)?;
        let ns = parse_u64(arrival, line_no, FIELDS[0])?;
        cols.time.push(ns as f64 / 1e9);
        cols.size.push(parse_hex(size, line_no, FIELDS[1])?);
        cols.op.push(parse_op(op, line_no)?);
    }
    Ok(cols)
}

fn parse_op(field: &[u8], line_no: usize) -> Result<u8> {
    const READS: [&[u8]; 2] = [b"DiskRead", b"Get"];
    const WRITES: [&[u8]; 2] = [b"DiskWrite", b"Put"];
    if READS.iter().any(|r| r.eq_ignore_ascii_case(field)) {
        Ok(READ)
    } else if WRITES.iter().any(|w| w.eq_ignore_ascii_case(field)) {
        Ok(WRITE)
    } else {
        Err(Error::parse(
            line_no,
            FIELDS[2],
            format!("unknown op {}, expected DiskRead, DiskWrite, Get or Put", show(field)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wc_reads_storage_and_key_value_ops() {
        let data =
            b"564037000,0x00001000,DiskWrite\n564243000,0x200,diskread\n\n7,0x0,Get\n8,0x1,Put\n";
        let cols = parse(data).unwrap();
        assert_eq!(cols.time, vec![0.564037, 0.564243, 7e-9, 8e-9]);
        assert_eq!(cols.size, vec![4096, 512, 0, 1]);
        assert_eq!(cols.op, vec![WRITE, READ, READ, WRITE]);
        assert_eq!((cols.origin_s, cols.offset, cols.source), (0.0, None, None));
    }

    #[test]
    fn wc_crlf_and_no_final_newline() {
        let cols = parse(b"1,0x1,DiskRead\r\n2,0x2,DiskWrite").unwrap();
        assert_eq!(cols.len(), 2);
    }

    #[test]
    fn wc_errors_name_line_and_field() {
        let cases: [(&[u8], Error); 5] = [
            (
                b"1,0x1,DiskRead\nx,0x1,DiskRead",
                Error::parse(2, "arrival_ns", "not an integer: 'x'"),
            ),
            (b"1,4096,DiskRead", Error::parse(1, "size", "not a hexadecimal 0x… number: '4096'")),
            (b"1,-0x1,DiskRead", Error::parse(1, "size", "negative size: '-0x1'")),
            (
                b"1,0x1,Trim",
                Error::parse(
                    1,
                    "op",
                    "unknown op 'Trim', expected DiskRead, DiskWrite, Get or Put",
                ),
            ),
            (b"\n1,0x1", Error::parse(2, "op", "missing: expected 3 fields, found 2")),
        ];
        for (data, expected) in cases {
            assert_eq!(parse(data).unwrap_err(), expected);
        }
    }

    #[test]
    fn wc_empty_input_gives_no_requests() {
        assert!(parse(b"\n\n").unwrap().is_empty());
    }
}
