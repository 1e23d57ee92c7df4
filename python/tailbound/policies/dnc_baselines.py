"""The DNC-based admission baselines of thesis §4.3.1 as bound functions.

Each baseline is a class (:class:`DncPolicy`, :class:`SiloPolicy`, :class:`QJumpPolicy`; built by
name through :mod:`tailbound.policies.registry`) whose instances are
:data:`~tailbound.snc.analysis.BoundFunction` s, so the baselines plug into
:func:`~tailbound.policies.admission.admit_in_order` exactly like SNC-Meister. All three give
**100th-percentile** (worst-case) bounds and ignore the tenant's percentile. A tenant's request
crosses its client's egress and its server's ingress, its response the server's egress and the
client's ingress (the same full-bisection topology as SNC-Meister); its latency is the sum of both
directions, each direction

    latency_dir = pacing delay in its own rate limiter (end-host queueing)
                + the PriorityMeister LP bound through its two links (thesis §3.2.3,
                  :func:`~tailbound.dnc.lp.lp_delay`; every other flow is shaped by its
                  token buckets where it enters, lower levels block for one packet)
                + 2 · (MTU / C + propagation)   (store-and-forward of the last packet and wire
                  propagation per hop; *choice*: the fluid LP does not see packets)

Work is seconds of link time (bytes ÷ the link rate), r-b curves come from the tenant's trace
with the network token model (:func:`~tailbound.characterize.rb_curve`), one per direction.

The policies differ in how rate limits and priorities are chosen:

- ``dnc`` (PriorityMeister-style): priorities by SLO (dense ranks, the tightest first, as
  SNC-Meister), per direction :data:`PM_BUCKETS` token buckets from the r-b curve
  (:func:`~tailbound.policies.prioritymeister.rate_limits`, multiple rate limits). The buckets lie
  on the curve, so the trace they were fitted on is never delayed by them (pacing 0).
- ``silo`` (Silo++): one priority level (Silo's switches serve guaranteed traffic FIFO); per
  direction one bucket ``(r, one packet)`` — Silo's 1.5 KB burst — with ``r`` the **effective
  bandwidth**: the smallest rate whose pacing delay ``(b(r) − packet) / r``
  (:meth:`RbCurve.shaping_delay`) fits the direction's pacing budget. *Choice* (the thesis gives
  no split): the pacing budgets of both directions add up to :data:`SILO_PACING_SHARE` of the
  SLO, split between them on a grid of fractions so that ``r_in + r_out`` is smallest; the rest
  of the SLO is left for the network.
- ``qjump`` (QJump++): :data:`QJUMP_RATES` fixed class throughputs (independent of the number of
  tenants, as the thesis does); class ``i`` has priority ``i`` (0 highest) and bucket
  ``(QJUMP_RATES[i], one packet)``. A tenant takes one class for both directions (*choice*);
  QJump++ raises a tenant's class until it and every earlier tenant meet their SLOs. The classes
  of a tenant list are chosen greedily in list order (arrival order), so the admitted prefix keeps
  its classes; a tenant that fits nowhere takes the first class where it alone meets its SLO,
  else the last class.

**Catch-up buckets** (``silo``, ``qjump``: rate limiters in ``shaping`` mode). The bound above
composes a pure pacer ``(r, b)`` (``b`` one packet) with the links, but the plan's bucket is
enforced *in the sender's egress scheduler* (the simulator's priority queue; HTB's ceil/cburst
live, docs/enforcement.md): it is charged when a packet starts on the wire, and a head waiting
for the wire behind other traffic with its bucket already empty loses the tokens of that wait.
With a one-packet bucket every such wait delays all later packets of the backlog, so the
egress scheduler paces more slowly than ``r`` (adversarially down to ``r / (1 + r)`` behind a
flow that starts a packet just before each of its eligibility instants). Found by the property
test: QJump++ tenant t4 (class rate 0.5 behind two class-0.2 tenants on its client) took
3.3 ms more than its pacing + LP bound in its request direction. *Fix*: the enforced bucket is
``(r, b')``, ``b' = 2b + r·d₀`` (:func:`catch_up_buckets`), with ``d₀`` the flow's wait at its
egress link; the pacing delay stays that of ``(r, b)`` and the LP sees every flow with its
enforced bucket. Derivation, for flow ``w`` at its egress link ``q₀``:

1. Let ``P_k`` be the times a pure packetised pacer ``(r, b)`` would release ``w``'s packets
   (``F(t)`` released by ``t``, conforming to ``(r, b)``; ``P_k − arrival_k`` at most the
   pacing delay ``(b(r) − b) / r``), ``D(t)`` the work of ``w`` started on ``q₀`` by ``t``.
2. If ``F(t) − D(t) <= X`` at all times and the bucket is ``b' = b + X``, packet ``k`` is
   eligible by ``max(P_k, start_{k−1})``: at such ``τ`` the bucket level is
   ``sup_u (D(τ) − D(u) − r(τ − u))`` with ``D(τ) <= F(τ) − c_k`` and ``D(u) >= F(u) − X``, so
   level ``+ c_k <= sup_u (F(τ) − F(u) − r(τ − u)) + X <= b + X``. So ``w`` is a FIFO flow
   arriving at ``q₀`` at ``P_k`` (or earlier), and whenever it has such a packet not started,
   its head is eligible and the link busy.
3. The wait ``start_k − P_k``: in the busy period ``[τ₀, start_k)`` of ``q₀`` at ``w``'s level
   and above, ``w`` brings at most ``b + r(P_k − τ₀)`` (its pacer's output), each flow ``j``
   of ``O`` (the others of the same or a more important level; same-level heads are served by
   host arrival order, so all of theirs counts) at most ``b'_j + r_j(start_k − τ₀)`` (its
   starts are charged to its own enforced bucket), and a less important packet in service at
   ``τ₀`` one packet. With ``r + Σ_O r_j < 1`` the worst is ``P_k = τ₀``:
   ``d₀ = (b + Σ_O b'_j + blocking) / (1 − Σ_O r_j)``.
4. Then ``F(t) − D(t) <= F(t) − F(t − d₀) <= b + r·d₀ =: X`` (every packet released by
   ``t − d₀`` has started), closing the induction of 2; ``b' = 2b + r·d₀``, one linear system
   over the flows of the link (``b'_j`` appears in ``d₀``).
5. ``w``'s arrivals at ``q₀`` counted at ``min(P_k, start_k)`` are ``max(F, D)``, which
   conforms to ``(r, b')`` (``F`` to ``(r, b)``, ``D`` to the enforced bucket), and every other
   flow's starts conform to its enforced bucket; so the LP with the enforced buckets bounds the
   time from ``min(P_k, start_k) <= P_k`` to the exit, and the direction's latency is at most
   the pacing delay of ``(r, b)`` plus that LP bound plus the wire term. The egress link serves
   the eligible heads of a level in the order the packets reached the host, not the order they
   became eligible, so the LP counts the other flows of ``w``'s level at ``q₀`` in full
   (``lp_delay(fifo_first=False)``), as in 3.

``dnc`` is in ``demotion`` mode (nothing waits for tokens; pacing 0) and keeps its buckets.
*Open*: its buckets are charged when a packet starts too, so a burst of the fitted trace that
waits at its egress behind more important traffic while more arrives can exceed them and be
demoted below every level; not seen in replays (the same latencies with unbounded buckets), not
in its bound.

**Storage** (thesis §4.4.6). A tenant naming a ``device`` also crosses that device (the queue
``<server>/<device>``, one device-second per second), with work in device-seconds by the tenants
file's SSD profile (:class:`~tailbound.profiles.tokens.SsdModel`): its storage latency is the same
LP bound (:func:`~tailbound.dnc.lp.lp_delay`, one queue) at the tenant's level (by SLO for
``dnc``, the one FIFO level for ``silo``, its class for ``qjump``), every flow at the device
described by :data:`PM_BUCKETS` token buckets on its storage r-b curve
(:func:`~tailbound.policies.prioritymeister.rate_limits`, as PriorityMeister's storage stage) and
a less important one blocking for its largest request (``max_request_s``: the device does not
preempt). *Choice*: Silo and QJump are network systems and do not rate-limit storage; their
baselines are given the same storage analysis (no pacing at the device, the buckets only describe
the traffic), so the three differ only in the network. The storage buckets are analysis only and
not written to the plan. The device is analysed with its dispatch limits (docs/dnc.md, "The storage
stage": the work less important requests can have in service blocks, a level is shared); the
plan's dispatch rule is the thesis' (nothing less important joins a request in service).

Only flows sharing a link with a flow can change its LP bound, so every bound is memoised on the
flow and the flows sharing its links: adding a tenant re-solves only the LPs of the flows it meets.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tailbound.characterize import RbCurve, rb_curve
from tailbound.dnc.device import DeviceLimits
from tailbound.dnc.lp import LpFlow, lp_delay
from tailbound.model import Tenant, TenantSet
from tailbound.policies.admission import WIRE, Bucket, Configured, Wire
from tailbound.policies.prioritymeister import RATE_CAP, rate_limits
from tailbound.profiles.tokens import TokenModel, stage_model
from tailbound.snc.analysis import TenantBound
from tailbound.snc.tenants import check_tenants, priorities_by_slo, ssd_profile
from tailbound.stages import Stage
from tailbound.traces.trace import Trace

#: Token buckets per direction of the ``dnc`` policy (PriorityMeister's multiple rate limits).
PM_BUCKETS = 3
#: Share of the SLO Silo++ gives to pacing (both directions together); the rest is the network's.
SILO_PACING_SHARE = 0.9
#: The fractions of Silo++'s pacing budget tried for the request direction.
SILO_SPLITS = tuple(np.round(np.linspace(0.05, 0.95, 19), 2))
#: QJump++'s class throughputs (utilisation of a link), class 0 the highest priority.
QJUMP_RATES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
DIRECTIONS = ("in", "out")
#: The storage "direction" of a tenant with a device (module docstring, *Storage*).
STORAGE = "storage"


# ------------------------------------------------------------------------------ traces
@dataclass
class CurveCache:
    """Per (trace, direction) r-b curves in seconds of link work; traces are read from
    ``Tenant.trace`` unless ``traces`` holds one under ``str(spec.trace)`` (the experiment's
    time-shifted halves)."""

    tset: TenantSet
    traces: dict[str, Trace] = field(default_factory=dict)
    curves: dict[tuple[str, str], RbCurve] = field(default_factory=dict)

    def trace(self, spec: Tenant) -> Trace:
        key = str(spec.trace)
        if key not in self.traces:
            from tailbound.traces import read_trace

            self.traces[key] = read_trace(Path(spec.trace))
        return self.traces[key]

    max_requests: dict[str, float] = field(default_factory=dict)

    def _model(self, direction: str) -> TokenModel:
        if direction == STORAGE:
            assert self.tset.ssd_profile is not None  # checked when the policy is made
            return stage_model(Stage.STORAGE, profile=ssd_profile(Path(self.tset.ssd_profile)))
        stage = Stage.NET_IN if direction == "in" else Stage.NET_OUT
        return stage_model(stage, link_bandwidth_bytes_per_s=self.tset.link_bytes_per_s)

    def curve(self, spec: Tenant, direction: str) -> RbCurve:
        """The r-b curve of ``spec``'s trace in ``direction`` (``in``, ``out`` or ``storage``)."""
        key = (str(spec.trace), direction)
        if key not in self.curves:
            self.curves[key] = rb_curve(self.trace(spec), self._model(direction))
        return self.curves[key]

    buckets: dict[tuple[str, str], tuple[Bucket, ...]] = field(default_factory=dict)

    def rate_limits(self, spec: Tenant, direction: str) -> tuple[Bucket, ...]:
        """PriorityMeister's :data:`PM_BUCKETS` token buckets on ``spec``'s r-b curve in
        ``direction`` (:func:`~tailbound.policies.prioritymeister.rate_limits`): the ``dnc``
        baseline's buckets."""
        key = (str(spec.trace), direction)
        if key not in self.buckets:
            self.buckets[key] = rate_limits(self.curve(spec, direction), PM_BUCKETS)
        return self.buckets[key]

    def max_request_s(self, spec: Tenant) -> float:
        """The largest request of ``spec``'s trace in device-seconds (what it can block a more
        important flow for at the non-preemptive device)."""
        key = str(spec.trace)
        if key not in self.max_requests:
            work = self._model(STORAGE).tokens(self.trace(spec))
            self.max_requests[key] = float(np.max(work)) if work.size else 0.0
        return self.max_requests[key]


def catch_up_buckets(flows: Sequence[tuple[int, Bucket]], packet_s: float) -> list[float]:
    """The enforced bucket sizes (s) of the one-bucket flows ``(level, (r, b))`` leaving one
    egress link, where their buckets pace them in the link's scheduler (module docstring,
    *Catch-up buckets*): ``b' = 2b + r·d₀`` with ``d₀ = (b + Σ_O b' + blocking) / (1 − Σ_O r)``
    the wait at the link, ``O`` the other flows of the same or a more important level and the
    blocking one packet when a less important flow is present. Solved as one linear system (its
    solution is positive exactly when it exists: ``I − K`` with ``K ≥ 0`` is then an M-matrix);
    ``inf`` for a flow with ``r + Σ_O r >= 1`` (no finite wait), for the flows counting it in
    their ``O``, and for all when the system has no positive solution.

    >>> catch_up_buckets([(0, (0.5, 1.0))], 1.0)  # alone: d0 = b, b' = 2b + r·b
    [2.5]
    >>> # b'0 = 2 + 0.2·(1 + 1 blocking); b'1 = 2 + (0.5 / 0.8)·(1 + 2.4)
    >>> catch_up_buckets([(0, (0.2, 1.0)), (1, (0.5, 1.0))], 1.0)
    [2.4, 4.125]
    """
    n = len(flows)
    levels = np.array([lv for lv, _ in flows])
    rates = np.array([r for _, (r, _) in flows], dtype=np.float64)
    sizes = np.array([b for _, (_, b) in flows], dtype=np.float64)
    # others[w, j]: j ≠ w is of w's level or a more important one
    others = (levels[None, :] <= levels[:, None]) & ~np.eye(n, dtype=bool)
    load = others.astype(np.float64) @ rates
    blocking = np.where((levels[None, :] > levels[:, None]).any(axis=1), packet_s, 0.0)
    finite = rates + load < 1.0
    while True:  # a flow waiting behind one with no finite bucket has none either
        keep = finite & ~(others & ~finite[None, :]).any(axis=1)
        if (keep == finite).all():
            break
        finite = keep
    out = np.full(n, np.inf)
    idx = np.flatnonzero(finite)
    if idx.size:
        k = rates[idx] / (1.0 - load[idx])
        system = np.eye(idx.size) - k[:, None] * others[np.ix_(idx, idx)]
        rhs = 2.0 * sizes[idx] + k * (sizes[idx] + blocking[idx])
        try:
            sol = np.linalg.solve(system, rhs)
        except np.linalg.LinAlgError:
            sol = np.full(idx.size, np.nan)
        if np.all(np.isfinite(sol)) and np.all(sol > 0):
            out[idx] = sol
    return out.tolist()


def effective_rates(curve: RbCurve, budgets: np.ndarray, bucket: float) -> np.ndarray:
    """The smallest rate of ``curve``'s grid (at most :data:`RATE_CAP`) whose pacing delay fits
    each budget (s): the effective bandwidth (Le Boudec & Thiran) with a one-packet bucket;
    ``inf`` where even the cap does not fit.

    >>> c = RbCurve(np.array([0.1, 0.2, 0.5]), np.array([0.02, 0.01, 0.004]), 0.1)
    >>> effective_rates(c, np.array([0.2, 0.05, 0.001]), 0.0).tolist()
    [0.1, 0.2, inf]
    """
    rates = np.append(curve.rates[curve.rates < RATE_CAP], RATE_CAP)
    delay = curve.shaping_delay(rates, bucket)
    # delay is non-increasing in the rate: the first rate that fits is the smallest
    fits = delay[None, :] <= np.asarray(budgets, dtype=np.float64)[:, None]
    first = np.argmax(fits, axis=1)
    return np.where(fits.any(axis=1), rates[first], np.inf)


# ------------------------------------------------------------------------------ flows and LP
@dataclass(frozen=True)
class NetFlow:
    """One direction of a tenant as the LP sees it: hashable, so bounds can be memoised."""

    name: str
    queues: tuple[str, ...]
    level: int
    buckets: tuple[Bucket, ...]
    packet_s: float

    def lp(self) -> LpFlow:
        return LpFlow(
            self.name,
            self.queues,
            {q: self.level for q in self.queues},
            self.buckets,
            self.packet_s,
        )


def paths(t: Tenant) -> dict[str, tuple[str, str]]:
    """The two links of each direction (client egress → server ingress and back)."""
    return {
        "in": (f"{t.client_host}/egress", f"{t.server}/ingress"),
        "out": (f"{t.server}/egress", f"{t.client_host}/ingress"),
    }


@dataclass
class LpMemo:
    """LP bounds memoised on (flow, the flows sharing one of its links)."""

    delays: dict[tuple[NetFlow, frozenset[NetFlow]], float] = field(default_factory=dict)
    solved: int = 0
    #: The device queues and their dispatch limits (docs/dnc.md, "The storage stage"): several
    #: requests in service, a level shared, blocking by the work in service.
    devices: dict[str, DeviceLimits] = field(default_factory=dict)
    #: Whether a flow's first link serves its level FIFO (off for the baselines pacing in the
    #: egress scheduler: module docstring, *Catch-up buckets*, 3).
    fifo_first: bool = True

    def network_delays(self, flows: Sequence[NetFlow], which: Sequence[int]) -> list[float]:
        """The LP bounds (s) of ``flows[which]`` through their two links with all of ``flows``
        present."""
        at: dict[str, list[NetFlow]] = {}
        for f in flows:
            for q in f.queues:
                at.setdefault(q, []).append(f)
        out = []
        for f in (flows[i] for i in which):
            others = frozenset(g for q in f.queues for g in at[q] if g is not f)
            key = (f, others)
            if key not in self.delays:
                self.delays[key] = self._solve(f, others)
                self.solved += 1
            out.append(self.delays[key])
        return out

    def _solve(self, f: NetFlow, others: frozenset[NetFlow]) -> float:
        """The LP bound, ``inf`` when a link of the path is overloaded at ``f``'s level or above
        (the sum over those flows of their smallest bucket rate reaches the link: no finite
        bound, and the LP is then badly conditioned) or when HiGHS cannot settle the LP (*choice*:
        counted as unbounded, so the tenants are not admitted — the safe side)."""
        for q in f.queues:
            load = min(r for r, _ in f.buckets) + sum(
                min(r for r, _ in g.buckets) for g in others if q in g.queues and g.level <= f.level
            )
            if load >= 1.0:
                return math.inf
        try:
            return lp_delay(
                f.lp(),
                [g.lp() for g in others],
                devices=self.devices,
                fifo_first=self.fifo_first,
            )
        except RuntimeError:
            return math.inf


class _Policy:
    """Shared machinery: curves, packet constants, the memo, and bounds of configured tenants.

    Every baseline is an :class:`~tailbound.policies.admission.AdmissionPolicy`: it bounds
    (``__call__``) and says what it enforces (``configure``)."""

    analysis = ""
    mode = "shaping"  # the baselines' rate limiters pace (Silo++, QJump++)
    worst_case = True

    def __init__(
        self, tset: TenantSet, curves: CurveCache | None = None, wire: Wire = WIRE
    ) -> None:
        # Tenants with a device need the tenants file's SSD profile (checked here).
        check_tenants(tset, f"the {self.analysis} baseline", stochastic=False)
        self.tset = tset
        self.curves = curves if curves is not None else CurveCache(tset)
        self.wire = wire
        self.packet_s = wire.mtu_bytes / tset.link_bytes_per_s
        self.memo = LpMemo(fifo_first=self.mode != "shaping")

    def storage_flow(self, t: Tenant, level: int) -> NetFlow:
        """``t``'s flow at its device (module docstring, *Storage*)."""
        queue = f"{t.server}/{t.device}"
        if queue not in self.memo.devices:
            assert self.tset.ssd_profile is not None  # checked when the policy is made
            # the device's dispatch limits under the thesis' rule (nothing less important joins)
            self.memo.devices[queue] = DeviceLimits.of(ssd_profile(self.tset.ssd_profile))
        return NetFlow(
            f"{t.name}/{STORAGE}",
            (queue,),
            level,
            self.curves.rate_limits(t, STORAGE),
            self.curves.max_request_s(t),
        )

    def wire_s(self) -> float:
        return 2.0 * (self.packet_s + self.wire.propagation_s)

    def reference(self, tenants: Sequence[Tenant]) -> list[Configured]:
        """Each tenant's level, reference buckets and pacing delays, as the baseline chooses
        them (for ``silo`` and ``qjump`` the one-packet buckets of the pure pacer)."""
        raise NotImplementedError

    def configure(self, tenants: Sequence[Tenant]) -> list[Configured]:
        """What is enforced for ``tenants``: their :meth:`reference` configuration with the
        buckets of :meth:`enforced`."""
        return self.enforced(tenants, self.reference(tenants))

    def enforced(self, tenants: Sequence[Tenant], config: Sequence[Configured]) -> list[Configured]:
        """``config`` with the buckets that are enforced: in ``shaping`` mode each direction's
        one reference bucket ``(r, b)`` becomes ``(r, b')`` of :func:`catch_up_buckets` over the
        flows leaving the same egress link (module docstring, *Catch-up buckets*); the pacing
        delays stay those of the reference bucket."""
        if self.mode != "shaping":
            return list(config)
        at: dict[str, list[tuple[int, str]]] = {}  # egress link -> (tenant index, direction)
        for i, t in enumerate(tenants):
            for d in DIRECTIONS:
                at.setdefault(paths(t)[d][0], []).append((i, d))
        sizes: dict[tuple[int, str], float] = {}
        for members in at.values():
            flows = []
            for i, d in members:
                buckets = config[i].buckets[d]
                if len(buckets) != 1:
                    raise ValueError("catch-up buckets need one reference bucket per direction")
                flows.append((config[i].level, buckets[0]))
            for key, size in zip(members, catch_up_buckets(flows, self.packet_s), strict=True):
                sizes[key] = size
        return [
            Configured(
                c.level,
                {d: ((c.buckets[d][0][0], sizes[(i, d)]),) for d in DIRECTIONS},
                dict(c.pacing),
            )
            for i, c in enumerate(config)
        ]

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return self.evaluate(tenants, self.reference(tenants))

    def evaluate(
        self,
        tenants: Sequence[Tenant],
        config: Sequence[Configured],
        which: Sequence[int] | None = None,
    ) -> list[TenantBound]:
        """The bounds of ``tenants[which]`` (default all) configured by ``config`` (their
        :meth:`reference` configuration): the LP sees the :meth:`enforced` buckets, the pacing
        delays are the reference ones."""
        which = range(len(tenants)) if which is None else which
        flows: list[NetFlow] = []
        index: list[dict[str, int]] = []  # per tenant, direction -> its flow's index
        for t, c in zip(tenants, self.enforced(tenants, config), strict=True):
            index.append({})
            for d in DIRECTIONS:
                index[-1][d] = len(flows)
                if not all(math.isfinite(b) for _, b in c.buckets[d]):
                    buckets: tuple[Bucket, ...] = ((1.0, math.inf),)  # no finite bound
                else:
                    buckets = c.buckets[d]
                flows.append(NetFlow(f"{t.name}/{d}", paths(t)[d], c.level, buckets, self.packet_s))
            if t.device is not None:
                index[-1][STORAGE] = len(flows)
                flows.append(self.storage_flow(t, c.level))
        wanted = [f for i in which for f in index[i].values()]
        delay = dict(zip(wanted, self.memo.network_delays(flows, wanted), strict=True))
        out = []
        for i in which:
            t, c = tenants[i], config[i]
            per = {d: c.pacing[d] + delay[index[i][d]] + self.wire_s() for d in DIRECTIONS}
            if STORAGE in index[i]:
                per[STORAGE] = delay[index[i][STORAGE]]
            out.append(TenantBound.of_directions(t, c.level, per))
        return out


# ------------------------------------------------------------------------------ policies
class DncPolicy(_Policy):
    """PriorityMeister-style DNC: priorities by SLO, :data:`PM_BUCKETS` buckets on the r-b curve,
    traffic above them demoted (PriorityMeister's enforcer, thesis §2.2.1)."""

    analysis = "dnc"
    mode = "demotion"

    def buckets(self, t: Tenant, direction: str) -> tuple[Bucket, ...]:
        return self.curves.rate_limits(t, direction)

    def reference(self, tenants: Sequence[Tenant]) -> list[Configured]:
        levels = priorities_by_slo([t.slo_s for t in tenants])
        return [
            Configured(
                level,
                {d: self.buckets(t, d) for d in DIRECTIONS},
                {d: 0.0 for d in DIRECTIONS},
            )
            for t, level in zip(tenants, levels, strict=True)
        ]

    def newcomer_bound(self, tenants: Sequence[Tenant]) -> TenantBound:
        """The last tenant's bound (the admission screen of :func:`admit_in_order`)."""
        return self.evaluate(tenants, self.reference(tenants), [len(tenants) - 1])[0]


class SiloPolicy(_Policy):
    """Silo++: one FIFO level, effective-bandwidth rate limits with a one-packet bucket."""

    analysis = "silo"

    def __init__(
        self, tset: TenantSet, curves: CurveCache | None = None, wire: Wire = WIRE
    ) -> None:
        super().__init__(tset, curves, wire)
        self._config: dict[tuple[str, float], Configured] = {}

    def configure_one(self, t: Tenant) -> Configured:
        key = (str(t.trace), t.slo_s)
        if key not in self._config:
            budget = SILO_PACING_SHARE * t.slo_s
            split = np.array(SILO_SPLITS)
            r_in = effective_rates(self.curves.curve(t, "in"), split * budget, self.packet_s)
            r_out = effective_rates(
                self.curves.curve(t, "out"), (1 - split) * budget, self.packet_s
            )
            best = int(np.argmin(r_in + r_out))
            rates = {"in": float(r_in[best]), "out": float(r_out[best])}
            if not all(math.isfinite(r) for r in rates.values()):
                rates = {d: RATE_CAP for d in DIRECTIONS}  # fits nowhere: rejected by its bound
            self._config[key] = Configured(
                0,
                {d: ((rates[d], self.packet_s),) for d in DIRECTIONS},
                {
                    d: float(self.curves.curve(t, d).shaping_delay(rates[d], self.packet_s))
                    for d in DIRECTIONS
                },
            )
        return self._config[key]

    def reference(self, tenants: Sequence[Tenant]) -> list[Configured]:
        return [self.configure_one(t) for t in tenants]

    def newcomer_bound(self, tenants: Sequence[Tenant]) -> TenantBound:
        """The last tenant's bound (the admission screen of :func:`admit_in_order`)."""
        config = [self.configure_one(t) for t in tenants]
        return self.evaluate(tenants, config, [len(tenants) - 1])[0]


class QJumpPolicy(_Policy):
    """QJump++: fixed class throughputs, classes raised per tenant until the SLOs are met."""

    analysis = "qjump"

    def __init__(
        self, tset: TenantSet, curves: CurveCache | None = None, wire: Wire = WIRE
    ) -> None:
        super().__init__(tset, curves, wire)
        self._levels: dict[tuple[str, ...], tuple[int, ...]] = {(): ()}

    def at_level(self, t: Tenant, level: int) -> Configured:
        rate = QJUMP_RATES[level]
        return Configured(
            level,
            {d: ((rate, self.packet_s),) for d in DIRECTIONS},
            {
                d: float(self.curves.curve(t, d).shaping_delay(rate, self.packet_s))
                for d in DIRECTIONS
            },
        )

    def levels(self, tenants: Sequence[Tenant]) -> tuple[int, ...]:
        """Each tenant's class, chosen greedily in list order (module docstring)."""
        names = tuple(t.name for t in tenants)
        done = max(n for n in range(len(names) + 1) if names[:n] in self._levels)
        levels = self._levels[names[:done]]
        for n in range(done, len(names)):
            levels = (*levels, self._choose(tenants[: n + 1], levels))
            self._levels[names[: n + 1]] = levels
        return levels

    def _choose(self, tenants: Sequence[Tenant], earlier: tuple[int, ...]) -> int:
        head = [self.at_level(t, lv) for t, lv in zip(tenants, earlier, strict=False)]
        alone = None
        for level in range(len(QJUMP_RATES)):
            me = self.at_level(tenants[-1], level)
            if not math.isfinite(me.pacing["in"] + me.pacing["out"]) or (
                me.pacing["in"] + me.pacing["out"] > tenants[-1].slo_s
            ):
                continue  # the class's rate alone is too slow for this tenant
            bounds = self.evaluate(tenants, [*head, me])
            if all(b.meets_slo for b in bounds):
                return level
            if alone is None and bounds[-1].meets_slo:
                alone = level
        return alone if alone is not None else len(QJUMP_RATES) - 1

    def reference(self, tenants: Sequence[Tenant]) -> list[Configured]:
        levels = self.levels(tenants)
        return [self.at_level(t, lv) for t, lv in zip(tenants, levels, strict=True)]
