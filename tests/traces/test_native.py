"""Options of the Rust-backed readers: conventions, presets and their validation."""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import numpy as np
import pytest

from tailbound.errors import TraceFormatError
from tailbound.traces import FORMATS, Op, read_azure_llm_requests, read_trace


@pytest.mark.parametrize(
    ("fmt", "options", "time", "size"),
    [
        ("disksim", {}, [0.0015, 0.002], [4096, 512]),
        ("msnfs", {}, [0.0015, 0.002], [4096, 512]),
        ("mqsim", {}, [1.5e-9, 2e-9], [4096, 512]),
        ("disksim", {"time_unit": "s"}, [1.5, 2.0], [4096, 512]),
        ("disksim", {"time_unit": "us", "sector_bytes": 4096}, [1.5e-6, 2e-6], [32768, 4096]),
    ],
)
def test_native_ascii_conventions(
    tmp_path: Path, fmt: str, options: dict, time: list[float], size: list[int]
) -> None:
    path = tmp_path / "t.txt"
    path.write_text("1.5 3 10 8 1\n2 4 20 1 0\n")
    trace = read_trace(path, format=fmt, **options)
    assert trace.time.tolist() == time
    assert trace.size.tolist() == size
    assert trace.op.tolist() == [Op.READ, Op.WRITE]
    assert trace.source is not None and trace.source.tolist() == [3, 4]
    sector = options.get("sector_bytes", 512)
    assert trace.offset is not None and trace.offset.tolist() == [10 * sector, 20 * sector]


def test_native_ascii_rw_values_are_options(tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text("1 0 0 1 8\n2 0 0 1 9\n")
    trace = read_trace(path, format="disksim", read_value=9, write_value=8)
    assert trace.op.tolist() == [Op.WRITE, Op.READ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"time_unit": "h"}, "unknown time unit 'h'"),
        ({"sector_bytes": 0}, "sector size must be positive"),
        ({"read_value": 3, "write_value": 3}, "read and write values must differ"),
    ],
)
def test_native_ascii_bad_options(tmp_path: Path, options: dict, message: str) -> None:
    path = tmp_path / "t.txt"
    path.write_text("1 0 0 1 1\n")
    with pytest.raises(TraceFormatError, match=message) as info:
        read_trace(path, format="disksim", **options)
    assert info.value.path == str(path)


def test_native_vscsi_other_commands_option(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t.vscsi"
    rec = [struct.pack("<IIIHHQQ", 1, 512, 1, c, 0x0100, 0, t) for c, t in ((0x28, 0), (0x35, 1))]
    path.write_bytes(b"".join(rec))
    with caplog.at_level(logging.INFO, logger="tailbound.traces.native"):
        assert len(read_trace(path)) == 1
    assert "skipped 1 SCSI commands" in caplog.text
    with pytest.raises(TraceFormatError, match="other_commands must be"):
        read_trace(path, other_commands="ignore")


def test_native_azure_requests_keep_both_token_counts(tmp_path: Path) -> None:
    path = tmp_path / "llm.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:17:05.0000000,300,3\n"
        "2023-11-16 18:17:04.0000000,100,1\n"
        "2023-11-16 18:17:06.0000000,200,2\n"
    )
    with pytest.warns(UserWarning, match="not sorted"):
        requests = read_azure_llm_requests(path)
    assert requests.trace.time.tolist() == [0.0, 1.0, 2.0]
    assert requests.context_tokens.tolist() == [100, 300, 200]
    assert requests.generated_tokens.tolist() == [1, 3, 2]
    assert requests.trace.size.tolist() == [101, 303, 202]
    assert np.all(requests.trace.op == Op.READ)
    with pytest.raises(TraceFormatError, match="size must be"):
        read_trace(path, size="bytes")


def test_native_registry_lists_options() -> None:
    assert FORMATS["disksim"].options == (
        "time_unit",
        "sector_bytes",
        "read_value",
        "write_value",
        "name",
        "duration_s",
    )
    assert "other_commands" in FORMATS["vscsi"].options
    assert set(FORMATS) == {
        "wc",
        "msr",
        "disksim",
        "msnfs",
        "mqsim",
        "vscsi",
        "spc",
        "azure-llm",
        "csv",
        "parquet",
    }


def test_native_text_readers_skip_a_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(
        b"\xef\xbb\xbfTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,2\n"
    )
    assert read_trace(path).size.tolist() == [3]
