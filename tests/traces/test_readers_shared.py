"""Every real trace in ../shared/data loads with the request count and time span found by
reading the file independently (plain Python here, Rust in the reader)."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tailbound.traces import Op, detect_format, read_trace

FILETIME_UNIX_S = 11_644_473_600


def _rows(path: Path, skip_header: bool = False) -> list[list[str]]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return [line.replace(",", " ").split() for line in lines[1 if skip_header else 0 :]]


def _wc(path: Path) -> tuple[int, list[float], float]:
    rows = _rows(path)
    return len(rows), [int(r[0]) / 1e9 for r in rows], 0.0


def _msr(path: Path) -> tuple[int, list[float], float]:
    ticks = [int(r[0]) for r in _rows(path)]
    first = min(ticks)
    return len(ticks), [(t - first) / 1e7 for t in ticks], first / 1e7 - FILETIME_UNIX_S


def _ascii(per_s: float) -> Callable[[Path], tuple[int, list[float], float]]:
    def expect(path: Path) -> tuple[int, list[float], float]:
        rows = _rows(path)
        return len(rows), [float(r[0]) / per_s for r in rows], 0.0

    return expect


def _vscsi(path: Path) -> tuple[int, list[float], float]:
    data = path.read_bytes()
    records = list(struct.iter_unpack("<IIIHHQQ", data))
    ts = [r[6] for r in records]
    assert all(r[3] in (0x28, 0x2A) for r in records)  # the file holds only reads and writes
    return len(records), [(t - ts[0]) / 1e6 for t in ts], ts[0] / 1e6


def _azure(path: Path) -> tuple[int, list[float], float]:
    lines = [line for line in path.read_text().splitlines() if line.strip()][1:]
    stamps = [
        dt.datetime.strptime(line.split(",")[0][:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=dt.UTC)
        for line in lines
    ]
    first = min(stamps)
    return len(stamps), [(s - first).total_seconds() for s in stamps], first.timestamp()


SHARED = [
    ("msr/hm_0_head7016.csv", "msr", _msr),
    ("msr/rsrch_1.csv", "msr", _msr),
    ("msr/wdev_1.csv", "msr", _msr),
    ("msr/wdev_3.csv", "msr", _msr),
    ("msnfs/MSN-FS-30s-ms.txt", "disksim", _ascii(1e3)),
    ("mqsim/wsrch-small.trace", "mqsim", _ascii(1e9)),
    ("cloudphysics/cloudPhysicsIO.vscsi", "vscsi", _vscsi),
    ("azure_llm/AzureLLMInferenceTrace_code.csv", "azure-llm", _azure),
    ("azure_llm/AzureLLMInferenceTrace_conv.csv", "azure-llm", _azure),
    ("wc62/traces/trace0000.txt", "wc", _wc),
    ("wc62/traces/trace0036.txt", "wc", _wc),
]


@pytest.mark.parametrize(("relpath", "fmt", "expect"), SHARED, ids=[s[0] for s in SHARED])
def test_readers_shared_file_count_span_and_origin(
    data_dir: Path, relpath: str, fmt: str, expect: Callable
) -> None:
    path = data_dir / relpath
    n, times, origin_s = expect(path)
    trace = read_trace(path)
    assert len(trace) == n
    assert trace.name == path.stem
    assert trace.time[0] == pytest.approx(min(times), abs=1e-6)
    assert trace.time[-1] == pytest.approx(max(times), abs=1e-6)
    assert trace.duration == pytest.approx(max(times), abs=1e-6)
    assert trace.origin_s == pytest.approx(origin_s, abs=1e-5)
    assert np.all(np.diff(trace.time) >= 0)


@pytest.mark.parametrize(("relpath", "fmt"), [(s[0], s[1]) for s in SHARED])
def test_readers_detect_shared_format(data_dir: Path, relpath: str, fmt: str) -> None:
    assert detect_format(data_dir / relpath) == fmt


def test_readers_all_wc62_traces(data_dir: Path) -> None:
    paths = sorted((data_dir / "wc62" / "traces").glob("trace*.txt"))
    assert len(paths) == 62
    for path in paths:
        lines = [line for line in path.read_bytes().splitlines() if line.strip()]
        trace = read_trace(path, duration_s=600)
        assert len(trace) == len(lines), path.name
        assert trace.time[-1] == int(lines[-1].split(b",")[0]) / 1e9, path.name
        assert trace.duration == 600.0
        if path.name == "trace0036.txt":
            assert len(trace) == 110_849


def test_readers_msr_columns_match_the_file(data_dir: Path) -> None:
    path = data_dir / "msr" / "hm_0_head7016.csv"
    rows = [line.split(",") for line in path.read_text().splitlines()]
    trace = read_trace(path)  # the file is in time order, so rows and requests align
    assert trace.offset is not None and trace.source is not None
    assert trace.offset.tolist() == [int(r[4]) for r in rows]
    assert trace.size.tolist() == [int(r[5]) for r in rows]
    assert trace.source.tolist() == [int(r[2]) for r in rows]
    assert trace.op.tolist() == [Op.READ if r[3] == "Read" else Op.WRITE for r in rows]


def test_readers_ascii_columns_match_the_file(data_dir: Path) -> None:
    path = data_dir / "mqsim" / "wsrch-small.trace"
    rows = _rows(path)
    trace = read_trace(path)
    assert trace.offset is not None and trace.source is not None
    assert trace.offset.tolist() == [int(r[2]) * 512 for r in rows]
    assert trace.size.tolist() == [int(r[3]) * 512 for r in rows]
    assert trace.source.tolist() == [int(r[1]) for r in rows]
    assert trace.op.tolist() == [Op.READ if r[4] == "1" else Op.WRITE for r in rows]


def test_readers_vscsi_columns_match_the_file(data_dir: Path) -> None:
    path = data_dir / "cloudphysics" / "cloudPhysicsIO.vscsi"
    records = list(struct.iter_unpack("<IIIHHQQ", path.read_bytes()))
    trace = read_trace(path)
    assert trace.size.tolist() == [r[1] for r in records]
    assert trace.offset is not None and trace.offset.tolist() == [r[5] * 512 for r in records]
    assert trace.op.tolist() == [Op.READ if r[3] == 0x28 else Op.WRITE for r in records]


def test_readers_azure_sizes_are_token_counts(data_dir: Path) -> None:
    path = data_dir / "azure_llm" / "AzureLLMInferenceTrace_code.csv"
    rows = [line.split(",") for line in path.read_text().splitlines()[1:]]
    total = read_trace(path)
    context = read_trace(path, size="context")
    assert np.all(total.op == Op.READ)
    assert total.size.tolist() == [int(r[1]) + int(r[2]) for r in rows]
    assert context.size.tolist() == [int(r[1]) for r in rows]
