"""Disk token model: seek + rotation + transfer, with sequential accesses detected (thesis §2.3.2).

"For disks, we also account for the request offset and distance between subsequent request
offsets (i.e., offset − previous offset) to compensate for disk seek time. We keep a history of
requests to identify sequential accesses that do not introduce a seek delay." (thesis §2.3.2)

A request's work in seconds is

    tokens = transfer                                   if sequential,
    tokens = seek(distance) + rotation + transfer       otherwise,

with ``transfer = size / transfer_bandwidth``, ``rotation = ½ · 60 / rpm`` (the average
rotational latency, half a revolution) and ``seek`` the concave seek curve of
:class:`SeekCurve`. A request is *sequential* when its offset equals the end (``offset + size``)
of one of the ``sequential_history`` requests before it in trace order; the history window lets
interleaved sequential streams stay sequential. The seek distance is measured from the end of the
immediately preceding request (where the head is if the disk serves requests in arrival order).

Choices where the thesis is silent (documented in ``docs/profiles.md``): the first request of a
trace has no history and pays the *average* seek; a trace without offsets treats every request
as random (average seek + rotation + transfer); reads and writes cost the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.errors import ConfigError
from tailbound.jsonio import read_json
from tailbound.stages import Stage
from tailbound.traces.trace import Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike, NDArray
else:
    from tailbound.lazy import numpy as np


def _mean_seek(x0: float, t1: float, tf: float) -> tuple[float, float]:
    """Mean seek over uniform random pairs for a knee at ``x0``, and the sqrt coefficient.

    The distance ``X`` between two independent uniform points of ``[0, 1]`` has density
    ``2(1 − x)``; the curve is ``t1 + a√x`` up to ``x0`` and its tangent line beyond, with ``a``
    set so that the curve reaches ``tf`` at ``x = 1``.
    """
    r = math.sqrt(x0)
    a = (tf - t1) / (r + (1.0 - x0) / (2.0 * r))
    slope = a / (2.0 * r)
    intercept = t1 + a * r - slope * x0
    short = t1 * (2.0 * x0 - x0 * x0) + 2.0 * a * (2.0 / 3.0 * x0**1.5 - 2.0 / 5.0 * x0**2.5)

    def linear_antiderivative(x: float) -> float:
        return 2.0 * (intercept * (x - x * x / 2.0) + slope * (x * x / 2.0 - x**3 / 3.0))

    return short + linear_antiderivative(1.0) - linear_antiderivative(x0), a


@dataclass(frozen=True)
class SeekCurve:
    """Seek time as a function of seek distance: square root for short seeks, linear for long.

    With ``x = distance / capacity`` in ``[0, 1]``::

        seek(0) = 0
        seek(x) = t1 + a·√x                     for 0 < x <= x0
        seek(x) = seek(x0) + a/(2√x0)·(x − x0)  for x0 < x <= 1

    the form of Ruemmler and Wilkes ("An introduction to disk drive modeling", 1994): the arm
    accelerates then coasts. The linear part is the tangent of the square-root part at the knee
    ``x0``, so the curve is concave and smooth. Its three parameters come from the three figures
    on a drive's data sheet: ``t1`` is the track-to-track seek, ``a`` makes ``seek(1)`` the
    full-stroke seek, and the knee ``x0`` (found by bisection) makes the mean seek over uniformly
    random request pairs (distance density ``2(1 − x)``) equal the data sheet's average seek.
    That requires ``t1 + (tf − t1)/3 < average <= t1 + 8/15 · (tf − t1)`` (the means of the purely
    linear and purely square-root curves).

    Examples
    --------
    >>> c = SeekCurve(0.001, 0.0085, 0.018)
    >>> [round(float(c(x)) * 1e3, 3) for x in (0.0, 1e-9, 1.0)]  # ms
    [0.0, 1.0, 18.0]
    >>> round(c.mean_random_seek() * 1e3, 6)
    8.5
    """

    track_to_track_s: float
    average_s: float
    full_stroke_s: float
    knee: float = field(init=False)
    sqrt_coefficient: float = field(init=False)

    def __post_init__(self) -> None:
        t1, avg, tf = self.track_to_track_s, self.average_s, self.full_stroke_s
        names = ("trackToTrackSeekTime", "averageSeekTime", "fullStrokeSeekTime")
        for name, value in zip(names, (t1, avg, tf), strict=True):
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ConfigError(
                    None, f"expected a positive number of seconds, got {value!r}", field=name
                )
        if not t1 < avg < tf:
            raise ConfigError(
                None,
                f"need track-to-track ({t1}) < average ({avg}) < full-stroke ({tf}) seek",
                field="averageSeekTime",
            )
        low, high = t1 + (tf - t1) / 3.0, t1 + 8.0 / 15.0 * (tf - t1)
        if not low < avg <= high * (1 + 1e-12):
            raise ConfigError(
                None,
                f"average seek {avg} s must lie in ({low:.6g}, {high:.6g}] s for a concave "
                "square-root/linear seek curve with these track-to-track and full-stroke times",
                field="averageSeekTime",
            )
        # The mean grows with the knee (more of the curve follows the steeper square root).
        lo, hi = 1e-12, 1.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if _mean_seek(mid, t1, tf)[0] < avg:
                lo = mid
            else:
                hi = mid
        knee = 0.5 * (lo + hi)
        object.__setattr__(self, "knee", knee)
        object.__setattr__(self, "sqrt_coefficient", _mean_seek(knee, t1, tf)[1])

    def __call__(self, fraction: ArrayLike) -> NDArray[np.float64]:
        """Seek time in seconds for seek distances given as fractions of the full stroke."""
        x = np.clip(np.asarray(fraction, dtype=np.float64), 0.0, 1.0)
        a, x0 = self.sqrt_coefficient, self.knee
        at_knee = self.track_to_track_s + a * math.sqrt(x0)
        curve = np.where(
            x <= x0,
            self.track_to_track_s + a * np.sqrt(x),
            at_knee + a / (2.0 * math.sqrt(x0)) * (x - x0),
        )
        return np.where(x > 0, curve, 0.0)

    def mean_random_seek(self) -> float:
        """Mean seek between two uniformly random positions (equals :attr:`average_s`)."""
        return _mean_seek(self.knee, self.track_to_track_s, self.full_stroke_s)[0]

    def __repr__(self) -> str:
        return (
            f"SeekCurve(seek(x) = {self.track_to_track_s:.6g} + {self.sqrt_coefficient:.6g}·√x "
            f"for x <= {self.knee:.6g}, tangent line beyond; x = distance / capacity)"
        )


@dataclass(frozen=True)
class DiskProfile:
    """A hard disk: rotation speed, data-sheet seek times, capacity and media transfer rate.

    Times are seconds, sizes bytes, bandwidth bytes/s. The JSON form (``type: storageDisk``)::

        {"type": "storageDisk", "rpm": 7200, "trackToTrackSeekTime": 0.001,
         "averageSeekTime": 0.0085, "fullStrokeSeekTime": 0.018,
         "capacityBytes": 1000000000000, "transferBandwidth": 150000000,
         "sequentialHistory": 4}
    """

    rpm: float
    track_to_track_seek_s: float
    average_seek_s: float
    full_stroke_seek_s: float
    capacity_bytes: int
    transfer_bandwidth: float
    sequential_history: int = 4
    seek: SeekCurve = field(init=False, repr=False)

    def __post_init__(self) -> None:
        def positive(name: str, value: object) -> None:
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or not value > 0
            ):
                raise ConfigError(None, f"expected a positive number, got {value!r}", field=name)

        positive("rpm", self.rpm)
        positive("capacityBytes", self.capacity_bytes)
        positive("transferBandwidth", self.transfer_bandwidth)
        if (
            not isinstance(self.sequential_history, int)
            or isinstance(self.sequential_history, bool)
            or self.sequential_history < 0
        ):
            raise ConfigError(
                None,
                f"expected an integer >= 0, got {self.sequential_history!r}",
                field="sequentialHistory",
            )
        curve = SeekCurve(self.track_to_track_seek_s, self.average_seek_s, self.full_stroke_seek_s)
        object.__setattr__(self, "seek", curve)

    @property
    def rotational_latency_s(self) -> float:
        """Average rotational latency: half a revolution, ``30 / rpm`` seconds."""
        return 30.0 / self.rpm

    @classmethod
    def load(cls, path: str | Path) -> DiskProfile:
        """Read a disk profile JSON, raising :class:`ConfigError` naming the field at fault."""
        return cls.from_json(read_json(path), path=str(path))

    @classmethod
    def from_json(cls, document: Any, *, path: str | None = None) -> DiskProfile:
        """Build a profile from its parsed JSON document."""
        if not isinstance(document, dict):
            raise ConfigError(path, "the profile must be a JSON object")
        kind = document.get("type", "storageDisk")
        if kind != "storageDisk":
            raise ConfigError(path, f"expected type storageDisk, got {kind!r}", field="type")
        keys = (
            "rpm",
            "trackToTrackSeekTime",
            "averageSeekTime",
            "fullStrokeSeekTime",
            "capacityBytes",
            "transferBandwidth",
        )
        for key in keys:
            if key not in document:
                raise ConfigError(path, "missing", field=key)
        try:
            return cls(
                rpm=document["rpm"],
                track_to_track_seek_s=document["trackToTrackSeekTime"],
                average_seek_s=document["averageSeekTime"],
                full_stroke_seek_s=document["fullStrokeSeekTime"],
                capacity_bytes=document["capacityBytes"],
                transfer_bandwidth=document["transferBandwidth"],
                sequential_history=document.get("sequentialHistory", 4),
            )
        except ConfigError as e:  # add the file name to the field-level message
            raise ConfigError(path, e.message, field=e.field) from None

    def to_json(self) -> dict[str, Any]:
        """The profile as the JSON document :meth:`from_json` reads."""
        return {
            "type": "storageDisk",
            "rpm": self.rpm,
            "trackToTrackSeekTime": self.track_to_track_seek_s,
            "averageSeekTime": self.average_seek_s,
            "fullStrokeSeekTime": self.full_stroke_seek_s,
            "capacityBytes": self.capacity_bytes,
            "transferBandwidth": self.transfer_bandwidth,
            "sequentialHistory": self.sequential_history,
        }


def sequential_mask(
    offset: NDArray[np.int64], size: NDArray[np.int64], history: int
) -> NDArray[np.bool_]:
    """Requests whose offset equals the end of one of the ``history`` requests before them.

    One vectorised comparison per lag ``k = 1..history`` over shifted arrays.

    Examples
    --------
    >>> off = np.array([0, 4096, 1 << 20, 8192, 1 << 21])
    >>> size = np.full(5, 4096)
    >>> sequential_mask(off, size, 1).tolist()  # 8192 follows 4096 two requests back
    [False, True, False, False, False]
    >>> sequential_mask(off, size, 2).tolist()
    [False, True, False, True, False]
    """
    end = offset + size
    sequential = np.zeros(offset.size, dtype=bool)
    for k in range(1, min(history, offset.size - 1) + 1):
        sequential[k:] |= offset[k:] == end[:-k]
    return sequential


@dataclass(frozen=True)
class DiskModel:
    """A disk stage: seek + rotation + transfer seconds per request, transfer only if sequential.

    ``shared_gap_bytes`` (the enforcer's "nearly sequential" gap, set for a disk that other
    tenants share) prices every write at its worst on a shared disk as the simulator's disk rule
    does (``sim/disk.rs``): a sequential write whose stream another request interrupted
    repositions (average seek + half a revolution), one issued after its predecessor finished
    waits up to a revolution plus the gap for its sector. The worst-case analyses use it; the
    token buckets of a tenant alone do not need it.

    Examples
    --------
    >>> from tailbound.traces import Trace
    >>> p = DiskProfile(rpm=7200, track_to_track_seek_s=0.001, average_seek_s=0.0085,
    ...                 full_stroke_seek_s=0.018, capacity_bytes=10**12, transfer_bandwidth=1.5e8)
    >>> t = Trace.from_arrays(time=[0.0, 0.1, 0.2], op=[0, 0, 1], size=[150_000] * 3,
    ...                       offset=[0, 150_000, 10**12 - 150_000])
    >>> [round(x * 1e3, 4) for x in DiskModel(p).tokens(t).tolist()]  # ms
    [13.6667, 1.0, 23.1667]
    >>> w = Trace.from_arrays(time=[0.0, 0.1], op=[1, 1], size=[150_000] * 2, offset=[0, 150_000])
    >>> [round(x * 1e3, 4) for x in DiskModel(p, shared_gap_bytes=65536).tokens(w).tolist()]
    [13.6667, 13.6667]
    """

    profile: DiskProfile
    stage: Stage = Stage.STORAGE
    shared_gap_bytes: float | None = None

    def tokens(self, trace: Trace) -> NDArray[np.float64]:
        """Seconds of device work per request."""
        own = self._own(trace)
        if self.shared_gap_bytes is None or len(trace) == 0:
            return own
        p = self.profile
        transfer = trace.size.astype(np.float64) / p.transfer_bandwidth
        revolution = 60.0 / p.rpm
        worst = transfer + max(
            p.average_seek_s + p.rotational_latency_s,
            revolution + self.shared_gap_bytes / p.transfer_bandwidth,
        )
        return np.where(trace.op == 1, np.maximum(own, worst), own)

    def _own(self, trace: Trace) -> NDArray[np.float64]:
        p = self.profile
        transfer = trace.size.astype(np.float64) / p.transfer_bandwidth
        random_access = p.average_seek_s + p.rotational_latency_s
        if trace.offset is None or len(trace) == 0:
            return transfer + random_access
        offset, size = trace.offset, trace.size
        seek = np.empty(len(trace), dtype=np.float64)
        seek[0] = p.average_seek_s  # no history: a random access
        distance = np.abs(offset[1:] - (offset[:-1] + size[:-1])).astype(np.float64)
        seek[1:] = p.seek(distance / p.capacity_bytes)
        positioning = seek + p.rotational_latency_s
        sequential = sequential_mask(offset, size, p.sequential_history)
        return np.where(sequential, 0.0, positioning) + transfer
