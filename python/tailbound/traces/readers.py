"""Reading trace files — INTERIM: only the WorkloadCompactor text format.

This module is a stand-in so that ``tailbound characterize`` can read the wc62 traces on the
``charz`` branch. Another helper is writing the real ``read_trace`` (auto-detecting every format
of ``../shared/data/README.md``); the lead replaces this file with that one at merge. Keep the
signature ``read_trace(path, format=None)``.

The WorkloadCompactor format: CSV without header, one request per line,
``arrival_ns,0xHEXSIZE,OP`` with ``arrival_ns`` decimal nanoseconds from the start of the
recording (time 0), the size in hexadecimal bytes, and ``OP`` one of ``DiskRead``,
``DiskWrite``, ``Get`` (a read) or ``Put`` (a write). Parsed with pyarrow and numpy, never a
Python loop per line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from tailbound.errors import TraceFormatError
from tailbound.traces.trace import Op, Trace

#: Formats this interim reader knows.
FORMATS = ("wc",)

_READ_OPS = ("DiskRead", "Get")
_WRITE_OPS = ("DiskWrite", "Put")
_MAX_HEX_DIGITS = 15  # keeps sizes within int64 without overflow


def read_trace(path: str | Path, format: str | None = None) -> Trace:
    """Read the trace at ``path``; ``format`` is ``"wc"`` or ``None`` (the only one known here).

    Raises :class:`TraceFormatError` naming the file, line and field of the first bad record.
    """
    path = Path(path)
    if format not in (None, *FORMATS):
        raise TraceFormatError(path, f"unknown format {format!r} (this reader knows: wc)")
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise TraceFormatError(path, f"cannot read the file: {e.strerror}") from None
    if not raw.strip():
        raise TraceFormatError(path, "the trace has no requests")
    table = _parse_csv(path, raw.rstrip(b"\r\n"))
    time = _arrival_seconds(path, table.column(0))
    size = _hex_sizes(path, table.column(1))
    op = _ops(path, table.column(2))
    return Trace.from_arrays(time=time, op=op, size=size, name=path.stem, path=str(path))


def _check_field_counts(path: Path, raw: bytes) -> None:
    """Every line has exactly three comma-separated fields (found with numpy, not a loop)."""
    data = np.frombuffer(raw, dtype=np.uint8)
    newlines = np.flatnonzero(data == ord("\n"))
    line_of_comma = np.searchsorted(newlines, np.flatnonzero(data == ord(",")))
    commas = np.bincount(line_of_comma, minlength=newlines.shape[0] + 1)
    bad = np.flatnonzero(commas != 2)
    if bad.size:
        raise TraceFormatError(
            path,
            f"expected 3 comma-separated fields, got {commas[bad[0]] + 1}",
            line=int(bad[0]) + 1,
        )


def _parse_csv(path: Path, raw: bytes) -> pa.Table:
    import pyarrow.csv as csv

    names = ["arrival_ns", "size", "op"]
    try:
        return csv.read_csv(
            pa.py_buffer(raw),
            read_options=csv.ReadOptions(column_names=names),
            parse_options=csv.ParseOptions(ignore_empty_lines=False),
            convert_options=csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string())),
        )
    except pa.ArrowInvalid as e:
        _check_field_counts(path, raw)  # names the line when a field is missing or extra
        raise TraceFormatError(path, f"not a WorkloadCompactor trace: {e}") from None


def _first_false(mask: pa.ChunkedArray) -> int:
    return int(np.flatnonzero(~mask.to_numpy(zero_copy_only=False))[0])


def _arrival_seconds(path: Path, column: pa.ChunkedArray) -> NDArray[np.float64]:
    valid = pc.fill_null(pc.match_substring_regex(column, r"^\s*\d{1,18}\s*$"), False)
    if not pc.all(valid).as_py():
        row = _first_false(valid)
        raise TraceFormatError(
            path,
            f"expected non-negative integer nanoseconds, got {column[row].as_py()!r}",
            line=row + 1,
            field="arrival_ns",
        )
    ns = pc.cast(pc.utf8_trim_whitespace(column), pa.int64()).to_numpy()
    return ns / 1e9


def _hex_sizes(path: Path, column: pa.ChunkedArray) -> NDArray[np.int64]:
    pattern = rf"^\s*0[xX][0-9a-fA-F]{{1,{_MAX_HEX_DIGITS}}}\s*$"
    valid = pc.fill_null(pc.match_substring_regex(column, pattern), False)
    if not pc.all(valid).as_py():
        row = _first_false(valid)
        raise TraceFormatError(
            path,
            f"expected a hexadecimal size such as 0x1000, got {column[row].as_py()!r}",
            line=row + 1,
            field="size",
        )
    digits = pc.utf8_slice_codeunits(pc.utf8_trim_whitespace(column), 2).combine_chunks()
    return _decode_hex(digits)


def _decode_hex(digits: pa.StringArray) -> NDArray[np.int64]:
    """Hexadecimal strings (validated, without ``0x``) to integers, vectorised over the bytes
    of the Arrow string buffer: each digit is shifted by 4 bits per digit after it."""
    _, offsets_buffer, data_buffer = digits.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[
        digits.offset : digits.offset + len(digits) + 1
    ].astype(np.int64)
    chars = np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0] : offsets[-1]].astype(np.int64)
    offsets -= offsets[0]
    value = np.where(chars >= ord("a"), chars - (ord("a") - 10), chars)
    value = np.where((chars >= ord("A")) & (chars < ord("a")), chars - (ord("A") - 10), value)
    value = np.where(chars <= ord("9"), chars - ord("0"), value)
    row = np.repeat(np.arange(len(digits)), np.diff(offsets))
    after = offsets[row + 1] - 1 - np.arange(chars.shape[0])  # digits after this one
    return np.asarray(np.add.reduceat(value << (4 * after), offsets[:-1]), dtype=np.int64)


def _ops(path: Path, column: pa.ChunkedArray) -> NDArray[np.uint8]:
    trimmed = pc.utf8_trim_whitespace(column)
    is_read = pc.fill_null(pc.is_in(trimmed, pa.array(_READ_OPS)), False)
    is_write = pc.fill_null(pc.is_in(trimmed, pa.array(_WRITE_OPS)), False)
    valid = pc.or_(is_read, is_write)
    if not pc.all(valid).as_py():
        row = _first_false(valid)
        raise TraceFormatError(
            path,
            f"expected DiskRead, DiskWrite, Get or Put, got {column[row].as_py()!r}",
            line=row + 1,
            field="op",
        )
    return np.where(is_write.to_numpy(zero_copy_only=False), Op.WRITE, Op.READ).astype(np.uint8)
