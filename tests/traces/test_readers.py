from __future__ import annotations

from pathlib import Path

import pytest

from tailbound.errors import TraceFormatError
from tailbound.traces.readers import read_trace


def test_read_wc_trace(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("1000,0x1000,DiskRead\n2000,0xA00,DiskWrite\n3000,0x10,Get\n4000,0x0,Put\n")
    t = read_trace(p)
    assert t.time.tolist() == [1e-6, 2e-6, 3e-6, 4e-6]
    assert t.size.tolist() == [4096, 2560, 16, 0]
    assert t.op.tolist() == [0, 1, 0, 1]
    assert t.name == "t"


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("1000,0x10,DiskRead\n2000,16,DiskRead\n", 2, "size"),
        ("1000,0x10,DiskRead\n2000,0x1g,DiskRead\n", 2, "size"),
        ("1000,0x10,DiskRead\nabc,0x10,DiskRead\n", 2, "arrival_ns"),
        ("1000,0x10,DiskRead\n2000,0x10,Erase\n", 2, "op"),
        ("3000,0x10,DiskRead\n2000,0x10,DiskRead\n", 2, "arrival_ns"),
    ],
)
def test_read_wc_trace_errors_name_line_and_field(
    tmp_path: Path, text: str, line: int, field: str
) -> None:
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(TraceFormatError) as info:
        read_trace(p)
    assert (info.value.line, info.value.field) == (line, field)
    assert str(p) in str(info.value)


def test_read_trace_empty_and_missing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(TraceFormatError, match="empty"):
        read_trace(empty)
    with pytest.raises(TraceFormatError, match="cannot read"):
        read_trace(tmp_path / "missing.txt")
    with pytest.raises(TraceFormatError, match="unknown format"):
        read_trace(empty, format="msr")
