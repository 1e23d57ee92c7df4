"""PriorityMeister on a placed :class:`~tailbound.plan.Plan`: build each tenant's queues and
buckets from its trace, run the prioritizer (or bySLO) on every group of tenants that share a
queue, and write priorities, every bucket and the bounds back into a plan.

Queue names are the plan's own (:func:`tailbound.plan.stage_queues`: ``<client>.egress``,
``<server>.ingress``, ``<server>.<device>``, ``<server>.egress``, ``<client>.ingress``), so the
analysis, the replay and the enforcers describe the same system. The plan enforces PriorityMeister's
buckets in demotion mode (thesis §2.2.1: traffic over its limits goes on below every level).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from tailbound.characterize import rb_curve
from tailbound.dnc.device import LOW_PRIORITY_MPL, DeviceLimits
from tailbound.plan import (
    PRIORITY_LEVELS,
    Bound,
    Discipline,
    Plan,
    StageLimit,
    TenantPlan,
    device_name,
    stage_queues,
)
from tailbound.policies.prioritymeister import (
    Analysis,
    Devices,
    PmTenant,
    Prioritized,
    by_slo,
    path_limits,
    prioritize,
    rate_limits,
)
from tailbound.policies.registry import build
from tailbound.profiles import SsdProfile, stage_model
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.trace import Trace

#: The analysis behind the bounds: the LP of thesis §3.2.3 (:mod:`tailbound.dnc.lp`), worst case.
ANALYSIS = "pm-lp"


def plan_tenant(
    tenant: TenantPlan,
    trace: Trace,
    *,
    profile: SsdProfile,
    link_bandwidth_bytes_per_s: float,
    k: int = 3,
    mtu_bytes: float = 1500.0,
) -> PmTenant:
    """``tenant`` as PriorityMeister sees it: the plan's queues, ``k`` buckets per stage from its
    trace's r-b curve, its largest request per stage (one packet on a link)."""
    queues = stage_queues(tenant)
    buckets: dict[Stage, tuple[tuple[float, float], ...]] = {}
    biggest: dict[Stage, float] = {}
    models: dict[Stage, object] = {}
    for stage in STORAGE_PATH:
        model = stage_model(
            stage, link_bandwidth_bytes_per_s=link_bandwidth_bytes_per_s, profile=profile
        )
        models[stage] = model
        buckets[stage] = rate_limits(rb_curve(trace, model), k)
        if stage == Stage.STORAGE:
            biggest[stage] = float(model.tokens(trace).max())
        else:
            biggest[stage] = mtu_bytes / link_bandwidth_bytes_per_s
    on_path = {s: m for s, m in models.items() if queues.get(s)}
    path, work = path_limits(trace, on_path, k)  # for the end-to-end LP
    return PmTenant(tenant.name, tenant.slo_s, queues, buckets, biggest, path, work)


def groups(tenants: Sequence[PmTenant]) -> list[list[PmTenant]]:
    """Tenants partitioned so that two tenants sharing any queue are in the same group (they
    cannot affect each other otherwise), in input order."""
    parent = list(range(len(tenants)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, t in enumerate(tenants):
        for qs in t.queues.values():
            for q in qs:
                if q in owner:
                    parent[find(i)] = find(owner[q])
                else:
                    owner[q] = i
    out: dict[int, list[PmTenant]] = {}
    for i, t in enumerate(tenants):
        out.setdefault(find(i), []).append(t)
    return list(out.values())


#: A prioritization policy: placed tenants, the number of levels and the devices' limits in,
#: per-stage priorities, buckets and LP bounds out (:func:`prioritize`, :func:`by_slo`).
Prioritizer = Callable[..., Prioritized]


def prioritymeister() -> Prioritizer:
    """PriorityMeister's prioritizer (thesis §3.2.2; the registry's ``prioritymeister``)."""
    return prioritize


def byslo() -> Prioritizer:
    """Priorities by SLO, the tightest first (thesis §3.3.1; the registry's ``byslo``)."""
    return by_slo


def prioritize_all(
    tenants: Sequence[PmTenant],
    policy: str = "prioritymeister",
    levels: int = PRIORITY_LEVELS,
    devices: Devices | None = None,
    analysis: Analysis = "tighter",
) -> Prioritized:
    """The prioritization policy ``policy`` (a name of the registry's ``prioritization`` kind:
    ``prioritymeister`` or ``byslo``) on each group of :func:`groups`, merged; ``devices`` are
    the device queues with several requests in service (:func:`plan_devices`); ``analysis``
    the end-to-end bound (``prioritymeister.ANALYSES``)."""
    run = build(policy, "prioritization")
    priorities: dict[str, dict[Stage, int]] = {}
    bounds: dict[str, float] = {}
    stage_bounds: dict[str, dict[Stage, float]] = {}
    for group in groups(tenants):
        r = run(group, levels, devices, analysis=analysis)
        priorities |= r.priorities
        bounds |= r.bounds
        stage_bounds |= r.stage_bounds
    return Prioritized(priorities, bounds, stage_bounds)


def stage_limits(
    buckets: Mapping[Stage, Sequence[tuple[float, float]]], link_bytes_per_s: float
) -> tuple[dict[Stage, StageLimit], dict[Stage, tuple[StageLimit, ...]]]:
    """A tenant's buckets per stage as the plan's limits: the first (lowest-rate) bucket as the
    primary limit, the others as extra limits; network stages with their capacity in bytes/s.
    Stages without buckets are left out (unlimited)."""
    limits: dict[Stage, StageLimit] = {}
    extra: dict[Stage, tuple[StageLimit, ...]] = {}
    for stage, bs in buckets.items():
        if bs:
            capacity = None if stage == Stage.STORAGE else link_bytes_per_s
            ls = [StageLimit(r, b, capacity) for r, b in bs]
            limits[stage] = ls[0]
            if ls[1:]:
                extra[stage] = tuple(ls[1:])
    return limits, extra


def prioritized_plan(
    plan: Plan,
    tenants: Sequence[PmTenant],
    result: Prioritized,
    *,
    link_bandwidth_bytes_per_s: float,
    policy: str,
    meta: Mapping[str, object] | None = None,
) -> Plan:
    """``plan`` with each tenant's priorities, buckets (the lowest-rate bucket as the primary
    limit, the others as extra limits) and LP bound."""
    by_name = {t.name: t for t in tenants}
    out = []
    for tp in plan.tenants:
        t = by_name[tp.name]
        limits, extra = stage_limits(t.buckets, link_bandwidth_bytes_per_s)
        out.append(
            dataclasses.replace(
                tp,
                priority=dict(result.priorities[tp.name]),
                limits=limits,
                extra_limits=extra,
                bound=Bound(result.bounds[tp.name], ANALYSIS, stages=result.stage_bounds[tp.name]),
            )
        )
    return dataclasses.replace(
        plan,
        policy=policy,
        tenants=out,
        meta={**plan.meta, **dict(meta or {})},
        disciplines=dict.fromkeys(STORAGE_PATH, Discipline("priority", "demotion")),
        # the analysis' dispatch rule: nothing less important joins a request in service
        dispatch=dataclasses.replace(plan.dispatch, low_priority_mpl=LOW_PRIORITY_MPL),
    )


def plan_devices(plan: Plan, profile: SsdProfile) -> Devices:
    """Every device queue of ``plan`` with its limits under the plan's dispatch rule: the
    profile's MPLs and byte limits (or the plan's), and the plan's cap on low-priority work."""
    rule = plan.dispatch
    base = DeviceLimits.of(profile, rule.low_priority_work_s)
    limits = dataclasses.replace(
        base,
        read_mpl=rule.read_mpl if rule.read_mpl is not None else base.read_mpl,
        write_mpl=rule.write_mpl if rule.write_mpl is not None else base.write_mpl,
    )
    return {device_name(t): limits for t in plan.tenants if t.device is not None}
