"""Trace readers — INTERIM: only the WorkloadCompactor CSV format.

This module is a stand-in written on the ``dnc`` branch so WorkloadCompactor can read its traces;
the traces helper is writing the full ``read_trace`` with every format, which replaces this file
at merge. Keep the signature ``read_trace(path, format=None)``.

The WorkloadCompactor format (``wc``): one request per line, no header,
``arrival_ns,0xHEXSIZE,DiskRead|DiskWrite|Get|Put`` with the arrival in decimal nanoseconds from
the start of the recording (so ``origin_s`` is 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from tailbound.errors import TraceFormatError
from tailbound.traces.trace import Op, Trace

#: Operation names of the WorkloadCompactor format and the :class:`Op` they mean.
WC_OPS: dict[str, Op] = {
    "DiskRead": Op.READ,
    "Get": Op.READ,
    "DiskWrite": Op.WRITE,
    "Put": Op.WRITE,
}


def read_trace(path: str | Path, format: str | None = None) -> Trace:
    """Read the trace at ``path``; ``format`` is ``"wc"`` or ``None`` (guess: ``wc``).

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("1000000,0x1000,DiskRead\\n3000000,0x200,DiskWrite\\n")
    >>> t = read_trace(f.name)
    >>> t.time.tolist(), t.op.tolist(), t.size.tolist()
    ([0.001, 0.003], [0, 1], [4096, 512])
    >>> os.unlink(f.name)
    """
    if format not in (None, "wc"):
        raise TraceFormatError(path, f"unknown format {format!r} (this interim reader knows 'wc')")
    return _read_wc(Path(path))


def _read_wc(path: Path) -> Trace:
    try:
        if path.stat().st_size == 0:
            raise TraceFormatError(path, "the file is empty")
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=["time_ns", "size", "op"]),
            convert_options=pacsv.ConvertOptions(
                column_types={"time_ns": pa.string(), "size": pa.string(), "op": pa.string()}
            ),
        )
    except OSError as e:
        raise TraceFormatError(path, f"cannot read the trace: {e}") from None
    except pa.ArrowInvalid as e:
        raise TraceFormatError(path, f"not a WorkloadCompactor trace: {e}") from None
    time_s = table.column("time_ns").to_numpy(zero_copy_only=False).astype(str)
    size_s = table.column("size").to_numpy(zero_copy_only=False).astype(str)
    op_s = table.column("op").to_numpy(zero_copy_only=False).astype(str)
    time_ns = _parse_ints(path, time_s, "arrival_ns", base=10)
    size = _parse_ints(path, size_s, "size", base=16)
    op = np.full(len(op_s), 255, dtype=np.uint8)
    for name, value in WC_OPS.items():
        op[op_s == name] = value
    bad = np.flatnonzero(op == 255)
    if bad.size:
        raise TraceFormatError(
            path,
            f"unknown operation {op_s[bad[0]]!r} (expected one of {', '.join(WC_OPS)})",
            line=int(bad[0]) + 1,
            field="op",
        )
    time = time_ns.astype(np.float64) / 1e9
    if np.any(np.diff(time) < 0):
        line = int(np.flatnonzero(np.diff(time) < 0)[0]) + 2
        raise TraceFormatError(path, "arrival times go backwards", line=line, field="arrival_ns")
    return Trace(time=time, op=op, size=size, name=path.stem)


def _parse_ints(path: Path, text: np.ndarray, field: str, *, base: int) -> np.ndarray:
    """Parse decimal (``base=10``) or ``0x``-hex (``base=16``) integers over the whole column,
    naming the first bad line."""
    text = np.char.strip(text.astype(str))
    if base == 16:
        has_prefix = np.char.startswith(np.char.lower(text), "0x")
        if not np.all(has_prefix):
            line = int(np.flatnonzero(~has_prefix)[0]) + 1
            raise TraceFormatError(
                path,
                f"expected a 0x-prefixed hex size, got {text[line - 1]!r}",
                line=line,
                field=field,
            )
        text = np.char.lower(np.char.replace(np.char.lower(text), "0x", "", count=1))
    width = max(1, int(np.char.str_len(text).max())) if text.size else 1
    if width > (16 if base == 10 else 15):
        raise TraceFormatError(path, "number too large", field=field)
    # Right-align every number in a fixed-width byte matrix and read the digits column by column.
    raw = np.char.rjust(text, width, "0").astype(f"S{width}")
    chars = np.frombuffer(raw.tobytes(), dtype=np.uint8).reshape(-1, width)
    values = np.full(chars.shape, 255, dtype=np.int64)
    decimal = (chars >= ord("0")) & (chars <= ord("9"))
    values[decimal] = chars[decimal] - ord("0")
    if base == 16:
        hexa = (chars >= ord("a")) & (chars <= ord("f"))
        values[hexa] = chars[hexa] - ord("a") + 10
    bad_rows = np.any(values == 255, axis=1) | (np.char.str_len(text) == 0)
    if np.any(bad_rows):
        line = int(np.flatnonzero(bad_rows)[0]) + 1
        raise TraceFormatError(
            path, f"expected an integer, got {text[line - 1]!r}", line=line, field=field
        )
    powers = base ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return values @ powers
