"""PriorityMeister (thesis ch. 3): multiple rate limiters per tenant and stage (§3.2.1), the
prioritizer (§3.2.2) over the LP latency analysis (§3.2.3, :mod:`tailbound.dnc.lp`), and
the ``bySLO`` baseline (§3.3.1).

A :class:`PmTenant` is a placed tenant: its SLO, the queues each stage crosses (``net_in``: the
client's and the server's links, ``storage``: the device, ``net_out``: the server's and the
client's links), its token buckets at each stage and its largest request per stage. Priorities
are per tenant and stage, 0 the most important (as in :class:`tailbound.plan.Plan`); a stage's
priority applies at every queue of the stage.

**Latency of a tenant** (``analysis``): ``"stages"`` is the sum over its stages of the LP bound
through the stage's queues (:func:`~tailbound.dnc.lp.lp_delay`; within a stage, a network
stage's two links, the LP is end to end, so bursts are paid once there); ``"path"`` is one LP
over all its stages (:func:`~tailbound.dnc.lp.path_delay`: tokens in seconds of service at each
stage, the tenant's burst paid once over the path through the per-request maximum of its stage
works, ``PmTenant.path_buckets``); ``"tighter"`` (the default) is the smaller of the two, per
tenant: both are sound bounds, so their minimum is one (``docs/prioritymeister.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from tailbound.characterize import RbCurve, prune, rb_curve
from tailbound.dnc.device import DeviceLimits
from tailbound.dnc.lp import Bucket, LpFlow, PathFlow, lp_delay, path_delay
from tailbound.plan import PRIORITY_LEVELS
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.trace import Trace

Priorities = dict[str, dict[Stage, int]]

#: How a tenant's end-to-end bound is computed (module docstring): per stage summed, one LP over
#: the path, or the smaller of the two (the default).
Analysis = Literal["tighter", "stages", "path"]
ANALYSES: tuple[Analysis, ...] = ("tighter", "stages", "path")

#: Rates above this are not granted (a stage at 100% utilisation has unbounded delay).
RATE_CAP = 0.999


def rate_limits(curve: RbCurve, k: int = 3) -> tuple[Bucket, ...]:
    """``k`` token buckets ``(rate, size_s)`` for a tenant at one stage, taken from its r-b curve
    (thesis §3.2.1, Fig. 3.2: "we select multiple rate limits simultaneously").

    *Choice* (the thesis does not say how many or which): clip the curve to rates below
    :data:`RATE_CAP`, prune it to ``k − 1`` segments (never below the curve, so the tenant's own
    traffic still passes every bucket undelayed) and take the vertices — the low-rate/large-bucket
    end, the high-rate/small-bucket end and points between. ``k = 1`` takes the middle vertex of
    the two-segment pruning (the knee). Pruning may keep a vertex more to stay above the curve.

    Examples
    --------
    >>> import numpy as np
    >>> c = RbCurve(np.array([0.1, 0.2, 0.3, 0.5, 1.5]), np.array([10.0, 5, 3, 2, 1.5]), 0.1)
    >>> rate_limits(c, 3)
    ((0.1, 10.0), (0.3, 3.0), (0.999, 1.7505))
    >>> rate_limits(c, 1)
    ((0.3, 3.0),)
    """
    if k < 1:
        raise ValueError(f"rate_limits needs k >= 1, got {k}")
    clipped = curve.clipped(RATE_CAP) if curve.rates[-1] > RATE_CAP else curve
    if len(clipped) == 1:
        return ((float(clipped.rates[0]), float(clipped.buckets[0])),)
    if k == 1:
        knee = prune(clipped, 2) if len(clipped) > 2 else clipped
        i = len(knee) // 2
        return ((float(knee.rates[i]), float(knee.buckets[i])),)
    pruned = prune(clipped, k - 1) if len(clipped) > k else clipped
    return tuple((float(r), float(b)) for r, b in zip(pruned.rates, pruned.buckets, strict=True))


@dataclass(frozen=True)
class _PeakWork:
    """A token model whose tokens are each request's largest work over several stage models
    (seconds of service at each stage: the common unit of :func:`~tailbound.dnc.lp.path_delay`)."""

    models: tuple[object, ...]
    stage: None = None

    def tokens(self, trace: Trace) -> NDArray[np.float64]:
        works = [np.asarray(m.tokens(trace), dtype=np.float64) for m in self.models]  # type: ignore[attr-defined]
        return np.max(np.vstack(works), axis=0)


def path_limits(
    trace: Trace, models: Mapping[Stage, object], k: int = 3
) -> tuple[tuple[Bucket, ...], dict[Stage, float]]:
    """A tenant's end-to-end buckets and largest work per stage, for ``PmTenant.path_buckets``
    and ``PmTenant.max_work_s``: ``k`` buckets (:func:`rate_limits`) from the r-b curve of the
    per-request maximum of its works at the stages of ``models`` (each a token model, the same
    the stage buckets come from), and per stage the largest request's work (a whole message on
    a link). No buckets (``()``) when that maximum's long-run rate reaches :data:`RATE_CAP`: the
    path analysis then joins the stages through time only."""
    peak = _PeakWork(tuple(models.values()))
    work = {
        s: float(np.max(np.asarray(m.tokens(trace), dtype=np.float64)))  # type: ignore[attr-defined]
        for s, m in models.items()
    }
    curve = rb_curve(trace, peak)
    if curve.mean_rate >= RATE_CAP:
        return (), work
    return rate_limits(curve, k), work


@dataclass(frozen=True)
class PmTenant:
    """A placed tenant: its SLO latency (``inf``: none, a throughput tenant; the analysis is
    worst case, so the SLO's percentile plays no part), per stage the queues crossed, token
    buckets and largest request (seconds of work at the stage; one packet's time on a link, a
    request's work on a device). For the end-to-end analysis (:func:`~tailbound.dnc.lp.path_delay`),
    ``path_buckets`` bound the per-request maximum over its stages of the work (seconds of
    service; empty: the stages are joined only through time) and ``max_work_s`` is per stage
    the largest request's work (a whole message on a link; default ``max_request_s``)."""

    name: str
    slo_s: float
    queues: Mapping[Stage, tuple[str, ...]]
    buckets: Mapping[Stage, tuple[Bucket, ...]]
    max_request_s: Mapping[Stage, float]
    path_buckets: tuple[Bucket, ...] = ()
    max_work_s: Mapping[Stage, float] = field(default_factory=dict)

    @property
    def stages(self) -> tuple[Stage, ...]:
        return tuple(s for s in STORAGE_PATH if self.queues.get(s))

    def flow(self, stage: Stage, priority: int) -> LpFlow:
        qs = self.queues[stage]
        return LpFlow(
            f"{self.name}/{stage}",
            qs,
            {q: priority for q in qs},
            tuple(self.buckets[stage]),
            float(self.max_request_s.get(stage, 0.0)),
        )

    def path(self, priorities: Mapping[Stage, int]) -> PathFlow:
        """The tenant end to end at ``priorities`` (its level per stage)."""
        stages = self.stages
        missing = [s.value for s in stages if s not in self.max_work_s]
        if self.path_buckets and missing:
            raise ValueError(
                f"PmTenant {self.name!r}: path_buckets need max_work_s at every stage, "
                f"missing {missing}"
            )
        work = tuple(float(self.max_work_s.get(s, 0.0)) for s in stages)
        flows = tuple(self.flow(s, priorities[s]) for s in stages)
        return PathFlow(self.name, flows, tuple(self.path_buckets), work)


#: Queues that are storage devices with several requests in service, and their limits
#: (:mod:`tailbound.dnc.device`); other queues are FIFO inside a level, blocked by one request.
Devices = Mapping[str, DeviceLimits]


def stage_latencies(
    tenants: Sequence[PmTenant], priorities: Priorities, devices: Devices | None = None
) -> dict[str, dict[Stage, float]]:
    """Every tenant's worst-case latency (s) at each stage under ``priorities``."""
    flows = {(t.name, s): t.flow(s, priorities[t.name][s]) for t in tenants for s in t.stages}
    out: dict[str, dict[Stage, float]] = {}
    for t in tenants:
        out[t.name] = {}
        for s in t.stages:
            target = flows[(t.name, s)]
            others = [f for key, f in flows.items() if key != (t.name, s)]
            out[t.name][s] = lp_delay(target, others, devices=devices) + _store_and_forward(t, s)
    return out


def _store_and_forward(tenant: PmTenant, stage: Stage) -> float:
    """What the fluid LP does not see of packets: a message's last packet crosses every link
    after the first once more (one packet time each; ``max_request_s`` is a packet's time on a
    network stage). Zero at a one-queue stage (a device)."""
    return (len(tenant.queues[stage]) - 1) * float(tenant.max_request_s.get(stage, 0.0))


def path_latency(
    tenants: Sequence[PmTenant],
    priorities: Priorities,
    target: PmTenant,
    devices: Devices | None = None,
) -> float:
    """``target``'s worst-case latency (s) by one LP over all its stages
    (:func:`~tailbound.dnc.lp.path_delay`), plus the packets' store-and-forward terms of its
    network stages; the other tenants interfere stage by stage."""
    if not target.stages:
        return 0.0
    others = [
        t.flow(st, priorities[t.name][st])
        for t in tenants
        if t.name != target.name
        for st in t.stages
    ]
    fluid = path_delay(target.path(priorities[target.name]), others, devices=devices)
    return fluid + sum(_store_and_forward(target, s) for s in target.stages)


def end_to_end(
    tenants: Sequence[PmTenant],
    priorities: Priorities,
    target: PmTenant,
    per_stage: Mapping[Stage, float],
    devices: Devices | None = None,
    analysis: Analysis = "tighter",
) -> float:
    """``target``'s end-to-end bound (s) by ``analysis`` (module docstring), given its
    per-stage bounds ``per_stage``."""
    if analysis not in ANALYSES:
        raise ValueError(f"PriorityMeister analysis must be one of {ANALYSES}, got {analysis!r}")
    summed = float(sum(per_stage.values()))
    if analysis == "stages":
        return summed
    path = path_latency(tenants, priorities, target, devices)
    return path if analysis == "path" else min(summed, path)


def latencies(
    tenants: Sequence[PmTenant],
    priorities: Priorities,
    devices: Devices | None = None,
    analysis: Analysis = "tighter",
) -> dict[str, float]:
    """Every tenant's worst-case end-to-end latency (s), by ``analysis``."""
    per_stage = stage_latencies(tenants, priorities, devices)
    return {
        t.name: end_to_end(tenants, priorities, t, per_stage[t.name], devices, analysis)
        for t in tenants
    }


@dataclass(frozen=True)
class Prioritized:
    """The prioritizer's result: priorities (0 = highest) and each tenant's latency bound."""

    priorities: Priorities
    bounds: dict[str, float]
    stage_bounds: dict[str, dict[Stage, float]]

    def meets(self, tenants: Sequence[PmTenant]) -> dict[str, bool]:
        """Per tenant: whether its analysed bound meets its SLO."""
        return {t.name: self.bounds[t.name] <= t.slo_s for t in tenants}

    def feasible(self, tenants: Sequence[PmTenant]) -> bool:
        """Whether every tenant's bound meets its SLO: only then does the order guarantee the
        SLOs (thesis §3.2.2: the prioritizer searches for an order that "can meet tail latency
        SLOs"; when its search ends with violations it has found none)."""
        return all(self.meets(tenants).values())

    def violations(self, tenants: Sequence[PmTenant]) -> dict[str, float]:
        """Seconds by which each tenant whose bound exceeds its SLO misses it."""
        return {
            t.name: self.bounds[t.name] - t.slo_s for t in tenants if self.bounds[t.name] > t.slo_s
        }


def _evaluate(
    tenants: Sequence[PmTenant],
    order: Mapping[Stage, list[str]],
    target: PmTenant,
    devices: Devices | None = None,
) -> dict[Stage, float]:
    """``target``'s per-stage latency when, at each stage, the tenants already assigned
    (``order[stage]``, lowest first) are below every unassigned tenant, and ``target`` (if not
    yet assigned at a stage) is the lowest of the unassigned ones."""
    prio = _priorities(tenants, order, lowest=target.name)
    return stage_latencies_of(tenants, prio, target, devices)


def stage_latencies_of(
    tenants: Sequence[PmTenant],
    priorities: Priorities,
    target: PmTenant,
    devices: Devices | None = None,
) -> dict[Stage, float]:
    """``target``'s worst-case latency at each of its stages under ``priorities``."""
    out = {}
    for s in target.stages:
        me = target.flow(s, priorities[target.name][s])
        others = [
            t.flow(st, priorities[t.name][st])
            for t in tenants
            for st in t.stages
            if not (t.name == target.name and st == s)
        ]
        out[s] = lp_delay(me, others, devices=devices) + _store_and_forward(target, s)
    return out


def _priorities(
    tenants: Sequence[PmTenant], order: Mapping[Stage, list[str]], lowest: str | None = None
) -> Priorities:
    """Numeric priorities from the bottom-up assignment: at each stage the assigned tenants in
    ``order[stage]`` (lowest first) take the largest numbers; unassigned ones share the level
    above them, except ``lowest``, which goes just below them."""
    n = len(tenants)
    prio: Priorities = {t.name: {} for t in tenants}
    for s in STORAGE_PATH:
        assigned = order.get(s, [])
        for rank, name in enumerate(assigned):
            prio[name][s] = 2 * n + 2 - rank
        for t in tenants:
            if s in t.stages and t.name not in assigned:
                prio[t.name][s] = 0 if t.name != lowest else 1
    return prio


def _compact(priorities: Priorities) -> Priorities:
    """Renumber each stage's levels to 0, 1, 2, … keeping their order."""
    out: Priorities = {n: {} for n in priorities}
    for s in STORAGE_PATH:
        levels = sorted({p[s] for p in priorities.values() if s in p})
        for n, p in priorities.items():
            if s in p:
                out[n][s] = levels.index(p[s])
    return out


def limit_levels(priorities: Priorities, levels: int) -> Priorities:
    """``priorities`` with every level past ``levels − 1`` at each stage merged into level
    ``levels − 1`` (the least important tenants share the lowest level an enforcer has: HTB has
    8). Sound for the LP analysis, where a flow of the same level interferes (FIFO in a level).

    >>> limit_levels({"a": {Stage.STORAGE: 0}, "b": {Stage.STORAGE: 5}}, 2)["b"]
    {<Stage.STORAGE: 'storage'>: 1}
    """
    if levels < 1:
        raise ValueError(f"at least one priority level is needed, got {levels}")
    return {n: {s: min(p, levels - 1) for s, p in v.items()} for n, v in priorities.items()}


def _result(
    tenants: Sequence[PmTenant],
    prio: Priorities,
    levels: int,
    devices: Devices | None,
    analysis: Analysis,
) -> Prioritized:
    """The bounds of ``tenants`` under ``prio`` capped at ``levels`` levels."""
    prio = limit_levels(prio, levels)
    stage_bounds = stage_latencies(tenants, prio, devices)
    bounds = {
        t.name: end_to_end(tenants, prio, t, stage_bounds[t.name], devices, analysis)
        for t in tenants
    }
    return Prioritized(prio, bounds, stage_bounds)


def prioritize(
    tenants: Sequence[PmTenant],
    levels: int = PRIORITY_LEVELS,
    devices: Devices | None = None,
    analysis: Analysis = "tighter",
) -> Prioritized:
    """The prioritizer of thesis §3.2.2, within ``levels`` priority levels per stage.

    Repeatedly: every unfinished tenant is tried at the lowest priority among the unfinished
    ones at each stage it is not yet assigned; one that meets its SLO there (a tenant without an
    SLO, ``slo_s = inf``, always does and goes lowest first) is assigned that
    level at those stages (*choice*: one at a time, the largest slack first, so each gets its
    own level). When none does, the tenant with the smallest violation (latency − SLO) is
    assigned the lowest level only at its stage of smallest latency. Assigned levels are never
    revisited; tenants that cannot meet their SLO end up with the levels this leaves them.
    *Choice* (the thesis assumes as many levels as tenants): past ``levels`` levels at a stage
    the least important tenants share the lowest (:func:`limit_levels`), and the bounds are
    computed for the levels enforced. A tenant's latency is its end-to-end bound by ``analysis``
    (module docstring); the per-stage split (step 3) uses its per-stage bounds.

    Examples
    --------
    Two tenants on one device: the loose-SLO one goes lowest.

    >>> q = {Stage.STORAGE: ("d",)}
    >>> a = PmTenant("a", 0.02, q, {Stage.STORAGE: ((0.2, 0.005),)}, {})
    >>> b = PmTenant("b", 0.5, q, {Stage.STORAGE: ((0.5, 0.05),)}, {})
    >>> r = prioritize([a, b])
    >>> r.priorities["a"][Stage.STORAGE], r.priorities["b"][Stage.STORAGE]
    (0, 1)
    """
    order: dict[Stage, list[str]] = {s: [] for s in STORAGE_PATH}
    todo = {t.name: t for t in tenants}
    pending = {t.name: set(t.stages) for t in tenants}
    while todo:
        # a tenant without a latency SLO (a throughput tenant) meets it anywhere: no analysis
        unbounded = [n for n, t in todo.items() if t.slo_s == float("inf")]
        results = {
            n: _evaluate(tenants, order, t, devices)
            if n not in unbounded
            else {s: 0.0 for s in t.stages}
            for n, t in todo.items()
        }
        totals = {
            n: 0.0
            if n in unbounded
            else end_to_end(
                tenants,
                _priorities(tenants, order, lowest=n),
                todo[n],
                results[n],
                devices,
                analysis,
            )
            for n in todo
        }
        slack = {n: float("inf") if n in unbounded else todo[n].slo_s - totals[n] for n in todo}
        fits = [n for n in todo if slack[n] >= 0]
        if fits:
            name = max(fits, key=lambda n: (slack[n], n))
            for s in sorted(pending[name], key=STORAGE_PATH.index):
                order[s].append(name)
            pending[name] = set()
        else:
            name = max(todo, key=lambda n: (slack[n], n))  # smallest violation
            stage = min(pending[name], key=lambda s: (results[name][s], STORAGE_PATH.index(s)))
            order[stage].append(name)
            pending[name].discard(stage)
        if not pending[name]:
            del todo[name]
    return _result(tenants, _compact(_priorities(tenants, order)), levels, devices, analysis)


def by_slo(
    tenants: Sequence[PmTenant],
    levels: int = PRIORITY_LEVELS,
    devices: Devices | None = None,
    analysis: Analysis = "tighter",
) -> Prioritized:
    """The ``bySLO`` baseline (thesis §3.3.1): the tightest SLO gets the highest priority at
    every stage; equal SLOs share a level, and past ``levels`` levels the loosest share the
    lowest. Bounds by the same analysis.

    >>> q = {Stage.STORAGE: ("d",)}
    >>> a = PmTenant("a", 0.5, q, {Stage.STORAGE: ((0.2, 0.005),)}, {})
    >>> b = PmTenant("b", 0.02, q, {Stage.STORAGE: ((0.5, 0.05),)}, {})
    >>> by_slo([a, b]).priorities["b"][Stage.STORAGE]
    0
    """
    slos = sorted({t.slo_s for t in tenants})
    prio: Priorities = {t.name: {s: slos.index(t.slo_s) for s in t.stages} for t in tenants}
    return _result(tenants, prio, levels, devices, analysis)
