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

from tailbound import _core
from tailbound.characterize import RbCurve
from tailbound.dnc.device import DeviceLimits
from tailbound.policies.wc_tenant import server_inputs
from tailbound.policies.workload import TenantCurves

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

    def __deepcopy__(self, memo: dict[int, object]) -> ServerModel:
        """Itself: a model is immutable, and :data:`REFERENCE` is recognised by identity (a
        deep copy of a placer or policy must keep analysing under the same model)."""
        return self

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
    result, its walk done in the core (the same lines, order and arithmetic: the same floats,
    tested)."""
    xs, ys, tail = _core.wc_arrival_points(curve.rates, curve.buckets)
    xs.flags.writeable = False
    ys.flags.writeable = False
    return xs, ys, tail


def model_terms(
    tenants: Sequence[Placed], model: ServerModel
) -> tuple[NDArray[np.float64] | None, bool]:
    """``model`` as the core takes it: each tenant's constants, ``(n, 3)`` seconds (``None`` for
    :data:`REFERENCE`, whose constants are zeros), and whether equal levels share the device."""
    if model is REFERENCE:
        return None, False
    return model.constants(tenants), model.shares_levels


def _limits(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a`` as the core reads rates and buckets: float64 (no copy when it already is)."""
    return np.asarray(a, dtype=np.float64)


def shaper_delays(
    tenants: Sequence[Placed], rate: NDArray[np.float64], bucket: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Delay of each tenant in its own token-bucket shaper at each stage, shape ``(n, 3)``:
    ``h(α, r t + b) = max_i ((α(x_i) − b)/r − x_i)+`` over the breakpoints of the concave
    arrival curve ``α`` (infinite if ``r`` is below the mean rate). Equals
    :func:`tailbound.dnc.shaper_delay` (the general operator), tested; computed in the core
    (``tailbound_core::wc::check``)."""
    prepared, _ = server_inputs(tenants)
    return _core.wc_shaper_delays(prepared, _limits(rate), _limits(bucket))


def queue_delays(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    model: ServerModel = REFERENCE,
) -> NDArray[np.float64]:
    """Eq. 5.1 for each tenant at each of its queues, shape ``(n, 3)``:
    ``(c_j + Σ_{k same queue, SLO_k <= SLO_j} b_k) / (1 − Σ_{k same queue, SLO_k < SLO_j} r_k)``,
    with ``c_j`` the model's blocking terms and, at a device the model says is shared
    (processor sharing), ``SLO_k <= SLO_j`` in the rate sum too (computed in the core)."""
    prepared, devices = server_inputs(tenants)
    constants, shares = model_terms(tenants, model)
    return _core.wc_queue_delays(
        prepared, devices, _limits(rate), _limits(bucket), constants, shares
    )


def latency_bounds(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    model: ServerModel = REFERENCE,
) -> NDArray[np.float64]:
    """Each tenant's predicted worst-case latency (s): Eq. 5.5 plus its shaper delays."""
    if not tenants:
        return np.zeros(0)
    prepared, devices = server_inputs(tenants)
    constants, shares = model_terms(tenants, model)
    return _core.wc_latency_bounds(
        prepared, devices, _limits(rate), _limits(bucket), constants, shares
    )


def queue_rate_sums(
    tenants: Sequence[Placed], rate: NDArray[np.float64], devices: int
) -> NDArray[np.float64]:
    """Sum of configured rates per queue: ``[net_in, net_out, storage_0, ...]``."""
    return _core.wc_queue_rate_sums(
        [t.device for t in tenants], _limits(rate).reshape(len(tenants), 3), devices
    )


def check(
    tenants: Sequence[Placed],
    rate: NDArray[np.float64],
    bucket: NDArray[np.float64],
    devices: int,
    model: ServerModel = REFERENCE,
) -> bool:
    """The wcLatencyChecker: every queue within capacity (Eq. 5.4) and every bound <= SLO
    (``Σ r <= 0.999 + 1e-9`` per queue, each bound ``<= SLO (1 + 1e-9)``; in the core)."""
    if not tenants:
        return True
    prepared, device_of = server_inputs(tenants)
    constants, shares = model_terms(tenants, model)
    return _core.wc_check(
        prepared, device_of, _limits(rate), _limits(bucket), devices, constants, shares
    )
