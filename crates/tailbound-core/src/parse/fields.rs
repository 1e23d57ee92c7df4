//! Shared pieces of the text parsers: numbered lines, field splitting and number parsing, each
//! failing with an [`Error::Parse`] that names the line and field.

use crate::{Error, Result};

/// The non-blank lines of `data` with their 1-based line numbers, without the line terminator
/// (`\n` or `\r\n`) or a leading UTF-8 byte-order mark (spreadsheets write one). Blank lines
/// (only spaces, tabs or `\r`) are skipped but still counted.
pub(crate) fn lines(data: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    let data = data.strip_suffix(b"\n").unwrap_or(data);
    data.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.strip_suffix(b"\r").unwrap_or(line)))
        .filter(|(_, line)| !line.iter().all(|b| b.is_ascii_whitespace()))
}

/// Rough number of lines in `data`, to size the output columns once.
pub(crate) fn estimate_lines(data: &[u8]) -> usize {
    data.iter().filter(|&&b| b == b'\n').count() + 1
}

/// Split `line` at `sep` into exactly `N` fields named by `names`, trimming spaces around each.
/// With `extra_ok`, fields after the `N`th are ignored instead of being an error.
pub(crate) fn split_exact<'a, const N: usize>(
    line: &'a [u8],
    sep: u8,
    line_no: usize,
    names: &[&str; N],
    extra_ok: bool,
) -> Result<[&'a [u8]; N]> {
    let mut out: [&[u8]; N] = [&[]; N];
    let mut parts = line.split(|&b| b == sep);
    for (k, slot) in out.iter_mut().enumerate() {
        match parts.next() {
            Some(part) => *slot = part.trim_ascii(),
            None => return Err(missing(line_no, names, k)),
        }
    }
    if !extra_ok {
        let extra = parts.count();
        if extra > 0 {
            return Err(too_many(line_no, N, N + extra));
        }
    }
    Ok(out)
}

/// Split `line` at runs of spaces and tabs into exactly `N` fields named by `names`.
pub(crate) fn split_whitespace<'a, const N: usize>(
    line: &'a [u8],
    line_no: usize,
    names: &[&str; N],
) -> Result<[&'a [u8]; N]> {
    let mut out: [&[u8]; N] = [&[]; N];
    let mut parts = line.split(|&b| b == b' ' || b == b'\t').filter(|p| !p.is_empty());
    for (k, slot) in out.iter_mut().enumerate() {
        match parts.next() {
            Some(part) => *slot = part,
            None => return Err(missing(line_no, names, k)),
        }
    }
    let extra = parts.count();
    if extra > 0 {
        return Err(too_many(line_no, N, N + extra));
    }
    Ok(out)
}

fn missing(line_no: usize, names: &[&str], found: usize) -> Error {
    Error::parse(
        line_no,
        names[found],
        format!("missing: expected {} fields, found {found}", names.len()),
    )
}

fn too_many(line_no: usize, expected: usize, found: usize) -> Error {
    Error::parse(line_no, "record", format!("expected {expected} fields, found {found}"))
}

/// The field's text for an error message, shortened to 40 characters.
pub(crate) fn show(field: &[u8]) -> String {
    let text = String::from_utf8_lossy(field);
    if text.chars().count() > 40 {
        format!("'{}…'", text.chars().take(40).collect::<String>())
    } else {
        format!("'{text}'")
    }
}

/// A non-negative decimal integer.
pub(crate) fn parse_u64(field: &[u8], line_no: usize, name: &str) -> Result<u64> {
    if field.is_empty() {
        return Err(Error::parse(line_no, name, "empty, expected an integer"));
    }
    let mut value: u64 = 0;
    for &b in field {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            if b == b'-' && field.len() > 1 && field[1..].iter().all(u8::is_ascii_digit) {
                return Err(Error::parse(line_no, name, format!("negative: {}", show(field))));
            }
            return Err(Error::parse(line_no, name, format!("not an integer: {}", show(field))));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit)))
            .ok_or_else(|| Error::parse(line_no, name, format!("too large: {}", show(field))))?;
    }
    Ok(value)
}

/// A non-negative decimal integer that fits an `i64`.
pub(crate) fn parse_i64_nonneg(field: &[u8], line_no: usize, name: &str) -> Result<i64> {
    let value = parse_u64(field, line_no, name)?;
    i64::try_from(value)
        .map_err(|_| Error::parse(line_no, name, format!("too large: {}", show(field))))
}

/// A decimal integer, possibly negative.
pub(crate) fn parse_i64(field: &[u8], line_no: usize, name: &str) -> Result<i64> {
    match field.strip_prefix(b"-") {
        Some(rest) if !rest.is_empty() && rest[0] != b'-' => {
            let magnitude = parse_u64(rest, line_no, name).map_err(|_| {
                Error::parse(line_no, name, format!("not an integer: {}", show(field)))
            })?;
            0i64.checked_sub_unsigned(magnitude)
                .ok_or_else(|| Error::parse(line_no, name, format!("too small: {}", show(field))))
        }
        _ => parse_i64_nonneg(field.strip_prefix(b"+").unwrap_or(field), line_no, name),
    }
}

/// A source id (device, disk, ASU): a non-negative integer that fits an `i32`.
pub(crate) fn parse_source(field: &[u8], line_no: usize, name: &str) -> Result<i32> {
    let value = parse_u64(field, line_no, name)?;
    i32::try_from(value)
        .map_err(|_| Error::parse(line_no, name, format!("too large for an id: {}", show(field))))
}

/// A size in bytes: a non-negative integer. A negative value is named as such.
pub(crate) fn parse_size(field: &[u8], line_no: usize, name: &str) -> Result<i64> {
    let value = parse_i64(field, line_no, name)?;
    if value < 0 {
        return Err(Error::parse(line_no, name, format!("negative size: {}", show(field))));
    }
    Ok(value)
}

/// A hexadecimal integer written with a `0x` or `0X` prefix.
pub(crate) fn parse_hex(field: &[u8], line_no: usize, name: &str) -> Result<i64> {
    if field.starts_with(b"-") {
        return Err(Error::parse(line_no, name, format!("negative size: {}", show(field))));
    }
    let digits = field
        .strip_prefix(b"0x")
        .or_else(|| field.strip_prefix(b"0X"))
        .filter(|d| !d.is_empty())
        .ok_or_else(|| {
            Error::parse(line_no, name, format!("not a hexadecimal 0x… number: {}", show(field)))
        })?;
    let mut value: i64 = 0;
    for &b in digits {
        let digit = (b as char).to_digit(16).ok_or_else(|| {
            Error::parse(line_no, name, format!("not a hexadecimal 0x… number: {}", show(field)))
        })?;
        value = value
            .checked_mul(16)
            .and_then(|v| v.checked_add(i64::from(digit)))
            .ok_or_else(|| Error::parse(line_no, name, format!("too large: {}", show(field))))?;
    }
    Ok(value)
}

/// A finite decimal number (integer, fraction or exponent notation).
pub(crate) fn parse_f64(field: &[u8], line_no: usize, name: &str) -> Result<f64> {
    let value = std::str::from_utf8(field)
        .ok()
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)))
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| Error::parse(line_no, name, format!("not a number: {}", show(field))))?;
    Ok(value)
}

/// `value * factor` as an `i64` byte count, failing when it overflows.
pub(crate) fn scaled(value: i64, factor: i64, line_no: usize, name: &str) -> Result<i64> {
    value.checked_mul(factor).ok_or_else(|| {
        Error::parse(line_no, name, format!("{value} × {factor} bytes overflows 64 bits"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_skip_blanks_strip_crlf_and_count_from_one() {
        let got: Vec<_> = lines(b"a\r\n\n  \nb\nc").collect();
        assert_eq!(got, vec![(1, &b"a"[..]), (4, &b"b"[..]), (5, &b"c"[..])]);
        assert_eq!(lines(b"a\n").count(), 1);
        assert_eq!(lines(b"").count(), 0);
        assert_eq!(lines(b"\xef\xbb\xbfa\n").next(), Some((1, &b"a"[..])));
    }

    #[test]
    fn split_exact_names_the_missing_field() {
        let err = split_exact(b"1,2", b',', 3, &["a", "b", "c"], false).unwrap_err();
        assert_eq!(err, Error::parse(3, "c", "missing: expected 3 fields, found 2"));
        let err = split_exact(b"1,2,3,4", b',', 3, &["a", "b", "c"], false).unwrap_err();
        assert_eq!(err, Error::parse(3, "record", "expected 3 fields, found 4"));
        assert_eq!(split_exact(b"1, 2 ,3,4", b',', 3, &["a", "b", "c"], true).unwrap()[1], b"2");
    }

    #[test]
    fn split_whitespace_takes_runs_of_blanks() {
        let got = split_whitespace(b" 1  2\t3", 1, &["a", "b", "c"]).unwrap();
        assert_eq!(got, [&b"1"[..], b"2", b"3"]);
        assert!(split_whitespace(b"1 2", 1, &["a", "b", "c"]).is_err());
    }

    #[test]
    fn integers_parse_and_fail_with_reasons() {
        assert_eq!(parse_u64(b"18446744073709551615", 1, "x").unwrap(), u64::MAX);
        assert!(parse_u64(b"18446744073709551616", 1, "x")
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert!(parse_u64(b"12a", 1, "x")
            .unwrap_err()
            .to_string()
            .contains("not an integer: '12a'"));
        assert!(parse_u64(b"-5", 1, "x").unwrap_err().to_string().contains("negative"));
        assert_eq!(parse_i64(b"-5", 1, "x").unwrap(), -5);
        assert_eq!(parse_i64(b"+5", 1, "x").unwrap(), 5);
        assert_eq!(parse_i64(b"-9223372036854775808", 1, "x").unwrap(), i64::MIN);
        assert!(parse_i64(b"--5", 1, "x").is_err());
        assert!(parse_i64(b"-", 1, "x").is_err());
    }

    #[test]
    fn sizes_reject_negative_values_by_name() {
        let err = parse_size(b"-4096", 9, "size").unwrap_err();
        assert_eq!(err, Error::parse(9, "size", "negative size: '-4096'"));
        assert_eq!(parse_size(b"4096", 9, "size").unwrap(), 4096);
    }

    #[test]
    fn hex_needs_its_prefix() {
        assert_eq!(parse_hex(b"0x00001000", 1, "size").unwrap(), 4096);
        assert_eq!(parse_hex(b"0XfF", 1, "size").unwrap(), 255);
        assert!(parse_hex(b"1000", 1, "size").is_err());
        assert!(parse_hex(b"0x", 1, "size").is_err());
        assert!(parse_hex(b"0xg", 1, "size").is_err());
        assert!(parse_hex(b"-0x10", 1, "size").unwrap_err().to_string().contains("negative size"));
    }

    #[test]
    fn floats_are_finite_decimals() {
        assert_eq!(parse_f64(b"143068.077", 1, "t").unwrap(), 143068.077);
        assert_eq!(parse_f64(b"1e3", 1, "t").unwrap(), 1000.0);
        for bad in [&b"nan"[..], b"inf", b"1.2.3", b"", b"abc"] {
            assert!(parse_f64(bad, 1, "t").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn show_shortens_long_fields() {
        assert_eq!(show(b"abc"), "'abc'");
        assert_eq!(show(&[b'x'; 50]).chars().count(), 43);
    }
}
