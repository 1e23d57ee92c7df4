//! DiskSim-style ASCII traces (DiskSim, MQSim, MSN-FS): `time device lba size rw` per line,
//! fields separated by spaces or tabs, no header.
//!
//! The families differ only in conventions, which [`AsciiOptions`] carries: the unit of `time`
//! (DiskSim and MSN-FS count milliseconds, MQSim nanoseconds), the sector size that `lba` and
//! `size` count (512 bytes everywhere we know of), and which `rw` value means read or write
//! (MSN-FS: 1 read, 0 write; MQSim: 0 write, 1 read). Time counts from the file's zero
//! (origin 0); the source id is `device` and the offset `lba × sector_bytes`.

use super::fields::{
    estimate_lines, lines, parse_i64, parse_i64_nonneg, parse_size, parse_source, parse_time,
    scaled, split_whitespace,
};
use super::{TraceColumns, READ, WRITE};
use crate::{Error, Result};

const FIELDS: [&str; 5] = ["time", "device", "lba", "size", "rw"];

/// Conventions of one ASCII trace family.
#[derive(Debug, Clone, PartialEq)]
pub struct AsciiOptions {
    /// Units of `time` per second: 1e3 for milliseconds, 1e9 for nanoseconds.
    pub time_units_per_s: f64,
    /// Bytes per sector, the unit of `lba` and `size`.
    pub sector_bytes: i64,
    /// The `rw` value of a read.
    pub read_value: i64,
    /// The `rw` value of a write.
    pub write_value: i64,
}

impl Default for AsciiOptions {
    /// DiskSim's conventions: milliseconds, 512-byte sectors, 1 = read, 0 = write.
    fn default() -> Self {
        AsciiOptions { time_units_per_s: 1e3, sector_bytes: 512, read_value: 1, write_value: 0 }
    }
}

impl AsciiOptions {
    fn check(&self) -> Result<()> {
        if !(self.time_units_per_s.is_finite() && self.time_units_per_s > 0.0) {
            return Err(Error::Invalid(format!(
                "time units per second must be positive, got {}",
                self.time_units_per_s
            )));
        }
        if self.sector_bytes <= 0 {
            return Err(Error::Invalid(format!(
                "sector size must be positive, got {}",
                self.sector_bytes
            )));
        }
        if self.read_value == self.write_value {
            return Err(Error::Invalid(format!(
                "read and write values must differ, both are {}",
                self.read_value
            )));
        }
        Ok(())
    }
}

/// Parse a DiskSim-style ASCII trace with the given conventions.
///
/// ```
/// use tailbound_core::parse::ascii::{parse, AsciiOptions};
/// let cols = parse(b"0.221 5 16 8 1\n", &AsciiOptions::default()).unwrap();
/// assert_eq!((cols.time[0], cols.size[0], cols.op[0]), (0.000221, 4096, 0));
/// assert_eq!(cols.offset.unwrap()[0], 8192);
/// ```
pub fn parse(data: &[u8], options: &AsciiOptions) -> Result<TraceColumns> {
    options.check()?;
    let mut cols = TraceColumns::with_capacity(estimate_lines(data), true, true);
    let (offsets, sources) = (cols.offset.as_mut().unwrap(), cols.source.as_mut().unwrap());
    for (line_no, line) in lines(data) {
        let [time, device, lba, size, rw] = split_whitespace(line, line_no, &FIELDS)?;
        cols.time.push(parse_time(time, line_no, FIELDS[0], options.time_units_per_s)?);
        sources.push(parse_source(device, line_no, FIELDS[1])?);
        let lba = parse_i64_nonneg(lba, line_no, FIELDS[2])?;
        offsets.push(scaled(lba, options.sector_bytes, line_no, FIELDS[2])?);
        let sectors = parse_size(size, line_no, FIELDS[3])?;
        cols.size.push(scaled(sectors, options.sector_bytes, line_no, FIELDS[3])?);
        cols.op.push(parse_rw(rw, line_no, options)?);
    }
    Ok(cols)
}

fn parse_rw(field: &[u8], line_no: usize, options: &AsciiOptions) -> Result<u8> {
    match parse_i64(field, line_no, FIELDS[4])? {
        v if v == options.read_value => Ok(READ),
        v if v == options.write_value => Ok(WRITE),
        v => Err(Error::parse(
            line_no,
            FIELDS[4],
            format!(
                "unknown op {v}, expected {} (read) or {} (write)",
                options.read_value, options.write_value
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mqsim() -> AsciiOptions {
        AsciiOptions { time_units_per_s: 1e9, ..AsciiOptions::default() }
    }

    #[test]
    fn ascii_msnfs_milliseconds() {
        let cols =
            parse(b"0.000 5 174224064 16 1\n143068.077\t5  8 2 0\n", &AsciiOptions::default())
                .unwrap();
        assert_eq!(cols.time, vec![0.0, 143068.077 / 1e3]);
        assert_eq!(cols.size, vec![8192, 1024]);
        assert_eq!(cols.op, vec![READ, WRITE]);
        assert_eq!(cols.offset, Some(vec![174224064 * 512, 4096]));
        assert_eq!(cols.source, Some(vec![5, 5]));
        assert_eq!(cols.origin_s, 0.0);
    }

    #[test]
    fn ascii_mqsim_nanoseconds() {
        let cols =
            parse(b"11413000 0 657728 16 1\n60066625000 1 34371424 64 0\n", &mqsim()).unwrap();
        assert_eq!(cols.time, vec![0.011413, 60.066625]);
        assert_eq!(cols.op, vec![READ, WRITE]);
    }

    #[test]
    fn ascii_custom_rw_values_and_sector() {
        let options = AsciiOptions { sector_bytes: 4096, read_value: 7, write_value: 3, ..mqsim() };
        let cols = parse(b"1 0 1 1 3\n2 0 2 2 7\n", &options).unwrap();
        assert_eq!(cols.op, vec![WRITE, READ]);
        assert_eq!(cols.size, vec![4096, 8192]);
    }

    #[test]
    fn ascii_errors_name_line_and_field() {
        let d = AsciiOptions::default();
        let cases: [(&[u8], Error); 5] = [
            (b"1 0 1 1 2", Error::parse(1, "rw", "unknown op 2, expected 1 (read) or 0 (write)")),
            (b"1 0 1 -1 1", Error::parse(1, "size", "negative size: '-1'")),
            (b"1 0 1 1", Error::parse(1, "rw", "missing: expected 5 fields, found 4")),
            (b"\n1 0 1 1 1 1", Error::parse(2, "record", "expected 5 fields, found 6")),
            (b"1.x 0 1 1 1", Error::parse(1, "time", "not a number: '1.x'")),
        ];
        for (data, expected) in cases {
            assert_eq!(parse(data, &d).unwrap_err(), expected);
        }
    }

    #[test]
    fn ascii_rejects_bad_options() {
        let bad = AsciiOptions { read_value: 0, ..AsciiOptions::default() };
        assert!(matches!(parse(b"", &bad), Err(Error::Invalid(_))));
        let bad = AsciiOptions { sector_bytes: 0, ..AsciiOptions::default() };
        assert!(matches!(parse(b"", &bad), Err(Error::Invalid(_))));
    }
}
