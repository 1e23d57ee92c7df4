//! Fuzzing of every trace parser (issue 15): random bytes, and valid traces with lines and bytes
//! mutated (fields swapped for odd tokens, bytes flipped, inserted and cut, lines repeated), must
//! never panic; an error is a [`Error::Parse`] naming a line (record) of the input and a field;
//! a success holds finite times in `[0, MAX_TIME_S]`, sizes `>= 0` and columns of one length.
//!
//! CI runs `CASES` cases per property; `PROPTEST_CASES=N` sets more for a longer run
//! (`docs/architecture.md`, "Note: bad input", records one).

use proptest::prelude::*;
use proptest::test_runner::Config;
use tailbound_core::parse::{ascii, azure, msr, spc, vscsi, wc, TraceColumns};
use tailbound_core::{Error, Result};

/// Cases per property in CI (each case parses its input with every parser).
const CASES: u32 = 256;

/// Latest time a parser may return (`parse/fields.rs`, `tailbound.limits.MAX_TIME_S`).
const MAX_TIME_S: f64 = 1e10;

fn config() -> Config {
    // PROPTEST_CASES, when set, wins over the CI size
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// The valid traces mutated below, one per parser (the parsers' own examples).
const SEEDS: [&[u8]; 6] = [
    b"564037000,0x00001000,DiskWrite\n564243000,0x200,diskread\n7,0x0,Get\n",
    b"128166372003061629,hm,0,Read,7014609920,24576,41286\n\
      128166372016853385,hm,1,Write,1317441536,8192,1963\n",
    b"0,20941264,8192,W,0.551706\n1,55590,3072,r,0.000000\n",
    b"0.221 5 16 8 1\n1.5 0 32 16 0\n",
    b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n\
      2023-11-16 18:17:04.0000000,12,1\n",
    b"",
];

/// Tokens that have broken parsers elsewhere: signs, overflow, non-finite, empty, separators.
const TOKENS: [&str; 18] = [
    "",
    "-1",
    "-0",
    "0",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "1e-400",
    "0x",
    "0xffffffffffffffffff",
    "99999999999999999999999",
    "9223372036854775807",
    "1.5.2",
    " ",
    ",",
    "\u{00e9}\u{0000}",
];

fn line_count(data: &[u8]) -> usize {
    data.iter().filter(|&&b| b == b'\n').count() + 1
}

/// The error names a line of `data` (a record for VSCSI) and a field.
fn check_error(name: &str, data: &[u8], error: &Error, last: usize) {
    match error {
        Error::Parse { line, field, message } => {
            assert!(*line >= 1 && *line <= last, "{name}: line {line} of {last}: {message}");
            assert!(!field.is_empty() && !message.is_empty(), "{name}: {error}");
        }
        other => panic!("{name}: not a parse error naming a line: {other} ({} bytes)", data.len()),
    }
}

fn check_columns(name: &str, cols: &TraceColumns) {
    let n = cols.len();
    assert!(cols.op.len() == n && cols.size.len() == n, "{name}: ragged columns");
    assert!(cols.offset.as_ref().is_none_or(|o| o.len() == n), "{name}: ragged offsets");
    assert!(cols.source.as_ref().is_none_or(|s| s.len() == n), "{name}: ragged sources");
    for (&t, &s) in cols.time.iter().zip(&cols.size) {
        assert!(t.is_finite() && (0.0..=MAX_TIME_S).contains(&t), "{name}: time {t}");
        assert!(s >= 0, "{name}: size {s}");
    }
    assert!(cols.origin_s.is_finite(), "{name}: origin {}", cols.origin_s);
}

fn check(name: &str, data: &[u8], result: Result<TraceColumns>, last: usize) {
    match result {
        Ok(cols) => check_columns(name, &cols),
        Err(e) => check_error(name, data, &e, last),
    }
}

/// Every parser on `data`: none panics (a panic fails the property), each answer is checked.
fn parse_everything(data: &[u8]) {
    let lines = line_count(data);
    check("wc", data, wc::parse(data), lines);
    check("msr", data, msr::parse(data), lines);
    check("spc", data, spc::parse(data), lines);
    check("ascii", data, ascii::parse(data, &ascii::AsciiOptions::default()), lines);
    let nanoseconds = ascii::AsciiOptions { time_units_per_s: 1e9, ..Default::default() };
    check("ascii-ns", data, ascii::parse(data, &nanoseconds), lines);
    let records = data.len() / vscsi::V1.record_bytes + 1;
    check("vscsi", data, vscsi::parse(data, true), records);
    check("vscsi-strict", data, vscsi::parse(data, false), records);
    match azure::parse(data) {
        Ok(cols) => {
            let n = cols.time.len();
            assert!(cols.context_tokens.len() == n && cols.generated_tokens.len() == n);
            assert!(cols.time.iter().all(|t| t.is_finite() && *t >= 0.0), "azure: {:?}", cols.time);
            assert!(cols.origin_s.is_finite());
        }
        Err(e) => check_error("azure", data, &e, lines),
    }
}

/// A mutation of a text trace.
#[derive(Debug, Clone)]
enum Edit {
    /// Replace the `field`-th comma- or space-separated field of line `line` by a token.
    Field { line: usize, field: usize, token: usize },
    /// Set the byte at `at` (modulo the length) to `byte`.
    Flip { at: usize, byte: u8 },
    /// Insert `bytes` at `at`.
    Insert { at: usize, bytes: Vec<u8> },
    /// Cut `len` bytes from `at`.
    Cut { at: usize, len: usize },
    /// Repeat line `line` `times` times (equal timestamps, long files).
    Repeat { line: usize, times: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (0..4usize, 0..8usize, 0..TOKENS.len())
            .prop_map(|(line, field, token)| Edit::Field { line, field, token }),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Edit::Flip { at, byte }),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Edit::Insert { at, bytes }),
        1 => (any::<usize>(), 1..16usize).prop_map(|(at, len)| Edit::Cut { at, len }),
        1 => (0..4usize, 1..64usize).prop_map(|(line, times)| Edit::Repeat { line, times }),
    ]
}

fn apply(data: &mut Vec<u8>, edit: &Edit) {
    let text_lines =
        |data: &[u8]| -> Vec<Vec<u8>> { data.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect() };
    match edit {
        Edit::Field { line, field, token } => {
            let mut lines = text_lines(data);
            let n = lines.len();
            let target = &mut lines[line % n];
            let sep = if target.contains(&b',') { b',' } else { b' ' };
            let mut fields: Vec<Vec<u8>> =
                target.split(|&b| b == sep).map(<[u8]>::to_vec).collect();
            let m = fields.len();
            fields[field % m] = TOKENS[*token].as_bytes().to_vec();
            *target = fields.join(&sep);
            *data = lines.join(&b'\n');
        }
        Edit::Flip { at, byte } if !data.is_empty() => {
            let n = data.len();
            data[at % n] = *byte;
        }
        Edit::Insert { at, bytes } => {
            let at = at % (data.len() + 1);
            data.splice(at..at, bytes.iter().copied());
        }
        Edit::Cut { at, len } if !data.is_empty() => {
            let at = at % data.len();
            let end = (at + len).min(data.len());
            data.drain(at..end);
        }
        Edit::Repeat { line, times } => {
            let mut lines = text_lines(data);
            let n = lines.len();
            let copy = lines[line % n].clone();
            for _ in 0..*times {
                lines.insert(line % n, copy.clone());
            }
            *data = lines.join(&b'\n');
        }
        _ => {}
    }
}

/// A valid VSCSI record (version 1 or 2) with the given fields.
fn vscsi_record(version: u8, cmd: u16, length: u32, lbn: u64, ts: u64) -> Vec<u8> {
    let l = if version == 1 { vscsi::V1 } else { vscsi::V2 };
    let mut rec = vec![0u8; l.record_bytes];
    let (cmd_at, ver_at, len_at) = if version == 1 { (12, 14, 4) } else { (0, 2, 8) };
    rec[cmd_at..cmd_at + 2].copy_from_slice(&cmd.to_le_bytes());
    rec[ver_at..ver_at + 2].copy_from_slice(&(u16::from(version) << 8).to_le_bytes());
    rec[len_at..len_at + 4].copy_from_slice(&length.to_le_bytes());
    rec[16..24].copy_from_slice(&lbn.to_le_bytes());
    rec[24..32].copy_from_slice(&ts.to_le_bytes());
    rec
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        parse_everything(&data);
    }

    #[test]
    fn random_lines_of_digits_and_separators_never_panic(
        data in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b','), Just(b' '), Just(b'-'), Just(b'.'), Just(b'x'),
                        Just(b'e'), b'0'..=b'9'],
            0..256,
        )
    ) {
        parse_everything(&data);
    }

    #[test]
    fn mutated_valid_traces_never_panic(
        seed in 0..SEEDS.len() - 1,
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let mut data = SEEDS[seed].to_vec();
        for e in &edits {
            apply(&mut data, e);
        }
        parse_everything(&data);
    }

    #[test]
    fn mutated_vscsi_records_never_panic(
        records in proptest::collection::vec(
            (1u8..=2, any::<u16>(), any::<u32>(), any::<u64>(), any::<u64>()), 1..6),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in 0usize..48,
    ) {
        // records of one version, as a file holds, then bytes flipped and the tail cut
        let version = records[0].0;
        let mut data: Vec<u8> = records
            .iter()
            .flat_map(|&(_, cmd, length, lbn, ts)| vscsi_record(version, cmd, length, lbn, ts))
            .collect();
        for (at, byte) in flips {
            let n = data.len();
            data[at % n] = byte;
        }
        data.truncate(data.len().saturating_sub(cut));
        parse_everything(&data);
    }
}

#[test]
fn the_seeds_parse() {
    assert_eq!(wc::parse(SEEDS[0]).unwrap().len(), 3);
    assert_eq!(msr::parse(SEEDS[1]).unwrap().len(), 2);
    assert_eq!(spc::parse(SEEDS[2]).unwrap().len(), 2);
    assert_eq!(ascii::parse(SEEDS[3], &ascii::AsciiOptions::default()).unwrap().len(), 2);
    assert_eq!(azure::parse(SEEDS[4]).unwrap().time.len(), 2);
    let rec = vscsi_record(2, 0x28, 4096, 8, 2_500_000);
    assert_eq!(vscsi::parse(&rec, false).unwrap().len(), 1);
}

#[test]
fn a_bad_field_is_an_error_naming_its_line() {
    // the check the properties rely on, on a known case: line 2's size is negative
    let error = spc::parse(b"0,1,512,r,0.1\n0,1,-512,r,0.2\n").unwrap_err();
    check_error("spc", b"", &error, 2);
    assert!(matches!(error, Error::Parse { line: 2, .. }), "{error}");
}
