"""A :class:`~tailbound.plan.Plan` as ``tailbound enforce net`` realises it: each tenant's
network buckets in bytes on the wire, the Plan with those buckets (for the simulator), and each
tenant's worst-case network bound under the discipline HTB realises (docs/enforcement.md).

This module only maps the Plan onto the analysis: the byte arithmetic is
:mod:`tailbound.profiles.wire`'s, the bound :mod:`tailbound.dnc.htb`'s (strict priority between
levels, round robin within one, several buckets per tenant).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from tailbound.dnc.curves import TokenBucket
from tailbound.dnc.htb import HtbFlow, path_delays, queue_delays
from tailbound.plan import Plan, TenantPlan, stage_queues
from tailbound.profiles.wire import MTU, Bucket, buckets_on_wire
from tailbound.stages import Stage

NETWORK_STAGES = (Stage.NET_IN, Stage.NET_OUT)
#: Bytes an HTB queue may send before any tenant regardless of its level: the packet in
#: transmission (not preempted) and the rare green packet of a lower class (one every
#: ``MTU/ASSURED_RATE`` s, :data:`tailbound.enforce.net.ASSURED_RATE`).
BLOCKING = 2 * MTU


def message_buckets(t: TenantPlan, stage: Stage, link_rate: float) -> list[Bucket]:
    """``t``'s buckets at a network ``stage`` in the token model's message bytes (rate bytes/s,
    burst bytes), the primary first: each :class:`~tailbound.plan.StageLimit` times its
    capacity (the ``link_rate`` when the Plan gives none). Empty without buckets there."""
    if stage not in t.limits:
        return []
    out = []
    for lim in (t.limits[stage], *t.extra_limits.get(stage, ())):
        capacity = lim.capacity_per_s or link_rate
        out.append((lim.rate * capacity, lim.bucket_s * capacity))
    return out


def wire_buckets(t: TenantPlan, stage: Stage, link_rate: float) -> list[Bucket]:
    """``t``'s buckets at a network ``stage`` in bytes on the wire (rate bytes/s, burst bytes):
    what its HTB class at the sender carries and is charged for, its own messages' buckets with
    headers plus the other direction's ACKs (:func:`tailbound.profiles.wire.buckets_on_wire`).

    >>> from tailbound.model import Slo
    >>> from tailbound.plan import Bound, StageLimit
    >>> from tailbound.stages import NETWORK_PATH
    >>> lim = {Stage.NET_IN: StageLimit(0.01, 1e-4, 1e7), Stage.NET_OUT: StageLimit(0.1, 1e-3, 1e7)}
    >>> level = dict.fromkeys(NETWORK_PATH, 0)
    >>> t = TenantPlan("T", Slo(1, 1), "s", None, level, lim, Bound(1, "x"))
    >>> [(round(r), round(b)) for r, b in wire_buckets(t, Stage.NET_IN, 1e7)]
    [(216138, 2161)]
    """
    other_stage = Stage.NET_OUT if stage is Stage.NET_IN else Stage.NET_IN
    other = message_buckets(t, other_stage, link_rate)
    return buckets_on_wire(message_buckets(t, stage, link_rate), other[0] if other else None)


def realised_plan(plan: Plan, link_rate: float) -> Plan:
    """``plan`` with every network bucket replaced by the one ``tailbound enforce net``
    enforces (:func:`wire_buckets`), as a share of the ``link_rate`` (rates capped at the link):
    the Plan as enforced, for the simulator. A simulator whose links run at the rate left to
    the messages (``link_rate · MSS / (MSS + HEADER)``) then sees every bucket scaled as the
    link is, so a tenant is shaped or demoted against the same budget as on the wire."""
    tenants = []
    for t in plan.tenants:
        limits, extra = dict(t.limits), dict(t.extra_limits)
        for stage in NETWORK_STAGES:
            wire = wire_buckets(t, stage, link_rate)
            if not wire:
                continue
            as_limits = [
                dataclasses.replace(
                    t.limits[stage],
                    rate=min(r / link_rate, 1.0),
                    bucket_s=b / link_rate,
                    capacity_per_s=float(link_rate),
                )
                for r, b in wire
            ]
            limits[stage] = as_limits[0]
            if stage in extra:
                extra[stage] = tuple(as_limits[1:])
        tenants.append(dataclasses.replace(t, limits=limits, extra_limits=extra))
    return dataclasses.replace(plan, tenants=tenants)


def _flow(t: TenantPlan, stage: Stage, link_rate: float) -> HtbFlow[tuple[str, Stage]]:
    """``t`` at ``stage`` as a flow of the analysis: its level there, its wire buckets
    (``None`` without buckets at the stage) and the queues of the stage (the sender's egress,
    the receiver's side: :func:`tailbound.plan.stage_queues`)."""
    level = t.priority.get(stage)
    assert level is not None
    wire = wire_buckets(t, stage, link_rate)
    buckets = tuple(TokenBucket(r, b) for r, b in wire) if wire else None
    path = stage_queues(t)[stage] if stage in t.stages else ()
    return HtbFlow((t.name, stage), level, buckets, path)


def htb_bounds(
    plan: Plan, stage: Stage, link_rate: float, tenants: Sequence[TenantPlan] | None = None
) -> dict[str, float]:
    """The worst-case delay (s) at one queue of ``stage`` under the realised discipline, per
    tenant with a level there (of ``tenants``, default the Plan's): non-preemptive strict
    priority between levels and HTB's packet round robin within one, every queue at
    ``link_rate`` bytes/s with :data:`BLOCKING` (:func:`tailbound.dnc.htb.queue_delays`). With
    one bucket each,
    ``(Σ_{j: p_j ≤ p} b_j + 2·MTU) / (C − Σ_{j: p_j < p} r_j − Σ_{j ≠ i: p_j = p} r_j)``
    (wire buckets in bytes, C the link rate). Tenants without buckets at the stage make every
    tenant at or below their level unbounded."""
    flows = [
        _flow(t, stage, link_rate)
        for t in (tenants if tenants is not None else plan.tenants)
        if t.priority.get(stage) is not None
    ]
    return {name: d for (name, _), d in queue_delays(flows, link_rate, BLOCKING).items()}


def network_bounds(plan: Plan, link_rate: float) -> dict[str, float]:
    """Per tenant with a level at every network stage, the worst-case delay (s) over its network
    stages under the discipline ``tailbound enforce net`` realises, every link at
    ``link_rate`` bytes/s. Each stage crosses two queues (:func:`tailbound.plan.stage_queues`):
    the sender's egress, shared with the tenants sent from the same host, and the receiver's
    side (the switch port towards it, or its IFB with ``--ingress``), shared with the tenants
    received by the same host; at the second a tenant's burst has grown by ``r·d`` with ``d`` its
    bound at the first (its output conforms to ``(r, b + r·d)``). A host that sends at both
    stages (a client of one tenant and the server of another) has one egress, shared by both
    (:func:`tailbound.dnc.htb.path_delays`)."""
    flows = [
        _flow(t, stage, link_rate)
        for t in plan.tenants
        for stage in NETWORK_STAGES
        if stage in t.stages and t.priority.get(stage) is not None
    ]
    delays = path_delays(flows, link_rate, BLOCKING)
    out: dict[str, float] = {}
    for t in plan.tenants:
        stages = [s for s in t.stages if s in NETWORK_STAGES]
        if any(t.priority.get(s) is None for s in stages):
            continue
        out[t.name] = sum((delays[(t.name, s)] for s in stages), 0.0)
    return out
