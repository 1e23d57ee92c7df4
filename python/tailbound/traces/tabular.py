"""Generic tabular traces through Apache Arrow: CSV and Parquet files whose columns the user
names, and the Parquet writer whose files read back as the same :class:`Trace`.

A column mapping names the columns holding arrival time, size and optionally op, offset and
source (by header name, or by 0-based index for a CSV without header), the unit of a numeric
time column, and which op values mean read and write. Errors name the file, the line (CSV: line
in the file, header included; Parquet: 1-based row) and the column.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tailbound.atomic import atomic_path
from tailbound.errors import TraceFormatError
from tailbound.traces.columns import make_trace, units_per_second
from tailbound.traces.trace import Op, Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from tailbound.lazy import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
else:

    class _Lazy:
        """A module imported on first use: pyarrow costs ~0.2 s to import, and the commands
        that read only native formats (wc62, MSR, SPC, ... through the Rust parser) never
        touch it."""

        def __init__(self, name: str) -> None:
            self._name = name
            self._module: ModuleType | None = None

        def __getattr__(self, attr: str) -> Any:
            if self._module is None:
                self._module = importlib.import_module(self._name)
            return getattr(self._module, attr)

    pa = _Lazy("pyarrow")
    pc = _Lazy("pyarrow.compute")
    pacsv = _Lazy("pyarrow.csv")
    pq = _Lazy("pyarrow.parquet")

#: Op values read as a read or a write by default, compared without regard to case.
DEFAULT_READ_VALUES: tuple[str, ...] = ("read", "r", "get", "diskread")
DEFAULT_WRITE_VALUES: tuple[str, ...] = ("write", "w", "put", "diskwrite")

#: Schema metadata key of the Parquet files :func:`write_parquet` writes.
METADATA_KEY = b"tailbound.trace"
#: Version of that metadata; a reader refuses newer versions rather than misreading them.
METADATA_VERSION = 1

_NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"

Column = str | int


@dataclass(frozen=True)
class _Table:
    """An Arrow table of one file and how its rows map to lines, for error messages."""

    path: Path
    table: pa.Table
    first_line: int  # line (or row) number of row 0
    rows: NDArray[np.int64]  # indices of the rows kept (blank CSV lines are dropped)

    def fail(self, row: int, column: str, message: str) -> TraceFormatError:
        return TraceFormatError(
            self.path, message, line=int(self.rows[row]) + self.first_line, field=column
        )

    def column(self, name: str) -> pa.Array:
        array = self.table.column(name).combine_chunks()
        if self.rows.shape[0] == len(array):  # nothing dropped: rows are 0..n-1
            return array
        return array.take(pa.array(self.rows))


def _first(mask: NDArray[np.bool_]) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _show(array: pa.Array, row: int) -> str:
    return repr(str(array[row].as_py()))


def _no_nulls(t: _Table, array: pa.Array, name: str) -> None:
    if array.null_count:
        row = _first(array.is_null().to_numpy(zero_copy_only=False))
        assert row is not None
        raise t.fail(row, name, "empty value")


def _numbers(t: _Table, name: str) -> pa.Array:
    """Column ``name`` as a numeric Arrow array, naming the first value that is not a number."""
    array = t.column(name)
    _no_nulls(t, array, name)
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        ok = pc.match_substring_regex(array, _NUMBER).to_numpy(zero_copy_only=False)
        row = _first(~ok)
        if row is not None:
            raise t.fail(row, name, f"not a number: {_show(array, row)}")
        return pc.cast(pc.utf8_trim_whitespace(array), pa.float64())
    if pa.types.is_integer(array.type) or pa.types.is_floating(array.type):
        return array
    raise t.fail(0, name, f"expected numbers, the column holds {array.type}")


def _integers(t: _Table, name: str, *, minimum: int, what: str) -> NDArray[np.int64]:
    """Column ``name`` as int64 values ≥ ``minimum`` (``what`` names the quantity in errors)."""
    array = _numbers(t, name)
    values = array.to_numpy(zero_copy_only=False)
    if values.dtype.kind == "f":
        row = _first(~np.isfinite(values) | (values != np.round(values)))
        if row is not None:
            raise t.fail(row, name, f"not an integer: {_show(array, row)}")
    row = _first(values < minimum)
    if row is not None:
        raise t.fail(row, name, f"negative {what}: {_show(array, row)}")
    return values.astype(np.int64)


def _times(t: _Table, name: str, unit: str, rebase: bool) -> tuple[NDArray[np.float64], float]:
    """Arrival times in seconds and the origin (s). Timestamp columns (taken as UTC) always count
    from their earliest value, whose Unix time becomes the origin; numeric columns count in
    ``unit`` from the file's zero, or from their earliest value with ``rebase``."""
    array = t.column(name)
    _no_nulls(t, array, name)
    if len(array) == 0:
        return np.empty(0), 0.0
    if pa.types.is_timestamp(array.type):
        ns = pc.cast(array, pa.timestamp("ns")).to_numpy(zero_copy_only=False).view(np.int64)
        first = int(ns.min())
        origin = first // 1_000_000_000 + (first % 1_000_000_000) / 1e9
        return (ns - first) / 1e9, origin
    seconds = _numbers(t, name).to_numpy(zero_copy_only=False).astype(np.float64)
    seconds = seconds / units_per_second(unit, t.path)
    row = _first(~np.isfinite(seconds))
    if row is not None:
        raise t.fail(row, name, f"not a finite time: {_show(array, row)}")
    if rebase:
        first_s = float(seconds.min())
        return seconds - first_s, first_s
    return seconds, 0.0


def _op_key(value: object) -> str:
    """How an op value is compared: its text, stripped and lower-cased (``1.0`` as ``1``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip().lower()


def _ops(
    t: _Table, name: str, reads: Sequence[object], writes: Sequence[object]
) -> NDArray[np.uint8]:
    """Column ``name`` as :class:`Op` codes, matching each value's text without regard to case
    or surrounding spaces against ``reads`` and ``writes``. The column is dictionary-encoded
    first, so only its distinct values are compared."""
    read_set = {_op_key(v) for v in reads}
    write_set = {_op_key(v) for v in writes}
    if read_set & write_set:
        both = sorted(read_set & write_set)
        raise TraceFormatError(t.path, f"op values {both} are both read and write", field="op")
    array = t.column(name)
    _no_nulls(t, array, name)
    encoded = array.dictionary_encode()
    unknown = 2
    codes = np.array(
        [
            Op.READ if key in read_set else Op.WRITE if key in write_set else unknown
            for key in map(_op_key, encoded.dictionary.to_pylist())
        ],
        dtype=np.uint8,
    )
    ops = codes[encoded.indices.to_numpy(zero_copy_only=False)]
    row = _first(ops == unknown)
    if row is not None:
        expected = ", ".join(map(repr, sorted(read_set))) + " (read) or "
        expected += ", ".join(map(repr, sorted(write_set))) + " (write)"
        raise t.fail(row, name, f"unknown op {_show(array, row)}, expected {expected}")
    return ops


def _resolve(table: pa.Table, path: Path, column: Column, role: str) -> str:
    """The table's column name for a mapping entry given by name or 0-based index."""
    names = table.column_names
    if isinstance(column, int):
        if 0 <= column < len(names):
            return names[column]
        raise TraceFormatError(
            path, f"{role} column index {column} is out of range: the file has {len(names)}"
        )
    if column in names:
        return column
    raise TraceFormatError(
        path, f"no {role} column {column!r}; columns are {', '.join(names)}", field=column
    )


def _trace_from_table(
    t: _Table,
    *,
    time: Column,
    size: Column,
    op: Column | None,
    offset: Column | None,
    source: Column | None,
    time_unit: str,
    read_values: Sequence[object],
    write_values: Sequence[object],
    rebase: bool,
    name: str | None,
    duration_s: float | None,
    origin_s: float = 0.0,
) -> Trace:
    def col(c: Column, role: str) -> str:
        return _resolve(t.table, t.path, c, role)

    if t.rows.shape[0] == 0:
        raise TraceFormatError(t.path, "the trace has no requests")

    times, origin = _times(t, col(time, "time"), time_unit, rebase)
    n = times.shape[0]
    ops = (
        np.full(n, Op.READ, dtype=np.uint8)
        if op is None
        else _ops(t, col(op, "op"), read_values, write_values)
    )
    source_ids = None
    if source is not None:
        source_ids = _integers(t, col(source, "source"), minimum=0, what="source id")
        if n and source_ids.max() > np.iinfo(np.int32).max:
            row = int(np.argmax(source_ids))
            raise t.fail(row, col(source, "source"), "source id does not fit 32 bits")
    return make_trace(
        t.path,
        time=times,
        op=ops,
        size=_integers(t, col(size, "size"), minimum=0, what="size"),
        offset=None
        if offset is None
        else _integers(t, col(offset, "offset"), minimum=0, what="offset"),
        source=source_ids,
        origin_s=origin_s + origin,
        name=name,
        duration_s=duration_s,
    )


def _csv_table(path: Path, header: bool, delimiter: str) -> _Table:
    invalid: list[tuple[int | None, int, int]] = []

    def on_invalid(row: pacsv.InvalidRow) -> str:
        invalid.append((row.number, row.expected_columns, row.actual_columns))
        return "error"

    def read(use_threads: bool) -> pa.Table:
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(
                use_threads=use_threads, autogenerate_column_names=not header
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter, ignore_empty_lines=False, invalid_row_handler=on_invalid
            ),
        )

    try:
        try:
            table = read(use_threads=True)
        except pa.ArrowInvalid:
            invalid.clear()
            table = read(use_threads=False)  # only a single thread knows the rows' numbers
    except pa.ArrowInvalid as e:
        if invalid:
            line, expected, actual = invalid[0]
            raise TraceFormatError(
                path, f"expected {expected} fields, found {actual}", line=line, field="record"
            ) from None
        raise TraceFormatError(path, f"not a readable CSV file: {e}") from None
    # A blank line is a row of nulls (ignore_empty_lines=False keeps line numbers exact): drop it.
    blank = np.ones(table.num_rows, dtype=bool)
    for column in table.columns:
        empty = column.is_null()
        if pa.types.is_string(column.type):
            empty = pc.or_(empty, pc.equal(pc.utf8_trim_whitespace(column), ""))
        blank &= empty.to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(~blank).astype(np.int64)
    return _Table(path, table, 2 if header else 1, rows)


def read_csv(
    path: Path,
    *,
    time: Column | None = None,
    size: Column | None = None,
    op: Column | None = None,
    offset: Column | None = None,
    source: Column | None = None,
    time_unit: str = "s",
    read_values: Sequence[object] = DEFAULT_READ_VALUES,
    write_values: Sequence[object] = DEFAULT_WRITE_VALUES,
    header: bool = True,
    delimiter: str = ",",
    rebase: bool = False,
    name: str | None = None,
    duration_s: float | None = None,
) -> Trace:
    """A CSV trace with a column mapping, parsed by Arrow.

    Columns are named by header (``header=True``) or by 0-based index. ``time`` holds numbers in
    ``time_unit`` (``s``, ``ms``, ``us``, ``ns``) counted from the file's zero (from the earliest
    value with ``rebase``, which becomes ``origin_s``), or date-times (taken as UTC: time counts
    from the earliest and ``origin_s`` is its Unix time). ``size``, ``offset`` (bytes) and
    ``source`` are non-negative integers. ``op`` values are matched as text without regard to
    case against ``read_values`` and ``write_values``; without an ``op`` column every request is
    a read. Blank lines are skipped.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "io.csv"
    >>> _ = p.write_text("ts_ms,kind,bytes\\n0,R,4096\\n2.5,W,512\\n")
    >>> t = read_csv(p, time="ts_ms", op="kind", size="bytes", time_unit="ms")
    >>> t.time.tolist(), t.op.tolist(), t.size.tolist()
    ([0.0, 0.0025], [0, 1], [4096, 512])
    """
    if time is None or size is None:
        raise TraceFormatError(
            path,
            "a generic CSV needs its columns named: time= and size= (and op=, offset=, source=)",
        )
    return _trace_from_table(
        _csv_table(path, header, delimiter),
        time=time,
        size=size,
        op=op,
        offset=offset,
        source=source,
        time_unit=time_unit,
        read_values=read_values,
        write_values=write_values,
        rebase=rebase,
        name=name,
        duration_s=duration_s,
    )


def _parquet_table(path: Path) -> _Table:
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise TraceFormatError(path, f"not a readable Parquet file: {e}") from None
    return _Table(path, table, 1, np.arange(table.num_rows, dtype=np.int64))


def _metadata(path: Path, table: pa.Table) -> dict[str, object] | None:
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        return None
    try:
        meta = json.loads(raw)
    except ValueError:
        raise TraceFormatError(path, "tailbound metadata is not JSON", field="metadata") from None
    if not isinstance(meta, dict) or meta.get("version") != METADATA_VERSION:
        raise TraceFormatError(
            path,
            f"tailbound metadata version {meta.get('version') if isinstance(meta, dict) else '?'}"
            f" is not {METADATA_VERSION}",
            field="metadata",
        )
    return meta


def read_parquet(
    path: Path,
    *,
    time: Column | None = None,
    size: Column | None = None,
    op: Column | None = None,
    offset: Column | None = None,
    source: Column | None = None,
    time_unit: str = "s",
    read_values: Sequence[object] = DEFAULT_READ_VALUES,
    write_values: Sequence[object] = DEFAULT_WRITE_VALUES,
    rebase: bool = False,
    name: str | None = None,
    duration_s: float | None = None,
) -> Trace:
    """A Parquet trace: one written by :func:`write_parquet` as it was, or any table with a
    column mapping as for :func:`read_csv` (``time`` and ``size`` are then required).

    A file of :func:`write_parquet` keeps its name, origin and duration (schema metadata
    ``tailbound.trace``); ``name`` and ``duration_s`` still override them.
    """
    t = _parquet_table(path)
    meta = _metadata(path, t.table)
    if time is None and size is None and meta is not None:
        names = t.table.column_names
        return _trace_from_table(
            t,
            time="time",
            size="size",
            op="op",
            offset="offset" if "offset" in names else None,
            source="source" if "source" in names else None,
            time_unit="s",
            read_values=(int(Op.READ),),
            write_values=(int(Op.WRITE),),
            rebase=False,
            origin_s=float(meta["origin_s"]),  # type: ignore[arg-type]
            name=str(meta["name"]) if name is None else name,
            duration_s=meta["duration_s"] if duration_s is None else duration_s,  # type: ignore[arg-type]
        )
    if time is None or size is None:
        raise TraceFormatError(
            path,
            "not written by tailbound: name its columns with time= and size= (and op=, "
            f"offset=, source=); columns are {', '.join(t.table.column_names)}",
        )
    return _trace_from_table(
        t,
        time=time,
        size=size,
        op=op,
        offset=offset,
        source=source,
        time_unit=time_unit,
        read_values=read_values,
        write_values=write_values,
        rebase=rebase,
        name=name,
        duration_s=duration_s,
    )


def write_parquet(trace: Trace, path: str | os.PathLike[str]) -> Path:
    """Write ``trace`` to a Parquet file that :func:`read_parquet` reads back equal.

    Columns ``time`` (float64 s), ``op`` (uint8), ``size`` (int64 B) and, when present, ``offset``
    (int64 B) and ``source`` (int32); name, origin and duration go in the schema metadata. The
    file is written beside its destination under a temporary name and renamed into place, so a
    failure never leaves half a file.

    >>> import tempfile, pathlib
    >>> t = Trace.from_arrays(time=[0.0, 1.0], op=[0, 1], size=[4096, 512], name="x", duration_s=2)
    >>> p = write_parquet(t, pathlib.Path(tempfile.mkdtemp()) / "x.parquet")
    >>> back = read_parquet(p)
    >>> back.time.tolist(), back.duration_s, back.name
    ([0.0, 1.0], 2.0, 'x')
    """
    path = Path(path)
    columns: dict[str, NDArray] = {"time": trace.time, "op": trace.op, "size": trace.size}
    if trace.offset is not None:
        columns["offset"] = trace.offset
    if trace.source is not None:
        columns["source"] = trace.source
    meta = {
        "version": METADATA_VERSION,
        "name": trace.name,
        "origin_s": trace.origin_s,
        "duration_s": trace.duration_s,
    }
    table = pa.table(columns, metadata={METADATA_KEY: json.dumps(meta).encode()})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path
