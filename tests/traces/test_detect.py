"""Format detection from a file's first bytes, on generated files of every format."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tailbound.errors import TraceFormatError
from tailbound.traces import FORMATS, detect_format, read_trace


def _v1(cmd: int, serial: int = 1) -> bytes:
    return struct.pack("<IIIHHQQ", serial, 512, 1, cmd, 0x0100, 8, 1000)


def _v2(cmd: int) -> bytes:
    return struct.pack("<HHIIIQQQ", cmd, 0x0200, 1, 512, 1, 8, 1000, 50)


CASES: list[tuple[str, str | bytes]] = [
    ("wc", "564037000,0x00001000,DiskWrite\n564243000,0x00001000,DiskRead\n"),
    ("wc", "1,0x10,Get\r\n2,0x10,Put\r\n"),
    ("msr", "128166386783630075,hm,0,Write,3164164096,40960,2896\n"),
    ("msr", "128166386783630075,h\xe9te".encode("latin-1") + b",0,Read,0,512,1\n"),
    ("spc", "0,20941264,8192,W,0.551706\n1,20939840,8192,r,0.554041\n"),
    ("spc", "0,20941264,8192,w,0.551706,extra\n"),
    ("disksim", "0.000 5 174224064 16 1\n0.221 5 162947904 16 1\n"),
    ("disksim", "0 5 174224064 16 1\n0.5 5 162947904 16 1\n"),
    ("mqsim", "11413000 0 657728 16 1\n11565000 1 31244784 64 0\n"),
    ("azure-llm", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n"),
    ("csv", "time,op,size\n0.1,R,4096\n"),
    (
        "azure-llm",
        b"\xef\xbb\xbfTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,1\n",
    ),
    ("vscsi", _v1(0x28) + _v1(0x2A)),
    ("vscsi", _v1(0x2A, serial=0x0200_0001) * 3),  # a serial that looks like a v2 header
    ("vscsi", _v1(0x00) + _v1(0x28)),  # a TEST UNIT READY first
    ("vscsi", _v2(0x28) + _v2(0x8A)),
    ("vscsi", (_v1(0x28) * 2)[:40]),  # truncated: still VSCSI, so the reader names the record
]


@pytest.mark.parametrize(("fmt", "content"), CASES)
def test_detect_format_of_generated_files(tmp_path: Path, fmt: str, content: str | bytes) -> None:
    path = tmp_path / "trace.bin"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert detect_format(path) == fmt
    assert fmt in FORMATS


def test_detect_format_reads_vscsi_v2(tmp_path: Path) -> None:
    path = tmp_path / "t.vscsi"
    path.write_bytes(_v2(0x28) + _v2(0x8A))
    trace = read_trace(path)
    assert trace.op.tolist() == [0, 1] and trace.size.tolist() == [512, 512]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b"\n \n", "only blank lines"),
        (b"\x00\x01\x02\x03" * 16, "binary file of no known trace format"),
        (b"hello world\n", "cannot tell the trace format from its first line"),
    ],
)
def test_detect_format_failures(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "t.dat"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match=message):
        detect_format(path)


def test_detect_format_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="cannot read the file"):
        detect_format(tmp_path / "missing")


def test_detect_format_sample_cut_mid_line(tmp_path: Path) -> None:
    # A long file whose 64 KiB sample ends inside a line still detects from whole lines.
    path = tmp_path / "big.trace"
    path.write_text("".join(f"{i * 1000} 0 {i} 8 1\n" for i in range(20_000)))
    assert detect_format(path) == "mqsim"
