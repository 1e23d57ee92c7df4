"""Arrival-order admission control (thesis §4.2, SNC-Meister's admission loop), and its Plan.

Tenants arrive one at a time. Priorities are by SLO (tightest first) over the admitted tenants and
the newcomer. The newcomer is admitted if, with it added, the policy predicts that it and every
admitted tenant meet their SLOs; otherwise it is rejected (it may run as best-effort traffic at
the lowest priority, which does not affect the admitted tenants).

An :class:`AdmissionPolicy` is a *bound function* (a list of tenants → one
:class:`~tailbound.snc.analysis.TenantBound` each) that also says what it enforces for a set of
tenants (:meth:`~AdmissionPolicy.configure`: a level and token buckets per direction). SNC-Meister
(:class:`SncPolicy`), the DNC baselines (:mod:`tailbound.policies.dnc_baselines`) and the measured
floors (:mod:`tailbound.policies.floors`) are such policies, so they plug in unchanged.

Checking every admitted tenant (not only those sharing a queue with the newcomer, as the reference
implementation does) gives the same decisions: a tenant sharing no queue, directly or through the
flows it competes with, has an unchanged bound.

A policy may also offer ``newcomer_bound(trial)``: the last tenant's bound alone, computed
without the others'. When it misses the newcomer's SLO the newcomer is rejected at once (the same
decision, since its bound is the same either way; ``violated`` then names only the newcomer),
which saves computing every admitted tenant's bound for the many arrivals a full system rejects.

:func:`admission_plan` and :func:`bounds_plan` turn the decisions (``tailbound admit``) or the
bounds of a fixed set (``tailbound bound``) into the :class:`~tailbound.plan.Plan` hand-off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tailbound.model import Tenant
from tailbound.plan import (
    Bound,
    Discipline,
    DispatchRule,
    Plan,
    Rejection,
    StageLimit,
    TenantPlan,
)
from tailbound.snc.analysis import BoundFunction, TenantBound
from tailbound.snc.tenants import priorities_by_slo
from tailbound.stages import STORAGE_PATH, Stage

Bucket = tuple[float, float]
#: A direction of a tenant's network traffic and the plan stage it is.
DIRECTION_STAGE = {"in": Stage.NET_IN, "out": Stage.NET_OUT}


@dataclass(frozen=True)
class Wire:
    """The packet-level facts a fluid analysis adds and a replay uses: MTU (bytes) and
    propagation per hop (s)."""

    mtu_bytes: float = 1500.0
    propagation_s: float = 5e-6


#: The packet-level facts of the thesis' network (1500-byte packets, 5 µs per hop).
WIRE = Wire()


@dataclass(frozen=True)
class Configured:
    """What a policy enforces for one tenant: its level (0 is the most important) and token
    buckets per direction (``"in"``, ``"out"``; none: unlimited), and the pacing delay (s) its
    own buckets add per direction (end-host queueing, part of its bound)."""

    level: int
    buckets: Mapping[str, tuple[Bucket, ...]] = field(default_factory=dict)
    pacing: Mapping[str, float] = field(default_factory=dict)


class AdmissionPolicy(Protocol):
    """A bound function that also says what it enforces (module docstring)."""

    #: The analysis whose bounds it returns (``snc-meister``, ``dnc``, ...).
    analysis: str
    #: What its rate limiters do with traffic over the limits: ``shaping`` or ``demotion``.
    mode: str
    #: Whether its bounds hold for every request (DNC) rather than at the SLO percentile (SNC).
    worst_case: bool

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]: ...

    def configure(self, tenants: Sequence[Tenant]) -> list[Configured]: ...


class SncPolicy:
    """An SNC bound function as an admission policy: it enforces priorities by SLO only (no rate
    limits: SNC-Meister's enforcement, thesis §4.2). ``newcomer_bound`` is kept when the bound
    function has one."""

    mode = "shaping"
    worst_case = False

    def __init__(self, bounds: BoundFunction, analysis: str = "snc-meister") -> None:
        self.bounds = bounds
        self.analysis = analysis
        if hasattr(bounds, "newcomer_bound"):
            self.newcomer_bound = bounds.newcomer_bound

    def __call__(self, tenants: Sequence[Tenant]) -> list[TenantBound]:
        return self.bounds(tenants)

    def configure(self, tenants: Sequence[Tenant]) -> list[Configured]:
        return [Configured(p) for p in priorities_by_slo([t.slo_s for t in tenants])]


@dataclass(frozen=True)
class Decision:
    """The decision on one arriving tenant and the bounds it was based on."""

    tenant: Tenant
    admitted: bool
    bound: TenantBound
    violated: tuple[str, ...]  # tenants that would miss their SLO (empty when admitted)


def admit_in_order(tenants: Sequence[Tenant], bounds: BoundFunction) -> list[Decision]:
    """Decide on ``tenants`` in arrival order; returns one :class:`Decision` each."""
    admitted: list[Tenant] = []
    decisions = []
    for tenant in tenants:
        decision, _ = decide(admitted, tenant, bounds)
        if decision.admitted:
            admitted.append(tenant)
        decisions.append(decision)
    return decisions


def decide(
    admitted: Sequence[Tenant], tenant: Tenant, bounds: BoundFunction
) -> tuple[Decision, list[TenantBound] | None]:
    """The decision on ``tenant`` arriving after ``admitted``, and the bounds of every tenant
    with it present (``None`` when the newcomer screen rejected it alone): one step of
    :func:`admit_in_order`, which the control plane takes one arrival at a time."""
    return decide_on([*admitted, tenant], bounds)


def decide_on(
    trial: Sequence[Tenant], bounds: BoundFunction
) -> tuple[Decision, list[TenantBound] | None]:
    """:func:`decide` of ``trial[-1]`` arriving after ``trial[:-1]``, ``bounds`` called on
    ``trial`` itself (e.g. a :class:`~tailbound.snc.incremental.Part`, the control plane's
    re-analysis of the newcomer's part of the admitted set)."""
    tenant = trial[-1]
    screen = getattr(bounds, "newcomer_bound", None)
    if screen is not None:
        alone = screen(trial)
        if not alone.meets_slo:
            return Decision(tenant, False, alone, (tenant.name,)), None
    results = bounds(trial)
    violated = tuple(r.name for r in results if not r.meets_slo)
    return Decision(tenant, not violated, results[-1], violated), results


# ------------------------------------------------------------------------------ plans
def to_bound(b: TenantBound, analysis: str, worst_case: bool) -> Bound:
    """A tenant's :class:`TenantBound` as the plan's :class:`Bound` (``worst_case``: the
    analysis bounds every request, percentile 1)."""
    stages = {Stage.NET_IN: b.latency_in_s, Stage.NET_OUT: b.latency_out_s}
    if b.latency_storage_s is not None:
        stages[Stage.STORAGE] = b.latency_storage_s
    return Bound(
        latency_s=b.latency_s,
        analysis=analysis,
        percentile=1.0 if worst_case else b.slo.percentile,
        stages={s: stages[s] for s in STORAGE_PATH if s in stages},
        alone_s=b.latency_alone_s,
        joint_s=b.latency_joint_s,
    )


def network_plan(
    policy: str,
    tenants: Sequence[Tenant],
    configured: Sequence[Configured],
    *,
    link_bytes_per_s: float,
    bounds: Sequence[Bound] | None = None,
    mode: str = "shaping",
    rejected: Sequence[Rejection] = (),
    network_only: bool = False,
    meta: Mapping[str, object] | None = None,
) -> Plan:
    """The plan of ``tenants`` on a full-bisection network, each enforced as ``configured`` (its
    level at every stage it crosses, its buckets at the sender of each direction) with rate
    limiters in ``mode``. A tenant with a device crosses it too unless ``network_only`` (the
    measured floors replay the network path only). ``bounds`` default to none found (``inf``)."""
    plans = []
    for i, (t, c) in enumerate(zip(tenants, configured, strict=True)):
        assert t.server is not None  # checked on loading (snc.tenants.check_tenants)
        device = None if network_only else t.device
        stages = STORAGE_PATH if device is not None else tuple(DIRECTION_STAGE.values())
        limits: dict[Stage, StageLimit] = {}
        extra: dict[Stage, tuple[StageLimit, ...]] = {}
        for direction, buckets in c.buckets.items():
            if buckets:
                stage = DIRECTION_STAGE[direction]
                ls = [StageLimit(float(r), float(b), link_bytes_per_s) for r, b in buckets]
                limits[stage], extra[stage] = ls[0], tuple(ls[1:])
        plans.append(
            TenantPlan(
                name=t.name,
                slo=t.slo,
                server=t.server,
                device=device,
                client_host=t.client_host,
                client_vm=t.client_vm,
                priority=dict.fromkeys(stages, c.level),
                limits=limits,
                extra_limits={s: e for s, e in extra.items() if e},
                bound=bounds[i] if bounds is not None else Bound(float("inf"), policy),
            )
        )
    servers = {t.server for t in plans}
    devices = any(t.device is not None for t in plans)
    dispatch = DispatchRule()
    if devices:
        # at a device, the worst-case analyses assume the thesis' rule (docs/dnc.md); imported
        # here: the DNC device model (and numpy, which the DNC package imports) is not needed to
        # bound network-only tenants, and importing it cost ~10 ms of `tailbound bound`'s cold
        # start (~0.1 s with numpy)
        from tailbound.dnc.device import LOW_PRIORITY_MPL

        dispatch = DispatchRule(low_priority_mpl=LOW_PRIORITY_MPL)
    return Plan(
        policy=policy,
        servers_used=len(servers),
        tenants=plans,
        rejected=list(rejected),
        meta=dict(meta or {}),
        disciplines=dict.fromkeys(STORAGE_PATH, Discipline("priority", mode)),
        dispatch=dispatch,
    )


def admission_plan(
    name: str,
    policy: AdmissionPolicy,
    decisions: Sequence[Decision],
    *,
    link_bytes_per_s: float,
    meta: Mapping[str, object] | None = None,
) -> Plan:
    """The plan of an admission run: the admitted tenants with what ``policy`` enforces for them
    all together and their bounds with all of them present; each rejected tenant with the bound
    that rejected it and the tenants that would have missed their SLOs."""
    admitted = [d.tenant for d in decisions if d.admitted]
    final = policy(admitted) if admitted else []
    rejected = [
        Rejection(
            d.tenant.name,
            "its SLO would be missed"
            if d.violated == (d.tenant.name,)
            else "admitted tenants' SLOs would be missed",
            d.violated,
            to_bound(d.bound, policy.analysis, policy.worst_case),
        )
        for d in decisions
        if not d.admitted
    ]
    return bounds_plan(
        name,
        policy,
        admitted,
        final,
        link_bytes_per_s=link_bytes_per_s,
        rejected=rejected,
        meta=meta,
    )


def bounds_plan(
    name: str,
    policy: AdmissionPolicy,
    tenants: Sequence[Tenant],
    bounds: Sequence[TenantBound],
    *,
    link_bytes_per_s: float,
    rejected: Sequence[Rejection] = (),
    meta: Mapping[str, object] | None = None,
) -> Plan:
    """The plan of ``tenants`` (``tailbound bound``: a fixed set, whose bounds may miss their
    SLOs), enforced as ``policy`` enforces them together, with their ``bounds``."""
    return network_plan(
        name,
        tenants,
        policy.configure(tenants),
        link_bytes_per_s=link_bytes_per_s,
        bounds=[to_bound(b, policy.analysis, policy.worst_case) for b in bounds],
        mode=policy.mode,
        rejected=rejected,
        meta=meta,
    )
