"""The tenants of one storage server and the queues they share (thesis §5.2, Fig. 5.11).

A server has one network link (queues ``net_in`` and ``net_out``, shared by every tenant on the
server) and one storage queue per device. A tenant's path is ``net_in → storage[d] → net_out``.
Queue capacities are 1 (rates are utilisations of the queue).

:func:`latency_bounds` is the wcLatencyChecker (thesis §5.2.1): a tenant's bound is the sum over
its three queues of Eq. 5.1 (Eq. 5.5) plus the delay in its own token-bucket shaper at each stage
(zero when its ``(r, b)`` lies on or above its r-b curve).

**The server model** (:class:`ServerModel`, docs/dnc.md "The storage stage"). Eq. 5.1 is the
bound of a preemptive unit-rate server that serves a level first come first served. The device is
not one: it serves up to its MPLs of requests at once by processor sharing, and requests already
in service are not preempted. With the device's limits (:class:`~tailbound.dnc.device
.DeviceLimits`) a tenant's storage bound becomes ``(B + Σ_{k ≤ p} b_k) / (1 − Σ_{k ≤ p} r_k)``:
``B`` the most work less important tenants can have in service, and equal levels counted with
their rates (they share the device with it). A network stage adds the non-preemptive packet of a
less important tenant and the store-and-forward of the last packet at the second link (two packet
times, in the numerator). :data:`REFERENCE` is the reference system's model (none of these terms):
kept to reproduce the paper's figures, and unsound against the simulator's device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import RbCurve
from tailbound.dnc.curves import token_bucket_min
from tailbound.dnc.device import DeviceLimits
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

#: The reference system's guard against rounding: SLOs ×0.999 inside the LP, rates ≤ 0.999.
SLO_SCALE = 0.999
RATE_CAP = 0.999

NET_IN, STORAGE, NET_OUT = 0, 1, 2


@dataclass(frozen=True, eq=False)
class Placed:
    """A workload on a device (index into the server's devices)."""

    workload: TenantCurves
    device: int = 0


@dataclass(frozen=True, eq=False)
class ServerModel:
    """What the latency analysis knows of a server beyond its queues' unit rates (module
    docstring): its devices' dispatch limits and work table (``None``: a preemptive unit-rate
    server, FIFO within a level), and one packet's time on its link (seconds)."""

    device: DeviceLimits | None = None
    packet_s: float = 0.0

    @property
    def shares_levels(self) -> bool:
        """Whether equal levels share the device (processor sharing) rather than queue FIFO:
        a device model whose dispatcher lets several requests of a level in service at once."""
        return self.device is not None and not self.device.level_fifo

    def network_terms(self) -> float:
        """Seconds added to a network stage's numerator: a less important tenant's packet in
        transmission and the last packet's store-and-forward at the second link."""
        return 2.0 * self.packet_s

    def storage_blocking(self, tenants: Sequence[Placed]) -> NDArray[np.float64]:
        """Each tenant's blocking at its device (s): the most work the tenants less important
        than it on the same device can have in service (0 without a device model)."""
        out = np.zeros(len(tenants))
        if self.device is None:
            return out
        slo = slos(tenants)
        device = self.device
        # any tenant's request may be demoted below every level (a rate limiter's demotion)
        demoted: dict[int, float] = {}
        if device.level_mpl is not None:
            for t in tenants:
                for write, size in zip((False, True), t.workload.largest, strict=True):
                    work = device.work(write, size) if math.isfinite(size) else math.inf
                    demoted[t.device] = max(demoted.get(t.device, 0.0), work)
        for j, t in enumerate(tenants):
            lower = [i for i, k in enumerate(tenants) if k.device == t.device and slo[i] > slo[j]]
            if lower:
                largest_read = max(tenants[i].workload.largest[0] for i in lower)
                largest_write = max(tenants[i].workload.largest[1] for i in lower)
                levels = len({float(slo[i]) for i in lower})
                out[j] = device.blocking(
                    largest_read, largest_write, levels, demoted_work=demoted.get(t.device, 0.0)
                )
        return out

    def constants(self, tenants: Sequence[Placed]) -> NDArray[np.float64]:
        """Seconds added to each tenant's numerators, shape ``(n, 3)`` (stage order)."""
        out = np.zeros((len(tenants), 3))
        out[:, NET_IN] = out[:, NET_OUT] = self.network_terms()
        out[:, STORAGE] = self.storage_blocking(tenants)
        return out


#: The reference system's model: Eq. 5.1 at every queue, nothing more (unsound for the device).
REFERENCE = ServerModel()


def pad_edge(rows: Sequence[NDArray[np.float64]], width: int) -> NDArray[np.float64]:
    """``rows`` (1-D, each at most ``width`` long) as one ``(len(rows), width)`` array, each row
    padded by repeating its last value (faster than ``np.pad`` per row)."""
    out = np.empty((len(rows), width))
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
        out[i, len(r) :] = r[-1]
    return out


def queue_ids(tenants: Sequence[Placed]) -> NDArray[np.int64]:
    """Queue of each tenant at each stage, shape ``(n, 3)``: ``net_in`` is 0, ``net_out`` 1,
    device ``d``'s storage queue ``2 + d``."""
    q = np.empty((len(tenants), 3), dtype=np.int64)
    q[:, NET_IN] = 0
    q[:, NET_OUT] = 1
    q[:, STORAGE] = [2 + t.device for t in tenants]
    return q


def slos(tenants: Sequence[Placed]) -> NDArray[np.float64]:
    """SLO of each tenant in seconds."""
    return np.array([t.workload.slo_s for t in tenants], dtype=np.float64)


@lru_cache(maxsize=65536)
def arrival_points(curve: RbCurve) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Breakpoints ``(xs, ys)`` and tail rate of the arrival curve ``min_i (r_i t + b_i)`` of an
    r-b curve (cached per curve object): :func:`~tailbound.dnc.curves.token_bucket_min`'s
    result, computed in one vectorised pass when every bucket is on the envelope."""
    fast = _envelope_points(curve.rates, curve.buckets)
    if fast is not None:
        return fast
    alpha = token_bucket_min(curve.rates, curve.buckets)
    return alpha.xs, alpha.ys, alpha.tail


def _envelope_points(
    rates: NDArray[np.float64], buckets: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], float] | None:
    """:func:`~tailbound.dnc.curves.token_bucket_min`'s walk without its loop, for the common
    case where the walk drops no line from its stack (a convex r-b curve): the same lines in the
    same order and the same arithmetic, so the same floats (tested); ``None`` otherwise (or
    when one bucket is left), and the caller takes the general walk."""
    order = np.lexsort((rates, buckets))
    r, b = rates[order], buckets[order]
    before = np.minimum.accumulate(np.concatenate([[np.inf], r[:-1]]))
    keep = r < before  # the walk skips a line whose rate is no smaller than the last kept one
    r, b = r[keep], b[keep]
    if len(r) < 2 or np.any(r < 0) or np.any(b < 0):
        return None
    x = (b[1:] - b[:-1]) / (r[:-1] - r[1:])  # where consecutive lines cross
    if not (x[0] > 0 and np.all(x[1:] > x[:-1])):
        return None  # the walk would pop a line
    xs = np.concatenate([[0.0], x])
    ys = np.concatenate([[b[0]], b[:-1] + r[:-1] * x])
    xs.flags.writeable = False
    ys.flags.writeable = False
    return xs, ys, float(r[-1])


def shaper_delays(
    tenants: Sequence[Placed], rate: NDArray[np.float64], bucket: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Delay of each tenant in its own token-bucket shaper at each stage, shape ``(n, 3)``:
    ``h(α, r t + b) = max_i ((α(x_i) − b)/r − x_i)+`` over the breakpoints of the concave
    arrival curve ``α`` (infinite if ``r`` is below the mean rate). Equals
    :func:`tailbound.dnc.shaper_delay` (the general operator), tested."""
    n = len(tenants)
    points = [arrival_points(t.workload.curves[stage]) for t in tenants for stage in STORAGE_PATH]
    lengths = np.array([len(p[0]) for p in points])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    xs = np.concatenate([p[0] for p in points])
    ys = np.concatenate([p[1] for p in points])
    tail = np.array([p[2] for p in points])
    r, b = rate.reshape(-1), bucket.reshape(-1)  # tenant by tenant, stage by stage, as points
    on = np.repeat(np.arange(3 * n), lengths)
    positive = r > 0
    # the same arithmetic per breakpoint as one curve at a time, then the largest per curve
    worst = np.maximum.reduceat((ys - b[on]) / np.where(positive, r, 1.0)[on] - xs, starts)
    out = np.where(
        positive, np.maximum(0.0, worst), np.where(ys[starts + lengths - 1] <= b, 0, np.inf)
    )
    out = np.where(tail > r * (1 + 1e-12) + 1e-15, np.inf, out)
    return out.reshape(n, 3)


def queue_delays(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    model: ServerModel = REFERENCE,
) -> NDArray[np.float64]:
    """Eq. 5.1 for each tenant at each of its queues, shape ``(n, 3)``:
    ``(c_j + Σ_{k same queue, SLO_k <= SLO_j} b_k) / (1 − Σ_{k same queue, SLO_k < SLO_j} r_k)``,
    with ``c_j`` the model's blocking terms and, at a device the model says is shared
    (processor sharing), ``SLO_k <= SLO_j`` in the rate sum too."""
    q = queue_ids(tenants)
    slo = slos(tenants)
    at_or_above = slo[None, :] <= slo[:, None]  # [j, k]: k's priority >= j's
    above = slo[None, :] < slo[:, None]
    extra = model.constants(tenants)
    out = np.empty((len(tenants), 3))
    for s in range(3):
        same = q[:, s][:, None] == q[:, s][None, :]
        b_sum = (same & at_or_above) @ bucket[:, s] + extra[:, s]
        sharing = at_or_above if s == STORAGE and model.shares_levels else above
        r_sum = (same & sharing) @ rate[:, s]
        with np.errstate(divide="ignore"):
            out[:, s] = np.where(r_sum < 1.0, b_sum / np.maximum(1.0 - r_sum, 1e-300), np.inf)
    return out


def latency_bounds(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    model: ServerModel = REFERENCE,
) -> NDArray[np.float64]:
    """Each tenant's predicted worst-case latency (s): Eq. 5.5 plus its shaper delays."""
    if not tenants:
        return np.zeros(0)
    delays = queue_delays(tenants, rate, bucket, model) + shaper_delays(tenants, rate, bucket)
    return delays.sum(axis=1)


def queue_rate_sums(
    tenants: Sequence[Placed], rate: NDArray[np.float64], devices: int
) -> NDArray[np.float64]:
    """Sum of configured rates per queue: ``[net_in, net_out, storage_0, ...]``."""
    sums = np.zeros(2 + devices)
    if tenants:
        q = queue_ids(tenants)
        for s in range(3):
            np.add.at(sums, q[:, s], rate[:, s])
    return sums


def check(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    devices: int,
    model: ServerModel = REFERENCE,
) -> bool:
    """The wcLatencyChecker: every queue within capacity (Eq. 5.4) and every bound <= SLO."""
    if np.any(queue_rate_sums(tenants, rate, devices) > RATE_CAP + 1e-9):
        return False
    bounds = latency_bounds(tenants, rate, bucket, model)
    return bool(np.all(bounds <= slos(tenants) * (1 + 1e-9)))
