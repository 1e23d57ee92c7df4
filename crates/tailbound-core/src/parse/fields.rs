//! Shared pieces of the text parsers: numbered lines, field splitting and number parsing, each
//! failing with an [`Error::Parse`] that names the line and field.

use crate::{Error, Result};

/// The non-blank lines of `data` with their 1-based line numbers, without the line terminator
/// (`\n` or `\r\n`) or a leading UTF-8 byte-order mark (spreadsheets write one). Blank lines
/// (only spaces, tabs or `\r`) are skipped but still counted.
pub(crate) fn lines(data: &[u8]) -> Lines<'_> {
    let data = data.strip_prefix(b"\xef\xbb\xbf").unwrap_or(data);
    Lines { rest: data, line_no: 0 }
}

/// Iterator of [`lines`].
pub(crate) struct Lines<'a> {
    rest: &'a [u8],
    line_no: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        while !self.rest.is_empty() {
            let (line, rest) = match find_byte(self.rest, b'\n') {
                Some(end) => (&self.rest[..end], &self.rest[end + 1..]),
                None => (self.rest, &self.rest[self.rest.len()..]),
            };
            self.rest = rest;
            self.line_no += 1;
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some((self.line_no, line));
            }
        }
        None
    }
}

/// Position of the first `needle` in `haystack`, eight bytes at a time: a word holds `needle`
/// where `word ^ needle×8` has a zero byte, which `(x − 0x01…) & !x & 0x80…` detects exactly
/// for the lowest such byte (the only one used).
#[inline]
pub(crate) fn find_byte(haystack: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut chunks = haystack.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().unwrap()) ^ pattern;
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(|&b| b == needle).map(|i| offset + i)
}

/// Number of lines in `data` estimated from its first 64 KiB, to size the output columns once
/// without a pass over the whole input (the columns still grow if the guess is short).
pub(crate) fn estimate_lines(data: &[u8]) -> usize {
    let sample = &data[..data.len().min(1 << 16)];
    let newlines = sample.iter().filter(|&&b| b == b'\n').count().max(1);
    (data.len() as f64 / sample.len().max(1) as f64 * newlines as f64 * 1.05) as usize + 1
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
    let mut rest = Some(line);
    for (k, slot) in out.iter_mut().enumerate() {
        let Some(text) = rest else {
            return Err(missing(line_no, names, k));
        };
        let (field, after) = match find_byte(text, sep) {
            Some(end) => (&text[..end], Some(&text[end + 1..])),
            None => (text, None),
        };
        *slot = field.trim_ascii();
        rest = after;
    }
    match rest {
        Some(extra) if !extra_ok => {
            let found = N + 1 + extra.iter().filter(|&&b| b == sep).count();
            Err(too_many(line_no, N, found))
        }
        _ => Ok(out),
    }
}

/// Split `line` at runs of spaces and tabs into exactly `N` fields named by `names`.
pub(crate) fn split_whitespace<'a, const N: usize>(
    line: &'a [u8],
    line_no: usize,
    names: &[&str; N],
) -> Result<[&'a [u8]; N]> {
    let is_blank = |b: u8| b == b' ' || b == b'\t';
    let mut out: [&[u8]; N] = [&[]; N];
    let mut pos = 0;
    let mut found = 0;
    loop {
        while pos < line.len() && is_blank(line[pos]) {
            pos += 1;
        }
        if pos == line.len() {
            break;
        }
        let start = pos;
        while pos < line.len() && !is_blank(line[pos]) {
            pos += 1;
        }
        if found < N {
            out[found] = &line[start..pos];
        }
        found += 1;
    }
    match found {
        f if f < N => Err(missing(line_no, names, f)),
        f if f > N => Err(too_many(line_no, N, f)),
        _ => Ok(out),
    }
}

#[cold]
fn missing(line_no: usize, names: &[&str], found: usize) -> Error {
    Error::parse(
        line_no,
        names[found],
        format!("missing: expected {} fields, found {found}", names.len()),
    )
}

#[cold]
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
    // Up to 19 digits cannot overflow a u64, so the common case needs no overflow checks.
    if !field.is_empty() && field.len() <= 19 {
        let mut value: u64 = 0;
        for &b in field {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return Err(bad_integer(field, line_no, name));
            }
            value = value * 10 + u64::from(digit);
        }
        return Ok(value);
    }
    parse_u64_long(field, line_no, name)
}

#[cold]
fn parse_u64_long(field: &[u8], line_no: usize, name: &str) -> Result<u64> {
    if field.is_empty() {
        return Err(Error::parse(line_no, name, "empty, expected an integer"));
    }
    let mut value: u64 = 0;
    for &b in field {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return Err(bad_integer(field, line_no, name));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit)))
            .ok_or_else(|| Error::parse(line_no, name, format!("too large: {}", show(field))))?;
    }
    Ok(value)
}

#[cold]
fn bad_integer(field: &[u8], line_no: usize, name: &str) -> Error {
    if field.len() > 1 && field[0] == b'-' && field[1..].iter().all(u8::is_ascii_digit) {
        Error::parse(line_no, name, format!("negative: {}", show(field)))
    } else {
        Error::parse(line_no, name, format!("not an integer: {}", show(field)))
    }
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
    if let Some(value) = plain_decimal(field) {
        return Ok(value);
    }
    let value = std::str::from_utf8(field)
        .ok()
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)))
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(|| Error::parse(line_no, name, format!("not a number: {}", show(field))))?;
    Ok(value)
}

/// Latest arrival time a trace may have, in seconds from its zero: 10^10 s (317 years). Later
/// times (and `1e300`) are a malformed file, not a recording.
pub const MAX_TIME_S: f64 = 1e10;

/// The index of the first time more than [`MAX_TIME_S`] after the trace's zero, if any: timestamp
/// formats (ticks since an epoch) can span more, and such a file is malformed as well.
pub(crate) fn first_too_late(time: &[f64]) -> Option<usize> {
    time.iter().position(|&t| t.is_nan() || t > MAX_TIME_S)
}

/// The error of a timestamp [`first_too_late`] found, at `line_no`.
pub(crate) fn too_late(line_no: usize, name: &str, time_s: f64) -> Error {
    Error::parse(
        line_no,
        name,
        format!(
            "{time_s:.0} s after the trace's earliest timestamp; a trace spans at most \
             {MAX_TIME_S:e} s"
        ),
    )
}

/// An arrival time: a decimal number of `units_per_s` units, as seconds, finite, `>= 0` and at
/// most [`MAX_TIME_S`].
pub(crate) fn parse_time(
    field: &[u8],
    line_no: usize,
    name: &str,
    units_per_s: f64,
) -> Result<f64> {
    let value = parse_f64(field, line_no, name)? / units_per_s;
    if value.is_finite() && (0.0..=MAX_TIME_S).contains(&value) {
        Ok(value)
    } else {
        Err(Error::parse(
            line_no,
            name,
            format!("not a time in [0, {MAX_TIME_S:e}] s: {}", show(field)),
        ))
    }
}

/// `digits[.digits]` as the nearest `f64`, or `None` for anything else (signs, exponents, more
/// than 15 significant digits, which the general parser handles). Exact: the digits form an
/// integer `m < 2^53` and the divisor `10^k` (k ≤ 15) is exact in `f64`, so `m / 10^k` is one
/// correctly rounded division (Clinger's fast path).
#[inline]
fn plain_decimal(field: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] =
        [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
    let mut mantissa: u64 = 0;
    let mut digits = 0;
    let mut frac_digits = None;
    for (i, &b) in field.iter().enumerate() {
        match b {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(b - b'0');
                digits += 1;
                if digits > 15 {
                    return None;
                }
            }
            b'.' if frac_digits.is_none() => frac_digits = Some(field.len() - i - 1),
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    Some(mantissa as f64 / POW10[frac_digits.unwrap_or(0)])
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
        assert_eq!(lines(b"\n\nx").collect::<Vec<_>>(), vec![(3, &b"x"[..])]);
    }

    #[test]
    fn find_byte_agrees_with_a_plain_search() {
        let hay: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
        for needle in [0u8, 1, 10, 44, 128, 200, 255] {
            for start in 0..40 {
                let h = &hay[start..];
                assert_eq!(
                    find_byte(h, needle),
                    h.iter().position(|&b| b == needle),
                    "{needle} {start}"
                );
            }
        }
        assert_eq!(find_byte(b"", b'x'), None);
        assert_eq!(find_byte(b"\x80\x0a", b'\n'), Some(1));
    }

    #[test]
    fn estimate_lines_is_close() {
        let data = b"12345,0x10,DiskRead\n".repeat(10_000);
        let n = estimate_lines(&data);
        assert!((10_000..=11_000).contains(&n), "{n}");
        assert_eq!(estimate_lines(b""), 1);
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
        for text in
            ["0", "0.000", "143068.077", "1.", ".5", "123456789012345", "0.1", "9.999999999"]
        {
            assert_eq!(parse_f64(text.as_bytes(), 1, "t").unwrap(), text.parse::<f64>().unwrap());
        }
        assert_eq!(plain_decimal(b"1234567890123456"), None); // 16 digits: general parser
        assert_eq!(parse_f64(b"1234567890123456.5", 1, "t").unwrap(), 1234567890123456.5);
        for bad in [&b"nan"[..], b"inf", b"1.2.3", b"", b"abc", b".", b"1.x"] {
            assert!(parse_f64(bad, 1, "t").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn times_are_finite_non_negative_and_bounded() {
        assert_eq!(parse_time(b"1500", 1, "t", 1e3).unwrap(), 1.5);
        for bad in [&b"-1"[..], b"1e400", b"1e300", b"-0.5"] {
            let err = parse_time(bad, 4, "time", 1.0).unwrap_err();
            assert!(matches!(err, Error::Parse { line: 4, .. }), "{bad:?}");
        }
        assert!(parse_time(b"-0", 1, "t", 1.0).is_ok());
    }

    #[test]
    fn show_shortens_long_fields() {
        assert_eq!(show(b"abc"), "'abc'");
        assert_eq!(show(&[b'x'; 50]).chars().count(), 43);
    }
}
