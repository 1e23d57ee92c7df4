"""Shared steps of every reader: turning parser failures into :class:`TraceFormatError` and
parsed columns into a :class:`Trace` named after its file."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tailbound import _core
from tailbound.errors import TraceFormatError
from tailbound.limits import MAX_REQUEST_BYTES, MAX_TIME_S
from tailbound.traces.trace import Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike
else:
    from tailbound.lazy import numpy as np

#: Units of a time column per second, by the name users give them.
TIME_UNITS: dict[str, float] = {"s": 1.0, "ms": 1e3, "us": 1e6, "ns": 1e9}


def units_per_second(unit: str, path: Path | None = None) -> float:
    """How many ``unit`` make a second (``"ms"`` → 1000); an unknown unit is a
    :class:`TraceFormatError` on ``path`` naming the ``time_unit`` option.

    >>> units_per_second("us")
    1000000.0
    """
    try:
        return TIME_UNITS[unit]
    except KeyError:
        known = ", ".join(TIME_UNITS)
        message = f"unknown time unit {unit!r}; known units: {known}"
        raise TraceFormatError(path, message, field="time_unit") from None


@contextmanager
def parse_errors(path: Path) -> Iterator[None]:
    """Re-raise the core's ``ParseError``, its ``ValueError`` for a bad option (sector size,
    read and write values) and OS errors as :class:`TraceFormatError` on ``path``."""
    try:
        yield
    except _core.ParseError as e:
        line, field, message = e.args
        raise TraceFormatError(path, message, line=line, field=field) from None
    except TraceFormatError:
        raise
    except ValueError as e:
        raise TraceFormatError(path, f"invalid option: {e}") from None
    except OSError as e:
        raise TraceFormatError(path, f"cannot read the file: {e.strerror or e}") from None


def make_trace(
    path: Path,
    *,
    time: ArrayLike,
    op: ArrayLike,
    size: ArrayLike,
    offset: ArrayLike | None = None,
    source: ArrayLike | None = None,
    origin_s: float = 0.0,
    name: str | None = None,
    duration_s: float | None = None,
) -> Trace:
    """Build the trace of file ``path`` (named after its stem unless ``name`` is given).

    Unsorted arrivals are sorted with an :class:`~tailbound.traces.UnsortedTraceWarning`; an empty
    file is a :class:`TraceFormatError`; ``duration_s`` (seconds) sets the recording's length
    when the file does not say it, and must not end before the last arrival.
    """
    time = np.asarray(time, dtype=np.float64)
    size = np.asarray(size)
    _check_limits(path, time, size)
    if duration_s is not None and not (math.isfinite(duration_s) and 0 < duration_s <= MAX_TIME_S):
        raise TraceFormatError(
            path, f"duration_s={duration_s} is not a duration in (0, {MAX_TIME_S:g}] s"
        )
    if duration_s is not None and time.size and not duration_s >= time.max():
        raise TraceFormatError(
            path, f"duration_s={duration_s} ends before the last arrival at {time.max()} s"
        )
    try:
        return _build(path, time, op, size, offset, source, origin_s, name, duration_s)
    except ValueError as e:  # Trace's own checks, for a reader that did not make them
        raise TraceFormatError(path, str(e)) from None


def _check_limits(path: Path, time: np.ndarray, size: np.ndarray) -> None:
    """Every time finite, ``>= 0`` and at most :data:`~tailbound.limits.MAX_TIME_S` after the
    file's zero; every size at most :data:`~tailbound.limits.MAX_REQUEST_BYTES`. The first bad
    request is named by its position in the file (1-based, records as read)."""
    bad_time = ~(np.isfinite(time) & (time >= 0) & (time <= MAX_TIME_S))
    if bad_time.any():
        i = int(np.argmax(bad_time))
        raise TraceFormatError(
            path,
            f"request {i + 1}: time {float(time[i])!r} s is not in [0, {MAX_TIME_S:g}] s from the "
            "file's zero",
            field="time",
        )
    if size.size and size.max() > MAX_REQUEST_BYTES:
        i = int(np.argmax(size > MAX_REQUEST_BYTES))
        raise TraceFormatError(
            path,
            f"request {i + 1}: size {int(size[i])} bytes is more than the "
            f"{MAX_REQUEST_BYTES} bytes a request may have",
            field="size",
        )


def _build(
    path: Path,
    time: np.ndarray,
    op: ArrayLike,
    size: ArrayLike,
    offset: ArrayLike | None,
    source: ArrayLike | None,
    origin_s: float,
    name: str | None,
    duration_s: float | None,
) -> Trace:
    return Trace.from_arrays(
        time=time,
        op=op,
        size=size,
        offset=offset,
        source=source,
        origin_s=float(origin_s),
        duration_s=None if duration_s is None else float(duration_s),
        name=path.stem if name is None else name,
        path=str(path),
    )
