"""Token models for the stages ``net_in``, ``storage`` and ``net_out``.

A token is one second of exclusive service at a stage ("work", thesis §2.3.2). A network model
divides the bytes a request puts on the link by the link's bandwidth; an SSD model divides the
request size by the bandwidth profiled for that operation at that size. Every model works on a
whole :class:`~tailbound.traces.Trace` at once and returns one float64 per request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tailbound.errors import ConfigError
from tailbound.jsonio import read_json
from tailbound.profiles.disk import DiskModel, DiskProfile
from tailbound.stages import Stage
from tailbound.traces.trace import Op, Trace

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
else:
    from tailbound.lazy import numpy as np


class TokenModel(Protocol):
    """Converts a trace's requests into seconds of work at one stage."""

    @property
    def stage(self) -> Stage: ...

    def tokens(self, trace: Trace) -> NDArray[np.float64]:
        """Seconds of exclusive service each request needs at :attr:`stage`."""
        ...


@dataclass(frozen=True)
class MessageSizes:
    """Bytes on the wire of a request's two messages, ``overhead + factor · size``.

    A read sends a small request (``small_factor``) and a large response (``large_factor``); a
    write the reverse. The defaults are the WorkloadCompactor system's constants: a read's request
    is ``200 + 0.025·size`` bytes and its response ``200 + 1.1·size``.

    Examples
    --------
    >>> from tailbound.traces import Trace
    >>> t = Trace.from_arrays(time=[0.0, 1.0], op=[0, 1], size=[1000, 1000])
    >>> MessageSizes().request_bytes(t).tolist()
    [225.0, 1300.0]
    >>> MessageSizes().response_bytes(t).tolist()
    [1300.0, 225.0]
    """

    overhead_bytes: float = 200.0
    small_factor: float = 0.025
    large_factor: float = 1.1

    def _bytes(
        self, is_read: NDArray[np.bool_], size: NDArray, read_factor: float, write_factor: float
    ) -> NDArray[np.float64]:
        factor = np.where(is_read, read_factor, write_factor)
        return self.overhead_bytes + factor * np.asarray(size).astype(np.float64)

    def request_bytes(self, trace: Trace) -> NDArray[np.float64]:
        """Bytes of each request message, client to server."""
        return self.request_bytes_of(trace.op == Op.READ, trace.size)

    def response_bytes(self, trace: Trace) -> NDArray[np.float64]:
        """Bytes of each response message, server to client."""
        return self.response_bytes_of(trace.op == Op.READ, trace.size)

    def request_bytes_of(self, is_read: NDArray[np.bool_], size: NDArray) -> NDArray[np.float64]:
        """:meth:`request_bytes` of requests given as read flags and sizes (bytes)."""
        return self._bytes(is_read, size, *self.factors("in"))

    def response_bytes_of(self, is_read: NDArray[np.bool_], size: NDArray) -> NDArray[np.float64]:
        """:meth:`response_bytes` of requests given as read flags and sizes (bytes)."""
        return self._bytes(is_read, size, *self.factors("out"))

    def factors(self, direction: str) -> tuple[float, float]:
        """``(read_factor, write_factor)`` of the request (``"in"``) or response (``"out"``)
        message: a read's request and a write's response are the small ones."""
        if direction == "in":
            return self.small_factor, self.large_factor
        if direction == "out":
            return self.large_factor, self.small_factor
        raise ValueError(f"direction must be 'in' or 'out', got {direction!r}")


@dataclass(frozen=True)
class LinkModel:
    """A network link: tokens are bytes on the wire ÷ bandwidth, in seconds.

    ``stage`` is :attr:`Stage.NET_IN` (request messages) or :attr:`Stage.NET_OUT` (responses).

    Examples
    --------
    >>> from tailbound.traces import Trace
    >>> t = Trace.from_arrays(time=[0.0], op=[0], size=[1000])
    >>> LinkModel(Stage.NET_OUT, 125_000_000).tokens(t).tolist()  # 1300 B at 1 Gb/s
    [1.04e-05]
    """

    stage: Stage
    bandwidth_bytes_per_s: float
    messages: MessageSizes = field(default_factory=MessageSizes)

    def __post_init__(self) -> None:
        if self.stage not in (Stage.NET_IN, Stage.NET_OUT):
            raise ValueError(f"LinkModel serves net_in or net_out, not {self.stage}")
        if not self.bandwidth_bytes_per_s > 0:
            raise ValueError(f"link bandwidth must be positive, got {self.bandwidth_bytes_per_s}")

    def bytes(self, trace: Trace) -> NDArray[np.float64]:
        """Bytes each request puts on this link."""
        if self.stage == Stage.NET_IN:
            return self.messages.request_bytes(trace)
        return self.messages.response_bytes(trace)

    def tokens(self, trace: Trace) -> NDArray[np.float64]:
        """Seconds each request occupies this link."""
        return self.bytes(trace) / self.bandwidth_bytes_per_s


@dataclass(frozen=True)
class SsdProfile:
    """A measured SSD: bandwidth by operation and request size, and the enforcer's dispatch limits.

    Bandwidths are bytes per second at the request sizes in ``sizes`` (bytes, ascending). Between
    rows the bandwidth is interpolated linearly; below the first row the first row holds, at or
    above the last row the last row holds. The JSON form is the WorkloadCompactor system's
    ``profile_ssd.json``.
    """

    sizes: NDArray[np.float64]
    read_bandwidth: NDArray[np.float64]
    write_bandwidth: NDArray[np.float64]
    read_mpl: int = 48
    write_mpl: int = 96
    max_outstanding_read_bytes: int = 1_572_864
    max_outstanding_write_bytes: int = 3_145_728

    @classmethod
    def load(cls, path: str | Path) -> SsdProfile:
        """Read a profile JSON, raising :class:`ConfigError` naming the field at fault."""
        return cls.from_json(read_json(path), path=str(path))

    @classmethod
    def from_json(cls, document: Any, *, path: str | None = None) -> SsdProfile:
        """Build a profile from its parsed JSON document."""
        if not isinstance(document, dict):
            raise ConfigError(path, "the profile must be a JSON object")
        table = document.get("bandwidthTable")
        if not isinstance(table, list) or not table:
            raise ConfigError(path, "missing or empty list", field="bandwidthTable")
        columns: dict[str, list[float]] = {
            "requestSize": [],
            "readBandwidth": [],
            "writeBandwidth": [],
        }
        for i, row in enumerate(table):
            for key, values in columns.items():
                value = row.get(key) if isinstance(row, dict) else None
                if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
                    raise ConfigError(
                        path,
                        f"expected a positive number, got {value!r}",
                        field=f"bandwidthTable[{i}].{key}",
                    )
                values.append(float(value))
        sizes = np.array(columns["requestSize"])
        if np.any(np.diff(sizes) <= 0):
            raise ConfigError(path, "request sizes must increase", field="bandwidthTable")

        def limit(key: str, default: int) -> int:
            value = document.get(key, default)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(path, f"expected a positive integer, got {value!r}", field=key)
            return value

        return cls(
            sizes=sizes,
            read_bandwidth=np.array(columns["readBandwidth"]),
            write_bandwidth=np.array(columns["writeBandwidth"]),
            read_mpl=limit("readMPL", cls.read_mpl),
            write_mpl=limit("writeMPL", cls.write_mpl),
            max_outstanding_read_bytes=limit(
                "maxOutstandingReadBytes", cls.max_outstanding_read_bytes
            ),
            max_outstanding_write_bytes=limit(
                "maxOutstandingWriteBytes", cls.max_outstanding_write_bytes
            ),
        )

    @classmethod
    def from_spec(
        cls,
        *,
        read_overhead_s: float,
        read_bytes_per_s: float,
        write_overhead_s: float,
        write_bytes_per_s: float,
        sizes: NDArray[np.float64] | None = None,
    ) -> SsdProfile:
        """A profile from a device's spec sheet: a request of ``s`` bytes takes
        ``overhead + s / bandwidth`` seconds of exclusive service, so the profiled bandwidth at
        size ``s`` is ``s / (overhead + s / bandwidth)`` (IOPS-bound when small, bandwidth-bound
        when large). Rows at 512 B … 256 KiB in 512 B steps unless ``sizes`` is given.

        Examples
        --------
        >>> p = SsdProfile.from_spec(read_overhead_s=1e-4, read_bytes_per_s=4096e4,
        ...                          write_overhead_s=2e-4, write_bytes_per_s=4096e4)
        >>> float(p.bandwidth(np.array([0], np.uint8), np.array([4096]))[0])  # 4096 B in 200 µs
        20480000.0
        """
        s = np.arange(512.0, 256 * 1024 + 1, 512.0) if sizes is None else np.asarray(sizes, float)
        return cls(
            sizes=s,
            read_bandwidth=s / (read_overhead_s + s / read_bytes_per_s),
            write_bandwidth=s / (write_overhead_s + s / write_bytes_per_s),
        )

    def to_json(self) -> dict[str, Any]:
        """The profile as the JSON document :meth:`from_json` reads."""
        return {
            "type": "storageSSD",
            "bandwidthTable": [
                {"requestSize": int(s), "readBandwidth": float(r), "writeBandwidth": float(w)}
                for s, r, w in zip(
                    self.sizes, self.read_bandwidth, self.write_bandwidth, strict=True
                )
            ],
            "readMPL": self.read_mpl,
            "writeMPL": self.write_mpl,
            "maxOutstandingReadBytes": self.max_outstanding_read_bytes,
            "maxOutstandingWriteBytes": self.max_outstanding_write_bytes,
        }

    def bandwidth(self, op: NDArray[np.uint8], size: NDArray[np.int64]) -> NDArray[np.float64]:
        """Bytes per second for each (op, size), interpolated between profile rows."""
        size_f = size.astype(np.float64)
        read = np.interp(size_f, self.sizes, self.read_bandwidth)
        write = np.interp(size_f, self.sizes, self.write_bandwidth)
        return np.where(op == Op.READ, read, write)


@dataclass(frozen=True)
class SsdModel:
    """An SSD stage: a request's work is ``size / bandwidth(op, size)`` seconds.

    Examples
    --------
    >>> import numpy as np
    >>> from tailbound.traces import Trace
    >>> p = SsdProfile(sizes=np.array([512.0, 1024.0]), read_bandwidth=np.array([1e6, 2e6]),
    ...                write_bandwidth=np.array([5e5, 1e6]))
    >>> t = Trace.from_arrays(time=[0.0, 1.0, 2.0], op=[0, 0, 1], size=[768, 4096, 512])
    >>> SsdModel(p).tokens(t).tolist()  # 768 B at 1.5 MB/s, 4096 B at 2 MB/s, 512 B at 0.5 MB/s
    [0.000512, 0.002048, 0.001024]
    """

    profile: SsdProfile
    stage: Stage = Stage.STORAGE

    def tokens(self, trace: Trace) -> NDArray[np.float64]:
        """Seconds of device work per request."""
        return trace.size / self.profile.bandwidth(trace.op, trace.size)


def stage_model(
    stage: Stage,
    *,
    link_bandwidth_bytes_per_s: float = 125_000_000.0,
    profile: SsdProfile | DiskProfile | None = None,
    messages: MessageSizes | None = None,
) -> TokenModel:
    """The token model of ``stage``: a link for the network stages, the device for storage."""
    if stage == Stage.STORAGE:
        if profile is None:
            raise ConfigError(None, "the storage stage needs a device profile (--profile FILE)")
        if isinstance(profile, DiskProfile):
            return DiskModel(profile)
        return SsdModel(profile)
    return LinkModel(stage, link_bandwidth_bytes_per_s, messages or MessageSizes())


#: The device profile types a profile JSON's ``type`` field may name.
PROFILE_TYPES: dict[str, type[SsdProfile] | type[DiskProfile]] = {
    "storageSSD": SsdProfile,
    "storageDisk": DiskProfile,
}


def load_profile(path: str | Path) -> SsdProfile | DiskProfile:
    """Read a device profile JSON, choosing the SSD or disk form by its ``type`` field."""
    document = read_json(path)
    if not isinstance(document, dict):
        raise ConfigError(path, "the profile must be a JSON object")
    kind = document.get("type")
    if kind not in PROFILE_TYPES:
        known = ", ".join(PROFILE_TYPES)
        raise ConfigError(path, f"unknown profile type {kind!r} (known: {known})", field="type")
    return PROFILE_TYPES[kind].from_json(document, path=str(path))
