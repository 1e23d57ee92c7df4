"""The ``Trace`` type: a workload's requests as sorted columnar arrays.

Every analysis and simulation in tailbound starts from a ``Trace``. It is an immutable value:
operations (slicing, scaling, concatenation) return new traces and never copy more than needed.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from tailbound.errors import TraceFormatError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray
else:
    from tailbound.lazy import numpy as np


class Op(IntEnum):
    """A request's operation, as stored in :attr:`Trace.op`."""

    READ = 0
    WRITE = 1


class UnsortedTraceWarning(UserWarning):
    """Issued when a trace's arrival times were out of order and had to be sorted."""


@dataclass(frozen=True)
class TraceSummary:
    """A trace at a glance. Rates are per second of the trace's duration."""

    name: str
    requests: int
    duration_s: float
    read_fraction: float
    mean_size_bytes: float
    total_bytes: int
    mean_iops: float
    mean_bytes_per_s: float

    def __str__(self) -> str:
        return (
            f"{self.name or '<trace>'}: {self.requests} requests over {self.duration_s:.3f} s, "
            f"{self.mean_iops:.1f} IOPS, {self.mean_bytes_per_s / 1e6:.3f} MB/s, "
            f"{100 * self.read_fraction:.1f}% reads, mean size {self.mean_size_bytes:.0f} B"
        )


def _column(values: ArrayLike, dtype: type, name: str, n: int | None) -> NDArray:
    array: NDArray = np.ascontiguousarray(values, dtype=dtype)
    if array.ndim != 1:
        raise ValueError(f"Trace.{name} must be one-dimensional, got shape {array.shape}")
    if n is not None and array.shape[0] != n:
        raise ValueError(f"Trace.{name} has {array.shape[0]} entries, expected {n}")
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class Trace:
    """Requests of one workload, sorted by arrival time.

    Parameters
    ----------
    time
        Arrival times in seconds since :attr:`origin_s`, non-decreasing (float64).
    op
        :class:`Op` per request (uint8: 0 read, 1 write).
    size
        Request sizes in bytes (int64, >= 0).
    offset
        Byte offsets on the device (int64), or ``None`` when the format has none.
    source
        Source id per request (int32: device, host or tenant of a multi-source file), or ``None``.
    origin_s
        The absolute time of ``time == 0``, in seconds: 0 for formats that count from the start of
        the recording, the Unix time of the first request for absolute clocks.
    duration_s
        Length of the recording in seconds; ``None`` means "until the last arrival". Halving and
        concatenation use it, so a 600 s trace splits at 300 s whatever its last request.
    name
        A label, usually the file's stem.

    Examples
    --------
    >>> t = Trace.from_arrays(time=[0.0, 0.5, 1.0, 1.5], op=[0, 1, 0, 0], size=[4096] * 4)
    >>> len(t), t.duration
    (4, 1.5)
    >>> len(t.first_half()), len(t.second_half())
    (2, 2)
    >>> t.scale_time(2.0).time.tolist()
    [0.0, 1.0, 2.0, 3.0]
    """

    time: NDArray[np.float64]
    op: NDArray[np.uint8]
    size: NDArray[np.int64]
    offset: NDArray[np.int64] | None = None
    source: NDArray[np.int32] | None = None
    origin_s: float = 0.0
    duration_s: float | None = None
    name: str = ""
    _checked: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._checked:
            return
        object.__setattr__(self, "time", _column(self.time, np.float64, "time", None))
        n = self.time.shape[0]
        object.__setattr__(self, "op", _column(self.op, np.uint8, "op", n))
        object.__setattr__(self, "size", _column(self.size, np.int64, "size", n))
        if self.offset is not None:
            object.__setattr__(self, "offset", _column(self.offset, np.int64, "offset", n))
        if self.source is not None:
            object.__setattr__(self, "source", _column(self.source, np.int32, "source", n))
        if n and not np.all(np.isfinite(self.time)):
            raise ValueError("Trace.time has a value that is not finite")
        if n and np.any(np.diff(self.time) < 0):
            raise ValueError("Trace.time must be non-decreasing (use Trace.from_arrays to sort)")
        if n and np.any(self.size < 0):
            raise ValueError("Trace.size has a negative size")
        if n and np.any(self.op > Op.WRITE):
            raise ValueError("Trace.op must be 0 (read) or 1 (write)")
        if self.duration_s is not None and n and self.duration_s < self.time[-1]:
            raise ValueError(
                f"Trace.duration_s={self.duration_s} ends before the last arrival {self.time[-1]}"
            )
        object.__setattr__(self, "_checked", True)

    # ----------------------------------------------------------------------------- construction
    @classmethod
    def from_arrays(
        cls,
        *,
        time: ArrayLike,
        op: ArrayLike,
        size: ArrayLike,
        offset: ArrayLike | None = None,
        source: ArrayLike | None = None,
        origin_s: float = 0.0,
        duration_s: float | None = None,
        name: str = "",
        path: str | None = None,
    ) -> Trace:
        """Build a trace from unsorted columns, sorting stably with a warning if needed.

        Raises :class:`TraceFormatError` (naming ``path``) for an empty trace.
        """
        time_a = np.ascontiguousarray(time, dtype=np.float64)
        if time_a.ndim != 1 or time_a.shape[0] == 0:
            raise TraceFormatError(path, "the trace has no requests")
        columns = {"op": op, "size": size, "offset": offset, "source": source}
        if np.any(np.diff(time_a) < 0):
            order = np.argsort(time_a, kind="stable")
            warnings.warn(
                f"{path or name or '<trace>'}: arrival times were not sorted; sorted them",
                UnsortedTraceWarning,
                stacklevel=2,
            )
            time_a = time_a[order]
            columns = {k: None if v is None else np.asarray(v)[order] for k, v in columns.items()}
        return cls(
            time=time_a,
            origin_s=origin_s,
            duration_s=duration_s,
            name=name,
            **columns,  # type: ignore[arg-type]
        )

    # ------------------------------------------------------------------------------- properties
    def __len__(self) -> int:
        return int(self.time.shape[0])

    @property
    def duration(self) -> float:
        """Length of the recording in seconds (``duration_s``, else the last arrival time)."""
        if self.duration_s is not None:
            return float(self.duration_s)
        return float(self.time[-1]) if len(self) else 0.0

    @property
    def is_read(self) -> NDArray[np.bool_]:
        """Boolean mask of reads."""
        return self.op == Op.READ

    def _with(self, mask_or_slice: slice | NDArray, **changes: object) -> Trace:
        def pick(a: NDArray | None) -> NDArray | None:
            return None if a is None else a[mask_or_slice]

        values: dict[str, object] = {
            "time": self.time[mask_or_slice],
            "op": self.op[mask_or_slice],
            "size": self.size[mask_or_slice],
            "offset": pick(self.offset),
            "source": pick(self.source),
            "origin_s": self.origin_s,
            "duration_s": self.duration_s,
            "name": self.name,
        }
        values.update(changes)
        return Trace(**values)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------------- operations
    def slice_time(self, start_s: float, end_s: float, *, rebase: bool = True) -> Trace:
        """Requests arriving in ``[start_s, end_s)``.

        With ``rebase`` (the default) the result counts time from ``start_s`` and moves its
        origin accordingly, so it can be replayed on its own.
        """
        if end_s < start_s:
            raise ValueError(f"slice_time: end {end_s} is before start {start_s}")
        lo, hi = np.searchsorted(self.time, [start_s, end_s], side="left")
        return self._window(int(lo), int(hi), start_s, end_s, rebase)

    def _window(self, lo: int, hi: int, start_s: float, end_s: float, rebase: bool) -> Trace:
        shift = start_s if rebase else 0.0
        return self._with(
            slice(lo, hi),
            time=self.time[lo:hi] - shift,
            origin_s=self.origin_s + shift,
            duration_s=end_s - shift,
        )

    def first_half(self) -> Trace:
        """The first half of the recording by time (for planning)."""
        return self.slice_time(0.0, self.duration / 2)

    def second_half(self) -> Trace:
        """The second half of the recording by time, rebased to start at 0 (for replay).

        Unlike :meth:`slice_time` it keeps a request arriving exactly at the end of the recording.
        """
        half = self.duration / 2
        lo = int(np.searchsorted(self.time, half, side="left"))
        return self._window(lo, len(self), half, self.duration, rebase=True)

    def scale_time(self, factor: float) -> Trace:
        """Stretch time by ``factor``: 2.0 slows the workload to half its rate, 0.5 doubles it."""
        if not factor > 0:
            raise ValueError(f"scale_time: factor must be positive, got {factor}")
        return Trace(
            time=self.time * factor,
            op=self.op,
            size=self.size,
            offset=self.offset,
            source=self.source,
            origin_s=self.origin_s,
            duration_s=None if self.duration_s is None else self.duration_s * factor,
            name=self.name,
        )

    def shift_circular(self, shift_s: float) -> Trace:
        """Rotate the recording by ``shift_s``: requests past the end wrap to the start.

        Used to build many distinct tenants from one trace (SNC-Meister's admission experiment).
        """
        d = self.duration
        if d <= 0:
            return self
        shifted = np.mod(self.time + shift_s, d)
        order = np.argsort(shifted, kind="stable")
        return self._with(order, time=shifted[order], duration_s=d)

    @staticmethod
    def concat(traces: Sequence[Trace], name: str = "") -> Trace:
        """Play ``traces`` one after another: each starts where the previous one's duration ends."""
        if not traces:
            raise ValueError("concat needs at least one trace")
        offsets = np.cumsum([0.0] + [t.duration for t in traces[:-1]])
        has_offset = all(t.offset is not None for t in traces)
        has_source = all(t.source is not None for t in traces)
        return Trace(
            time=np.concatenate([t.time + o for t, o in zip(traces, offsets, strict=True)]),
            op=np.concatenate([t.op for t in traces]),
            size=np.concatenate([t.size for t in traces]),
            offset=np.concatenate([t.offset for t in traces]) if has_offset else None,
            source=np.concatenate([t.source for t in traces]) if has_source else None,
            origin_s=traces[0].origin_s,
            duration_s=float(offsets[-1] + traces[-1].duration),
            name=name or traces[0].name,
        )

    def summary(self) -> TraceSummary:
        """Counts, duration and mean rates of the trace."""
        n = len(self)
        d = self.duration
        total = int(self.size.sum()) if n else 0
        return TraceSummary(
            name=self.name,
            requests=n,
            duration_s=d,
            read_fraction=float(np.mean(self.op == Op.READ)) if n else 0.0,
            mean_size_bytes=float(total / n) if n else 0.0,
            total_bytes=total,
            mean_iops=n / d if d > 0 else float("inf"),
            mean_bytes_per_s=total / d if d > 0 else float("inf"),
        )

    def __repr__(self) -> str:
        return (
            f"Trace(name={self.name!r}, requests={len(self)}, duration_s={self.duration:.6g}, "
            f"origin_s={self.origin_s:.6g})"
        )
