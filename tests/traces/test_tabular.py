"""Generic CSV and Parquet traces with a column mapping, and the Parquet writer's round trip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tailbound.errors import ConfigError, TraceFormatError
from tailbound.traces import Op, Trace, detect_format, read_trace, write_parquet


def _same(a: Trace, b: Trace) -> None:
    assert a.time.tolist() == b.time.tolist()
    assert a.op.tolist() == b.op.tolist()
    assert a.size.tolist() == b.size.tolist()
    for x, y in ((a.offset, b.offset), (a.source, b.source)):
        assert (x is None and y is None) or (
            x is not None and y is not None and np.array_equal(x, y)
        )
    assert (a.origin_s, a.duration_s, a.name) == (b.origin_s, b.duration_s, b.name)


@pytest.mark.parametrize("with_columns", [True, False])
def test_tabular_parquet_round_trip_keeps_metadata(
    tmp_path: Path, small_trace: Trace, with_columns: bool
) -> None:
    trace = Trace(
        time=small_trace.time,
        op=small_trace.op,
        size=small_trace.size,
        offset=small_trace.offset if with_columns else None,
        source=np.arange(len(small_trace), dtype=np.int32) if with_columns else None,
        origin_s=1_172_165_078.363,
        duration_s=float(small_trace.time[-1]) + 1.0,
        name="small trace",
    )
    path = write_parquet(trace, tmp_path / "out.parquet")
    assert detect_format(path) == "parquet"
    _same(read_trace(path), trace)
    assert read_trace(path, name="other").name == "other"
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]  # no temporary left behind


def test_tabular_parquet_write_failure_leaves_nothing(tmp_path: Path, small_trace: Trace) -> None:
    target = tmp_path / "dir.parquet"
    target.mkdir()  # a folder is refused before anything is written
    with pytest.raises(ConfigError, match="is a folder"):
        write_parquet(small_trace, target)
    assert [p.name for p in tmp_path.iterdir()] == ["dir.parquet"]
    assert not any(target.iterdir())


def test_tabular_parquet_replaces_an_existing_file(tmp_path: Path, small_trace: Trace) -> None:
    path = tmp_path / "t.parquet"
    path.write_text("old")
    write_parquet(small_trace, path)
    assert len(read_trace(path)) == len(small_trace)


def test_tabular_parquet_with_mapping(tmp_path: Path) -> None:
    path = tmp_path / "foreign.parquet"
    table = pa.table(
        {
            "ts_us": [5_000_000, 1_000_000, 3_000_000],
            "kind": ["write", "READ", "read"],
            "bytes": [512, 4096, 8192],
            "lun": [1, 2, 3],
        }
    )
    pq.write_table(table, path)
    with pytest.raises(TraceFormatError, match="not written by tailbound: name its columns"):
        read_trace(path)
    with pytest.warns(UserWarning, match="not sorted"):
        trace = read_trace(
            path, time="ts_us", op="kind", size="bytes", source="lun", time_unit="us", rebase=True
        )
    assert trace.time.tolist() == [0.0, 2.0, 4.0]
    assert trace.origin_s == 1.0
    assert trace.op.tolist() == [Op.READ, Op.READ, Op.WRITE]
    assert trace.source is not None and trace.source.tolist() == [2, 3, 1]
    assert trace.name == "foreign"


def test_tabular_csv_headerless_by_index_with_integer_ops(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("10;1;4096;7\n20;0;512;9\n")
    trace = read_trace(
        path,
        format="csv",
        header=False,
        delimiter=";",
        time=0,
        op=1,
        size=2,
        offset=3,
        time_unit="ms",
        read_values=[1],
        write_values=[0],
    )
    assert trace.time.tolist() == [0.01, 0.02]
    assert trace.op.tolist() == [Op.READ, Op.WRITE]
    assert trace.offset is not None and trace.offset.tolist() == [7, 9]
    assert trace.origin_s == 0.0


def test_tabular_csv_timestamps_count_from_the_earliest(tmp_path: Path) -> None:
    path = tmp_path / "stamps.csv"
    path.write_text("when,size\n2023-11-16 18:17:04.5,10\n2023-11-16 18:17:03.5,20\n")
    with pytest.warns(UserWarning, match="not sorted"):
        trace = read_trace(path, time="when", size="size")
    assert trace.time.tolist() == [0.0, 1.0]
    assert trace.origin_s == 1_700_158_623.5
    assert np.all(trace.op == Op.READ)  # no op column: every request is a read


def test_tabular_csv_mapping_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("t,size\n0,1\n")
    with pytest.raises(TraceFormatError, match="no size column 'bytes'; columns are t, size"):
        read_trace(path, time="t", size="bytes")
    with pytest.raises(TraceFormatError, match="time column index 5 is out of range"):
        read_trace(path, time=5, size="size")
    with pytest.raises(TraceFormatError, match="both read and write"):
        read_trace(path, time="t", size="size", op="t", read_values=[0], write_values=[0])
    with pytest.raises(TraceFormatError, match="unknown time unit 'h'"):
        read_trace(path, time="t", size="size", time_unit="h")
    with pytest.raises(TraceFormatError, match="a generic CSV needs its columns named"):
        read_trace(path)


def test_tabular_detects_generic_csv(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("t,op,size\n0,R,1\n")
    assert detect_format(path) == "csv"
