"""Malformed inputs of every format fail with a TraceFormatError naming file, line and field."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tailbound.errors import TraceFormatError
from tailbound.traces import read_trace

AZ = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
AZ_ROW = "2023-11-16 18:17:03.9799600"

# (format, file content, line, field, message fragment)
TEXT_CASES = [
    (
        "wc",
        "1,0x10,DiskRead\n2,0x10,DiskRead\nabc,0x10,DiskRead\n",
        3,
        "arrival_ns",
        "not an integer: 'abc'",
    ),
    ("wc", "1,0x10,DiskRead\n2,0x10,Trim\n", 2, "op", "unknown op 'Trim'"),
    ("wc", "1,-0x10,DiskRead\n", 1, "size", "negative size"),
    ("wc", "1,0x10\n", 1, "op", "expected 3 fields, found 2"),
    ("wc", "1,0x10,DiskRead,9\n", 1, "record", "expected 3 fields, found 4"),
    ("wc", "1,4096,DiskRead\n", 1, "size", "not a hexadecimal"),
    ("msr", "1,h,0,Read,0,4096,1\n\n2,h,0,Read,0,-1,1\n", 3, "size", "negative size: '-1'"),
    ("msr", "1,h,0,Flush,0,4096,1\n", 1, "type", "unknown op 'Flush'"),
    ("msr", "1,h,0,Read,0,4096\n", 1, "response_time", "expected 7 fields, found 6"),
    ("msr", "1,h,0,Read,0x10,4096,1\n", 1, "offset", "not an integer: '0x10'"),
    (
        "disksim",
        "0.5 0 1 8 1\n0.6 0 1 8 5\n",
        2,
        "rw",
        "unknown op 5, expected 1 (read) or 0 (write)",
    ),
    ("disksim", "0.5 0 1 -8 1\n", 1, "size", "negative size"),
    ("disksim", "0.5 0 1 8\n", 1, "rw", "expected 5 fields, found 4"),
    ("disksim", "x 0 1 8 1\n", 1, "time", "not a number: 'x'"),
    ("mqsim", "100 0 1 8 1\n100 0 1 8 1 7\n", 2, "record", "expected 5 fields, found 6"),
    ("spc", "0,1,512,r,0.1\n0,1,512,q,0.2\n", 2, "opcode", "unknown op 'q', expected r or w"),
    ("spc", "0,1,-512,r,0.1\n", 1, "size", "negative size"),
    ("spc", "0,1,512,r\n", 1, "timestamp", "expected 5 fields, found 4"),
    ("spc", "0,1,512,r,soon\n", 1, "timestamp", "not a number: 'soon'"),
    (
        "azure-llm",
        "when,ctx,gen\n",
        1,
        "header",
        "expected TIMESTAMP,ContextTokens,GeneratedTokens",
    ),
    ("azure-llm", f"{AZ}{AZ_ROW},12,3\n2023-11-16 25:00:00,1,1\n", 3, "TIMESTAMP", "not a date"),
    ("azure-llm", f"{AZ}{AZ_ROW},-12,3\n", 2, "ContextTokens", "negative"),
    ("azure-llm", f"{AZ}{AZ_ROW},12\n", 2, "GeneratedTokens", "expected 3 fields, found 2"),
    ("csv", "t,op,size\n0,R,1\n\n1,W,x\n", 4, "size", "not a number: 'x'"),
    ("csv", "t,op,size\n0,R,1\n1,X,2\n", 3, "op", "unknown op 'X'"),
    ("csv", "t,op,size\n0,R,1\n1,W,-2\n", 3, "size", "negative size: '-2'"),
    ("csv", "t,op,size\n0,R,1\n1,W\n", 3, "record", "expected 3 fields, found 2"),
    ("csv", "t,op,size\n0,R,1\n1,W,\n", 3, "size", "empty value"),
    ("csv", "t,op,size\n0,R,1\n1,W,1.5\n", 3, "size", "not an integer: '1.5'"),
]

CSV_MAPPING = {"time": "t", "op": "op", "size": "size"}


@pytest.mark.parametrize(("fmt", "content", "line", "field", "message"), TEXT_CASES)
def test_readers_errors_name_line_and_field(
    tmp_path: Path, fmt: str, content: str, line: int, field: str, message: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(content)
    options = CSV_MAPPING if fmt == "csv" else {}
    with pytest.raises(TraceFormatError) as info:
        read_trace(path, format=fmt, **options)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field)
    assert message in err.message
    assert str(err).startswith(f"{path}, line {line}, field {field}: ")


def _v1(cmd: int, ts: int) -> bytes:
    return struct.pack("<IIIHHQQ", 1, 512, 1, cmd, 0x0100, 8, ts)


@pytest.mark.parametrize(
    ("content", "options", "line", "field", "message"),
    [
        (_v1(0x28, 0) + _v1(0x2A, 1)[:20], {}, 2, "record", "truncated: 20 of 32 bytes"),
        (_v1(0x28, 0)[:10], {}, 1, "record", "truncated: 10 of 32 bytes"),
        (_v1(0x28, 0) + _v1(0x35, 1), {"other_commands": "error"}, 2, "cmd", "SCSI command 0x35"),
        (_v1(0x28, 0)[:15] + b"\x07" + _v1(0x28, 0)[16:], {}, 1, "version", "not a VSCSI"),
    ],
)
def test_readers_vscsi_errors_name_the_record(
    tmp_path: Path, content: bytes, options: dict, line: int, field: str, message: str
) -> None:
    path = tmp_path / "bad.vscsi"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError) as info:
        read_trace(path, format="vscsi", **options)
    assert (info.value.line, info.value.field) == (line, field)
    assert message in info.value.message


def test_readers_vscsi_skips_other_commands(tmp_path: Path) -> None:
    path = tmp_path / "skip.vscsi"
    path.write_bytes(_v1(0x28, 0) + _v1(0x35, 5) + _v1(0x2A, 10))
    trace = read_trace(path)
    assert len(trace) == 2 and trace.time.tolist() == [0.0, 1e-5]


@pytest.mark.parametrize(
    ("fmt", "content"),
    [
        ("wc", "\n\n"),
        ("msr", ""),
        ("disksim", "  \n"),
        ("spc", "\n"),
        ("azure-llm", AZ),
        ("vscsi", ""),
        ("csv", "t,op,size\n"),
    ],
)
def test_readers_empty_trace_is_an_error(tmp_path: Path, fmt: str, content: str) -> None:
    path = tmp_path / "empty.txt"
    path.write_text(content)
    options = CSV_MAPPING if fmt == "csv" else {}
    with pytest.raises(TraceFormatError, match="no requests") as info:
        read_trace(path, format=fmt, **options)
    assert info.value.path == str(path)


def test_readers_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="nope.csv: no such file"):
        read_trace(tmp_path / "nope.csv")
    with pytest.raises(TraceFormatError, match="no such file"):
        read_trace(tmp_path / "nope.csv", format="msr")


def test_readers_directory_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="is a directory"):
        read_trace(tmp_path)
    path = tmp_path / "t.txt"
    path.write_text("1,0x1,DiskRead\n")
    with pytest.raises(TraceFormatError, match="unknown format 'nope'; known formats: wc, msr"):
        read_trace(path, format="nope")
    with pytest.raises(TraceFormatError, match="format 'wc' has no option 'time_unit'"):
        read_trace(path, time_unit="ms")


def test_readers_duration_before_last_arrival_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("1000000000,0x1,DiskRead\n")
    with pytest.raises(TraceFormatError, match="ends before the last arrival"):
        read_trace(path, duration_s=0.5)


def test_readers_unsorted_file_is_sorted_with_a_warning(tmp_path: Path) -> None:
    from tailbound.traces import UnsortedTraceWarning

    path = tmp_path / "t.txt"
    path.write_text("2000,0x2,DiskWrite\n1000,0x1,DiskRead\n")
    with pytest.warns(UnsortedTraceWarning, match="t.txt"):
        trace = read_trace(path)
    assert trace.size.tolist() == [1, 2]
