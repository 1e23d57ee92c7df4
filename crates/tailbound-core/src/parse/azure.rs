//! Azure LLM inference traces (Azure public dataset, 2023): a CSV with the header
//! `TIMESTAMP,ContextTokens,GeneratedTokens` and one line per request (an RPC).
//!
//! `TIMESTAMP` is a UTC wall-clock time `YYYY-MM-DD HH:MM:SS[.fraction]` (the dataset writes
//! seven fractional digits; up to nine are accepted, and `T` may separate date and time).
//! Time zero is the earliest request and `origin_s` its Unix time. Turning the token counts into
//! request sizes is the caller's choice, so both columns are returned as they are.

use super::fields::{
    estimate_lines, first_too_late, lines, parse_i64_nonneg, show, split_exact, too_late,
};
use super::rebase_ticks;
use crate::{Error, Result};

const FIELDS: [&str; 3] = ["TIMESTAMP", "ContextTokens", "GeneratedTokens"];
const NS_PER_S: i64 = 1_000_000_000;

/// The requests of an Azure LLM trace in file order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LlmColumns {
    /// Arrival time in seconds since `origin_s`.
    pub time: Vec<f64>,
    /// Prompt tokens of each request.
    pub context_tokens: Vec<i64>,
    /// Tokens generated in response.
    pub generated_tokens: Vec<i64>,
    /// Unix time of the earliest request, in seconds.
    pub origin_s: f64,
}

/// Parse an Azure LLM inference trace.
///
/// ```
/// let data = b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n";
/// let cols = tailbound_core::parse::azure::parse(data).unwrap();
/// assert_eq!((cols.context_tokens[0], cols.generated_tokens[0]), (4808, 10));
/// assert_eq!(cols.origin_s, 1_700_158_623.979_96);
/// ```
pub fn parse(data: &[u8]) -> Result<LlmColumns> {
    let n = estimate_lines(data);
    let mut cols = LlmColumns {
        context_tokens: Vec::with_capacity(n),
        generated_tokens: Vec::with_capacity(n),
        ..LlmColumns::default()
    };
    let mut ns = Vec::with_capacity(n);
    let mut rows = lines(data);
    if let Some((line_no, header)) = rows.next() {
        check_header(header, line_no)?;
    }
    for (line_no, line) in rows {
        let [stamp, context, generated] = split_exact(line, b',', line_no, &FIELDS, false)?;
        ns.push(parse_timestamp(stamp).ok_or_else(|| {
            Error::parse(
                line_no,
                FIELDS[0],
                format!(
                    "not a date and time YYYY-MM-DD HH:MM:SS.fraction between 1677-09-22 and \
                     2262-04-11: {}",
                    show(stamp)
                ),
            )
        })?);
        cols.context_tokens.push(parse_i64_nonneg(context, line_no, FIELDS[1])?);
        cols.generated_tokens.push(parse_i64_nonneg(generated, line_no, FIELDS[2])?);
    }
    (cols.time, cols.origin_s) = rebase_ticks(&ns, NS_PER_S, 0);
    if let Some(i) = first_too_late(&cols.time) {
        let line_no = lines(data).nth(i + 1).map_or(i + 2, |(n, _)| n); // after the header
        return Err(too_late(line_no, FIELDS[0], cols.time[i]));
    }
    Ok(cols)
}

fn check_header(line: &[u8], line_no: usize) -> Result<()> {
    let names: Vec<&[u8]> = line.split(|&b| b == b',').map(<[u8]>::trim_ascii).collect();
    let matches = names.len() == FIELDS.len()
        && names.iter().zip(FIELDS).all(|(got, want)| got.eq_ignore_ascii_case(want.as_bytes()));
    if matches {
        Ok(())
    } else {
        Err(Error::parse(
            line_no,
            "header",
            format!("expected TIMESTAMP,ContextTokens,GeneratedTokens, found {}", show(line)),
        ))
    }
}

/// Nanoseconds since 1970-01-01 UTC of `YYYY-MM-DD HH:MM:SS[.fraction][Z]`, or `None`.
pub fn parse_timestamp(text: &[u8]) -> Option<i64> {
    let text = text.strip_suffix(b"Z").unwrap_or(text);
    if text.len() < 19 || text[4] != b'-' || text[7] != b'-' || text[13] != b':' || text[16] != b':'
    {
        return None;
    }
    if text[10] != b' ' && text[10] != b'T' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let digits = &text[range];
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0i64, |v, &d| v * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let frac_ns = match &text[19..] {
        [] => 0,
        [b'.', digits @ ..] if (1..=9).contains(&digits.len()) => {
            let value = num(20..text.len())?;
            value * 10i64.pow(9 - digits.len() as u32)
        }
        _ => return None,
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second;
    // nanoseconds since 1970 fit 64 bits from 1677-09-21 to 2262-04-11; outside, no date
    seconds.checked_mul(NS_PER_S)?.checked_add(frac_ns)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_timestamps_are_unix_nanoseconds() {
        assert_eq!(parse_timestamp(b"1970-01-01 00:00:00"), Some(0));
        assert_eq!(parse_timestamp(b"1970-01-01T00:00:01.5Z"), Some(1_500_000_000));
        assert_eq!(parse_timestamp(b"2000-03-01 00:00:00"), Some(951_868_800 * NS_PER_S));
        assert_eq!(
            parse_timestamp(b"2023-11-16 18:17:03.9799600"),
            Some(1_700_158_623 * NS_PER_S + 979_960_000)
        );
        assert_eq!(
            parse_timestamp(b"2024-02-29 23:59:59.123456789"),
            Some(1_709_251_199_123_456_789)
        );
        for bad in [
            &b"2023-02-29 00:00:00"[..],
            b"2023-13-01 00:00:00",
            b"2023-11-16 24:00:00",
            b"2023-11-16 18:17:03.",
            b"2023-11-16 18:17:03.1234567890",
            b"2023/11/16 18:17:03",
            b"2023-11-16",
        ] {
            assert_eq!(parse_timestamp(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn azure_counts_time_from_the_earliest_request() {
        let data = b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n\
                     2023-11-16 18:17:04.0319600,3180,8\r\n\
                     2023-11-16 18:17:03.9799600,4808,10";
        let cols = parse(data).unwrap();
        assert_eq!(cols.context_tokens, vec![3180, 4808]);
        assert_eq!(cols.generated_tokens, vec![8, 10]);
        assert!((cols.time[0] - 0.052).abs() < 1e-12 && cols.time[1] == 0.0);
        assert_eq!(cols.origin_s, 1_700_158_623.979_96);
    }

    #[test]
    fn azure_dates_outside_the_nanosecond_clock_are_errors_not_wrapped() {
        // 2263 wrapped negative before (a duration of 0 and no error)
        assert!(parse_timestamp(b"2262-04-11 23:47:16").is_some());
        assert!(parse_timestamp(b"2262-04-11 23:47:17").is_none());
        assert!(parse_timestamp(b"2263-01-01 00:00:00").is_none());
        assert!(parse_timestamp(b"1677-09-22 00:00:00").is_some());
        assert!(parse_timestamp(b"0001-01-01 00:00:00").is_none());
        let data = b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00,1,1\n\
                     9999-12-31 23:59:59,1,1\n";
        let err = parse(data).unwrap_err();
        assert!(matches!(err, Error::Parse { line: 3, .. }), "{err}");
        // the widest span of valid dates does not overflow the rebase; it is longer than a
        // trace may span (MAX_TIME_S), an error at the later date's line
        let data = b"TIMESTAMP,ContextTokens,GeneratedTokens\n1677-09-22 00:00:00,1,1\n\
                     2262-04-11 00:00:00,1,1\n";
        let err = parse(data).unwrap_err();
        assert!(
            matches!(&err, Error::Parse { line: 3, field, .. } if field == "TIMESTAMP"),
            "{err}"
        );
        assert!(err.to_string().contains("18"), "{err}"); // 1.8e10 s, not wrapped
    }

    #[test]
    fn azure_errors_name_line_and_field() {
        let h = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
        let cases = [
            (
                "time,a,b\n".to_string(),
                Error::parse(
                    1,
                    "header",
                    "expected TIMESTAMP,ContextTokens,GeneratedTokens, found 'time,a,b'",
                ),
            ),
            (
                format!("{h}2023-11-16 18:17:03,-1,2"),
                Error::parse(2, "ContextTokens", "negative: '-1'"),
            ),
            (
                format!("{h}\n2023-11-16,1,2"),
                Error::parse(
                    3,
                    "TIMESTAMP",
                    "not a date and time YYYY-MM-DD HH:MM:SS.fraction between 1677-09-22 and 2262-04-11: \
                     '2023-11-16'",
                ),
            ),
            (
                format!("{h}2023-11-16 18:17:03,1"),
                Error::parse(2, "GeneratedTokens", "missing: expected 3 fields, found 2"),
            ),
        ];
        for (data, expected) in cases {
            assert_eq!(parse(data.as_bytes()).unwrap_err(), expected);
        }
        assert!(parse(h.as_bytes()).unwrap().time.is_empty());
    }
}
