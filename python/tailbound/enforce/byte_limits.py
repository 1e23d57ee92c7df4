"""A storage token bucket in device-seconds as byte (and I/O) limits that never let more
device-seconds through (``docs/enforcement.md``, "Exporters"; used by
:mod:`tailbound.enforce.exporters`).

A storage token bucket ``(r, b)`` of the Plan is in **device-seconds**: a request of ``s`` bytes
of operation ``op`` costs ``s / bw(op, s)`` seconds of the device (the SSD profile's bandwidth,
interpolated as :class:`~tailbound.profiles.tokens.SsdModel` does), ``r`` is a utilisation and
``b`` seconds of work. QEMU, libvirt, blk-throttle, librbd and nbdkit count bytes (and I/Os), so
every exporter first converts ``(r, b)`` into byte (and I/O) limits, conservatively: whatever mix
of the tenant's request sizes and operations passes the converted limits over any interval of
``T`` seconds costs at most ``r·T + b`` device-seconds.

**Conversion ``bytes``**. ``bw_min`` is the lowest profiled bandwidth over the
tenant's requests: over the distinct ``(op, size)`` of its trace when one is given, else over
every row of the profile, both operations (the interpolated bandwidth is piecewise linear, so its
minimum over *any* size is at a row). The limit is ``B = r·bw_min`` bytes/s with a bucket of
``b·bw_min`` bytes: ``n`` bytes cost at most ``n / bw_min`` device-seconds, and at most
``B·T + b·bw_min`` bytes pass in ``T`` s, so at most ``r·T + b`` device-seconds do. It is exact
for a tenant of one request size and pessimistic by ``bw(size)/bw_min`` for the others.

**Conversion ``bytes+iops``** (the default). A line ``cost(op, s) ≤ α·s + β`` over the tenant's
requests (the upper hull of the points ``(s, cost)`` and ``(0, 0)``: the line of least cost at the
tenant's mean request size ``s̄``, weighted by the trace's request counts; without a trace the
points are every whole 512-byte sector size between the profile's first and last rows, both
operations, with ``α ≥ 1/bw(last row)`` so that larger requests are covered, and ``s̄`` is the
geometric mean of the first and last row sizes). The rate is split between the two limits in the
proportion of the mean request's cost ``c̄ = α·s̄ + β``, ``φ = α·s̄ / c̄``: ``B = φ·r/α = r·s̄/c̄``
bytes/s with bucket ``b·s̄/c̄``, and ``I = (1 − φ)·r/β = r/c̄`` I/Os per second with bucket
``b/c̄``. A mix passing both costs at most ``α·(B·T + b·s̄/c̄) + β·(I·T + b/c̄) = r·T + b``; a
tenant issuing its mean request passes at exactly its mean cost, ``r/c̄`` requests per second. ``β
= 0`` (cost proportional to size) gives the ``bytes`` limit alone.

Why ``bytes+iops`` is the default: small requests cost far more per byte than large ones (the
wc62 profile's 512-byte write runs at 0.6 MB/s, its 256 KiB read at 94 MB/s), so a byte limit at
the lowest bandwidth lets a tenant's own mix use a small share of ``r``; with a byte and an I/O
limit its mean request passes at the line's cost (``docs/enforcement.md`` gives the shares on the
wc62 tenants). Its guarantee without a trace covers whole-sector requests, which block devices
issue; ``bytes`` covers any size. :func:`usable_share` gives the share of ``r`` a tenant's own
mix can use under a limit.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tailbound.errors import ConfigError
from tailbound.profiles.tokens import SsdProfile
from tailbound.traces.trace import Op, Trace

#: The byte/I-O conversions of ``(r, b)`` (module documentation); the first is the default.
CONVERSIONS = ("bytes+iops", "bytes")
#: The sector every request size is a whole number of (``bytes+iops`` without a trace).
SECTOR = 512


@dataclass(frozen=True)
class RequestMix:
    """The requests a tenant issues: the distinct ``(op, size)`` of its trace with their counts.
    The functions below take ``None`` for a tenant without a trace: any request the profile
    describes."""

    op: NDArray[np.uint8]
    size: NDArray[np.int64]
    count: NDArray[np.float64]

    @classmethod
    def from_trace(cls, trace: Trace) -> RequestMix:
        """The distinct ``(op, size)`` of ``trace`` and how often each occurs."""
        if len(trace) == 0:
            raise ConfigError(None, f"trace {trace.name!r} has no requests")
        keys = np.stack([trace.op.astype(np.int64), trace.size.astype(np.int64)], axis=1)
        unique, counts = np.unique(keys, axis=0, return_counts=True)
        return cls(unique[:, 0].astype(np.uint8), unique[:, 1], counts.astype(np.float64))

    def only(self, op: Op) -> RequestMix | None:
        """The requests of one operation (``None`` if there are none)."""
        keep = self.op == op
        if not keep.any():
            return None
        return RequestMix(self.op[keep], self.size[keep], self.count[keep])

    @property
    def mean_size(self) -> float:
        return float(np.average(self.size.astype(np.float64), weights=self.count))


@dataclass(frozen=True)
class ByteLimit:
    """``(r, b)`` converted: bytes per second and bucket bytes, and in ``bytes+iops`` I/Os per
    second and bucket I/Os (``None``: no I/O limit), all before rounding."""

    bytes_per_s: float
    bucket_bytes: float
    iops: float | None = None
    bucket_ios: float | None = None

    def device_seconds(self, size: NDArray, cost: NDArray, interval_s: float) -> float:
        """The most device-seconds a mix (``size``, ``cost`` per request, in the proportions
        given) can use in ``interval_s`` under these limits (fractional requests allowed)."""
        size, cost = np.asarray(size, float), np.asarray(cost, float)
        scale = (self.bytes_per_s * interval_s + self.bucket_bytes) / float(size.sum())
        if self.iops is not None and self.bucket_ios is not None:
            scale = min(scale, (self.iops * interval_s + self.bucket_ios) / len(size))
        return scale * float(cost.sum())


# ------------------------------------------------------------------------------ conversion
def _points(
    profile: SsdProfile, mix: RequestMix | None, op: Op | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Sizes, costs (s) and weights of the requests the conversion covers: the mix's, else
    every whole sector between the profile's first and last rows (for ``op``, or both)."""
    if mix is not None:
        size = mix.size.astype(np.float64)
        bw = profile.bandwidth(mix.op, mix.size)
        return size, size / bw, mix.count
    grid = np.arange(math.ceil(profile.sizes[0] / SECTOR), int(profile.sizes[-1] // SECTOR) + 1)
    sizes = np.unique(np.concatenate([grid * float(SECTOR), profile.sizes]))
    ops = [Op.READ, Op.WRITE] if op is None else [op]
    size = np.concatenate([sizes] * len(ops))
    op_col = np.concatenate([np.full(len(sizes), int(o), np.uint8) for o in ops])
    bw = profile.bandwidth(op_col, size.astype(np.int64))
    return size, size / bw, np.ones(len(size))


def min_bandwidth(profile: SsdProfile, mix: RequestMix | None, op: Op | None = None) -> float:
    """The lowest bandwidth (bytes/s) over ``mix``'s requests, else over the profile's rows (of
    ``op``, or both operations): the ``bytes`` conversion's ``bw_min``."""
    if mix is not None:
        return float(np.min(profile.bandwidth(mix.op, mix.size)))
    columns = {Op.READ: profile.read_bandwidth, Op.WRITE: profile.write_bandwidth}
    chosen = [columns[op]] if op is not None else list(columns.values())
    return float(min(np.min(c) for c in chosen))


def affine_cost(
    profile: SsdProfile, mix: RequestMix | None, op: Op | None = None
) -> tuple[float, float, float]:
    """``(α, β, s̄)``: the line ``α·s + β`` at or above every request's cost that is lowest at the
    mean request size ``s̄`` (module documentation, ``bytes+iops``).

    >>> p = SsdProfile.from_spec(read_overhead_s=1e-4, read_bytes_per_s=1e8,
    ...                          write_overhead_s=1e-4, write_bytes_per_s=1e8)
    >>> from tailbound.traces import Trace
    >>> mix = RequestMix.from_trace(Trace.from_arrays(time=[0, 1, 2], op=[0, 0, 1],
    ...                                               size=[4096, 65536, 16384]))
    >>> a, b, mean = affine_cost(p, mix)
    >>> round(1 / a), round(b * 1e6, 3), mean  # the spec's line: 100 MB/s, 100 µs a request
    (100000000, 100.0, 28672.0)
    >>> a, b, _ = affine_cost(p, None)  # any size: beyond the last row its bandwidth holds
    >>> round(1 / a), round(b * 1e6, 3)
    (96325475, 99.805)
    """
    size, cost, _ = _points(profile, mix, op)
    mean = (
        mix.mean_size if mix is not None else math.sqrt(float(profile.sizes[0] * profile.sizes[-1]))
    )
    if mix is None:  # sizes beyond the last row cost s / bw(last row): the slope must cover it
        last = [profile.read_bandwidth[-1], profile.write_bandwidth[-1]]
        if op is not None:
            last = [last[0] if op == Op.READ else last[1]]
        alpha_min = float(max(1.0 / x for x in last))
    else:
        alpha_min = 0.0
    # the upper concave hull of (0, 0) and the points, left to right (the largest cost per size)
    order = np.lexsort((-cost, size))
    xs = np.concatenate([[0.0], size[order]])
    ys = np.concatenate([[0.0], cost[order]])
    hull: list[int] = []
    for i in range(len(xs)):
        if hull and xs[hull[-1]] == xs[i]:
            continue  # same size, lower or equal cost (sorted by cost descending within a size)
        while len(hull) >= 2:
            j, k = hull[-2], hull[-1]
            if (ys[k] - ys[j]) * (xs[i] - xs[j]) <= (ys[i] - ys[j]) * (xs[k] - xs[j]):
                hull.pop()
            else:
                break
        hull.append(i)
    alpha = alpha_min
    for j, k in itertools.pairwise(hull):
        if xs[j] <= mean <= xs[k]:
            alpha = max(alpha_min, (ys[k] - ys[j]) / (xs[k] - xs[j]))
            break
    # the intercept that puts every point on or under the line (exactly, whatever the rounding)
    beta = max(0.0, float(np.max(cost - alpha * size)))
    return float(alpha), beta, mean


def convert(
    rate: float,
    bucket_s: float,
    profile: SsdProfile,
    mix: RequestMix | None,
    conversion: str = CONVERSIONS[0],
    op: Op | None = None,
) -> ByteLimit:
    """``(rate, bucket_s)`` in device-seconds as byte (and I/O) limits that never let
    ``mix``'s requests (else any the profile describes; of ``op`` only, or both) use more than
    ``rate·T + bucket_s`` device-seconds in any ``T`` seconds.

    >>> p = SsdProfile(sizes=np.array([4096.0, 65536.0]), read_bandwidth=np.array([40e6, 80e6]),
    ...                write_bandwidth=np.array([20e6, 60e6]))
    >>> convert(0.5, 0.01, p, None, "bytes")  # the slowest row: 4 KiB writes at 20 MB/s
    ByteLimit(bytes_per_s=10000000.0, bucket_bytes=200000.0, iops=None, bucket_ios=None)
    """
    if conversion not in CONVERSIONS:
        raise ConfigError(None, f"unknown conversion {conversion!r} (known: {CONVERSIONS})")
    if conversion == "bytes":
        bw = min_bandwidth(profile, mix, op)
        return ByteLimit(rate * bw, bucket_s * bw)
    alpha, beta, mean = affine_cost(profile, mix, op)
    if beta <= 0.0:
        return ByteLimit(rate / alpha, bucket_s / alpha)
    # φ·r/α = r·s̄/c̄ and (1 − φ)·r/β = r/c̄, c̄ = α·s̄ + β the mean request's cost (α may be 0)
    mean_cost = alpha * mean + beta
    return ByteLimit(
        rate * mean / mean_cost, bucket_s * mean / mean_cost, rate / mean_cost, bucket_s / mean_cost
    )


def usable_share(limit: ByteLimit, rate: float, profile: SsdProfile, mix: RequestMix) -> float:
    """The share of ``rate`` that ``mix``, issued in its own proportions, can use under
    ``limit``: its requests per second (bytes/s over its mean size, at most the I/O limit)
    times its mean cost, over ``rate``. 1 for ``bytes`` on a tenant of one size.

    >>> p = SsdProfile(sizes=np.array([4096.0, 65536.0]), read_bandwidth=np.array([40e6, 80e6]),
    ...                write_bandwidth=np.array([20e6, 60e6]))
    >>> from tailbound.traces import Trace
    >>> mix = RequestMix.from_trace(Trace.from_arrays(time=[0, 1], op=[0, 0], size=[4096, 65536]))
    >>> round(usable_share(convert(0.5, 0.01, p, mix, "bytes"), 0.5, p, mix), 3)
    0.529
    >>> round(usable_share(convert(0.5, 0.01, p, mix, "bytes+iops"), 0.5, p, mix), 3)
    1.0
    """
    per_s = limit.bytes_per_s / mix.mean_size
    if limit.iops is not None:
        per_s = min(per_s, limit.iops)
    cost = mix.size / profile.bandwidth(mix.op, mix.size)
    return per_s * float(np.average(cost, weights=mix.count)) / rate
