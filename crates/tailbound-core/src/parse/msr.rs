//! MSR Cambridge block traces (SNIA IOTTA): one CSV line per request, no header:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! `Timestamp` counts 100 ns ticks since 1601-01-01 UTC (Windows FILETIME); `Type` is `Read` or
//! `Write` (any case); `Offset` and `Size` are bytes; `ResponseTime` (100 ns ticks) is not kept.
//! Time zero is the earliest request and `origin_s` its Unix time; the source id is `DiskNumber`.

use super::fields::{
    estimate_lines, first_too_late, lines, parse_i64_nonneg, parse_size, parse_source, show,
    split_exact, too_late,
};
use super::{rebase_ticks, TraceColumns, READ, WRITE};
use crate::{Error, Result};

const FIELDS: [&str; 7] =
    ["timestamp", "hostname", "disk_number", "type", "offset", "size", "response_time"];

/// FILETIME ticks per second (one tick is 100 ns).
pub const TICKS_PER_S: i64 = 10_000_000;
/// Seconds from the FILETIME epoch (1601-01-01) to the Unix epoch (1970-01-01).
pub const FILETIME_TO_UNIX_S: i64 = 11_644_473_600;

/// Parse an MSR Cambridge CSV trace.
///
/// ```
/// let line = b"128166386783630075,hm,0,Write,3164164096,40960,2896\n";
/// let cols = tailbound_core::parse::msr::parse(line).unwrap();
/// assert_eq!((cols.time[0], cols.size[0], cols.op[0]), (0.0, 40960, 1));
/// assert!((cols.origin_s - 1_172_165_078.363_007_5).abs() < 1e-6); // 2007-02-22 17:24 UTC
/// ```
pub fn parse(data: &[u8]) -> Result<TraceColumns> {
    let n = estimate_lines(data);
    let mut cols = TraceColumns::with_capacity(n, true, true);
    let mut ticks = Vec::with_capacity(n);
    let (offsets, sources) = (cols.offset.as_mut().unwrap(), cols.source.as_mut().unwrap());
    for (line_no, line) in lines(data) {
        let [stamp, _host, disk, kind, offset, size, _response] =
            split_exact(line, b',', line_no, &FIELDS, false)?;
        ticks.push(parse_i64_nonneg(stamp, line_no, FIELDS[0])?);
        sources.push(parse_source(disk, line_no, FIELDS[2])?);
        cols.op.push(parse_type(kind, line_no)?);
        offsets.push(parse_i64_nonneg(offset, line_no, FIELDS[4])?);
        cols.size.push(parse_size(size, line_no, FIELDS[5])?);
    }
    (cols.time, cols.origin_s) = rebase_ticks(&ticks, TICKS_PER_S, FILETIME_TO_UNIX_S);
    if let Some(i) = first_too_late(&cols.time) {
        let line_no = lines(data).nth(i).map_or(i + 1, |(n, _)| n);
        return Err(too_late(line_no, FIELDS[0], cols.time[i]));
    }
    Ok(cols)
}

fn parse_type(field: &[u8], line_no: usize) -> Result<u8> {
    if field.eq_ignore_ascii_case(b"Read") {
        Ok(READ)
    } else if field.eq_ignore_ascii_case(b"Write") {
        Ok(WRITE)
    } else {
        Err(Error::parse(
            line_no,
            FIELDS[3],
            format!("unknown op {}, expected Read or Write", show(field)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &[u8] = b"128166386783630075,hm,0,Write,3164164096,40960,2896\n\
                         128166386783640075,hm,3,read,512,4096,889\n";

    #[test]
    fn msr_counts_time_from_the_first_request() {
        let cols = parse(TWO).unwrap();
        assert_eq!(cols.time, vec![0.0, 0.001]);
        assert_eq!(cols.op, vec![WRITE, READ]);
        assert_eq!(cols.size, vec![40960, 4096]);
        assert_eq!(cols.offset, Some(vec![3164164096, 512]));
        assert_eq!(cols.source, Some(vec![0, 3]));
    }

    #[test]
    fn msr_origin_is_unix_time_of_the_earliest_request() {
        // 116444736000000000 ticks is exactly the Unix epoch; the earliest line comes second.
        let data = b"116444736020000000,h,0,Read,0,1,1\n116444736010000000,h,0,Read,0,1,1\n";
        let cols = parse(data).unwrap();
        assert_eq!(cols.origin_s, 1.0);
        assert_eq!(cols.time, vec![1.0, 0.0]);
    }

    #[test]
    fn msr_errors_name_line_and_field() {
        let cases: [(&[u8], Error); 5] = [
            (b"1,h,0,Read,0,-4096,1", Error::parse(1, "size", "negative size: '-4096'")),
            (
                b"1,h,0,Trim,0,1,1",
                Error::parse(1, "type", "unknown op 'Trim', expected Read or Write"),
            ),
            (
                b"1,h,0,Read,0,1",
                Error::parse(1, "response_time", "missing: expected 7 fields, found 6"),
            ),
            (b"1,h,0,Read,0,1,1,9", Error::parse(1, "record", "expected 7 fields, found 8")),
            (b"1,h,x,Read,0,1,1", Error::parse(1, "disk_number", "not an integer: 'x'")),
        ];
        for (data, expected) in cases {
            assert_eq!(parse(data).unwrap_err(), expected);
        }
    }

    #[test]
    fn msr_refuses_a_span_of_more_than_max_time_naming_the_line() {
        // FILETIME ticks 3000 years apart: a malformed file, not a recording
        let data = b"116444736000000000,h,0,Read,0,1,1\n\n2116444736000000000,h,0,Read,0,1,1\n";
        let err = parse(data).unwrap_err();
        assert!(
            matches!(&err, Error::Parse { line: 3, field, .. } if field == "timestamp"),
            "{err}"
        );
    }
}
