"""Shared steps of every reader: turning parser failures into :class:`TraceFormatError` and
parsed columns into a :class:`Trace` named after its file."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from tailbound import _core
from tailbound.errors import TraceFormatError
from tailbound.traces.trace import Trace

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
    if duration_s is not None and time.size and not duration_s >= time.max():
        raise TraceFormatError(
            path, f"duration_s={duration_s} ends before the last arrival at {time.max()} s"
        )
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
