"""Device schedulers without admission or analysis, and Cake's runtime controller (thesis §3.3.1).

PriorityMeister is compared against policies that schedule the storage device without an
analysis behind them; each turns a placed :class:`~tailbound.plan.Plan` into the plan it enforces
(links FIFO: no network QoS):

- ``ps`` (:func:`proportional_share`, :class:`ProportionalShare`): start-time fair queueing with
  equal weights at the device;
- ``edf`` (:func:`earliest_deadline_first`, :class:`EarliestDeadlineFirst`): earliest deadline
  first at the device, deadline = the tenant's SLO latency (best-effort tenants: a deadline far
  beyond any SLO);
- ``cake`` (:class:`Cake`): proportional share, with the latency tenants' weights adjusted while
  the system runs from the tail latency measured in each period — a *runtime controller*
  (:class:`RuntimeController`), which acts on a running simulator through its control hook (later
  on the gateway).

Their plans carry no bound (``inf``): nothing guarantees an SLO. Each of the three is a
:class:`RuntimeController` (the registry builds them by name): ``plan`` gives the configuration the
system starts with, ``run`` runs it (``ps`` and ``edf`` change nothing while it runs).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tailbound.plan import Bound, Discipline, Plan, StageLimit, device_name, stage_queues
from tailbound.sim.results import percentile
from tailbound.sim.simulator import Simulator
from tailbound.stages import STORAGE_PATH, Stage

#: The stages whose queues are links (Cake's network extension shapes them).
NETWORK_STAGES: tuple[Stage, ...] = (Stage.NET_IN, Stage.NET_OUT)
#: A best-effort tenant's EDF deadline: far beyond any SLO, so it goes last but is not starved.
BEST_EFFORT_DEADLINE_S = 3600.0


def _unanalysed(plan: Plan, name: str, storage: Discipline) -> Plan:
    disciplines = dict.fromkeys(STORAGE_PATH, Discipline("fifo"))
    disciplines[Stage.STORAGE] = storage
    tenants = [
        dataclasses.replace(t, limits={}, extra_limits={}, bound=Bound(math.inf, "none"))
        for t in plan.tenants
    ]
    return dataclasses.replace(plan, policy=name, tenants=tenants, disciplines=disciplines)


def proportional_share(plan: Plan, name: str = "ps") -> Plan:
    """``plan`` with SFQ at every device, equal weights (the weights a plan gives are kept: 1 by
    default), FIFO links, no rate limits."""
    return _unanalysed(plan, name, Discipline("sfq"))


def earliest_deadline_first(
    plan: Plan, best_effort_deadline_s: float = BEST_EFFORT_DEADLINE_S
) -> Plan:
    """``plan`` with EDF at every device (deadline = SLO latency; best-effort tenants
    ``best_effort_deadline_s``), FIFO links, no rate limits."""
    out = _unanalysed(plan, "edf", Discipline("edf"))
    tenants = [
        t
        if t.slo is not None
        else dataclasses.replace(t, deadline_s={Stage.STORAGE: best_effort_deadline_s})
        for t in out.tenants
    ]
    return dataclasses.replace(out, tenants=tenants)


class RuntimeController(Protocol):
    """A policy that changes a running system's scheduler parameters (Cake, Aequitas, PSLO)."""

    def plan(self, placed: Plan) -> Plan:
        """The configuration the system starts with."""
        ...

    def run(self, sim: Simulator, plan: Plan, until_s: float) -> None:
        """Run ``sim`` (built from :meth:`plan`'s plan) to ``until_s``, adjusting it as it goes."""
        ...


@dataclass(frozen=True)
class ProportionalShare:
    """``ps``: :func:`proportional_share`'s plan, left as it is while the system runs."""

    def plan(self, placed: Plan) -> Plan:
        return proportional_share(placed)

    def run(self, sim: Simulator, plan: Plan, until_s: float) -> None:
        sim.run(until_s)


@dataclass(frozen=True)
class EarliestDeadlineFirst:
    """``edf``: :func:`earliest_deadline_first`'s plan (best-effort tenants' deadline
    ``best_effort_deadline_s``, seconds), left as it is while the system runs."""

    best_effort_deadline_s: float = BEST_EFFORT_DEADLINE_S

    def plan(self, placed: Plan) -> Plan:
        return earliest_deadline_first(placed, self.best_effort_deadline_s)

    def run(self, sim: Simulator, plan: Plan, until_s: float) -> None:
        sim.run(until_s)


@dataclass
class Cake:
    """A Cake-style reactive controller (Wang et al., SoCC 2012; thesis §3.3.1).

    Every ``period_s`` each latency tenant's tail at its SLO percentile over the requests that
    finished in the period is compared with its SLO: above it, the tenant's SFQ weight at its
    device is multiplied by ``latency / SLO`` (at most ×2, at most ``max_weight``); below
    ``upper × SLO`` (the SLO-compliance bound the thesis raised) it is decreased by one step of
    10%, never below 1. Best-effort tenants keep weight 1. *Choice*: the thesis extends Cake to
    several latency tenants with one weight each and gives no further parameters; these are
    Cake's proportional rule.

    With ``network`` the same weights also act at the network (the extension the thesis tried
    and dropped, §3.3.1: "since networks do not have an easy way of dynamically updating
    proportional shares, we use rate limits as a proxy for proportional shares [...] a DRF-like
    algorithm to assign rate limits based on the weights"; it found that "this rate limiting
    hurts more than it helps"): every link shared by two or more tenants is divided by weight,
    and each tenant is held, where its network stage starts (the sender shapes, thesis §2.2.2),
    by one token bucket of rate :func:`network_shares` (its least share along the stage, a
    fraction of the link) and size ``burst_s`` seconds of link time, re-set whenever the
    weights change; links keep one priority level for everybody, in
    shaping mode. *Choice*: DRF over one resource (a queue) is weighted max-min fairness; with
    every tenant asking for the whole link (the thesis gives no demand estimate) that is each
    tenant's weighted share; ``burst_s`` (the thesis gives none) is a few large messages.
    """

    period_s: float = 1.0
    upper: float = 0.9
    max_weight: float = 64.0
    network: bool = False
    burst_s: float = 0.005

    def plan(self, placed: Plan) -> Plan:
        out = proportional_share(placed, "cake-net" if self.network else "cake")
        if not self.network:
            return out
        if not self.burst_s > 0:
            raise ValueError(f"Cake's burst_s must be positive, got {self.burst_s}")
        weights = {t.name: t.weight.get(Stage.STORAGE, 1.0) for t in out.tenants}
        shares = network_shares(out, weights)
        tenants = [
            dataclasses.replace(
                t,
                priority={s: (0 if s in NETWORK_STAGES else t.priority.get(s)) for s in t.stages},
                limits={
                    s: StageLimit(shares[s, t.name], self.burst_s)
                    for s in NETWORK_STAGES
                    if (s, t.name) in shares
                },
            )
            for t in out.tenants
        ]
        disciplines = {**out.disciplines}
        for s in NETWORK_STAGES:
            disciplines[s] = Discipline("priority", "shaping")
        return dataclasses.replace(out, tenants=tenants, disciplines=disciplines)

    def run(self, sim: Simulator, plan: Plan, until_s: float) -> None:
        if not self.period_s > 0:
            raise ValueError(f"Cake's period must be positive, got {self.period_s}")
        tenants = [t for t in plan.tenants if t.slo is not None and t.device is not None]
        weights = {t.name: t.weight.get(Stage.STORAGE, 1.0) for t in tenants}
        seen = dict.fromkeys(weights, 0)
        changed = False
        now = 0.0
        while now < until_s:
            now = min(now + self.period_s, until_s)
            sim.run(now)
            results = sim.results()
            for t in tenants:
                assert t.slo is not None
                res = results[t.name]
                done = np.flatnonzero(res.finished)
                fresh = done[seen[t.name] :] if done.size > seen[t.name] else done[:0]
                seen[t.name] = done.size
                if fresh.size == 0:
                    continue
                tail = percentile(res.latency[fresh], t.slo.percentile)
                w = weights[t.name]
                if tail > t.slo.latency_s:
                    w = min(self.max_weight, w * min(2.0, tail / t.slo.latency_s))
                elif tail < self.upper * t.slo.latency_s:
                    w = max(1.0, w * 0.9)
                if w != weights[t.name]:
                    weights[t.name] = w
                    sim.set_param(device_name(t), t.name, "weight", w)
                    changed = True
            if self.network and changed:
                self._set_network(sim, plan, weights)
                changed = False

    def _set_network(self, sim: Simulator, plan: Plan, weights: dict[str, float]) -> None:
        """Every shaped link's buckets from the current weights (best effort: weight 1)."""
        all_weights = {t.name: weights.get(t.name, 1.0) for t in plan.tenants}
        by_name = {t.name: t for t in plan.tenants}
        for (stage, name), rate in network_shares(plan, all_weights).items():
            queue = stage_queues(by_name[name])[stage][0]
            sim.set_param(queue, name, "buckets", [(rate, self.burst_s)])


def cake_network(**options: float) -> Cake:
    """``cake-net``: :class:`Cake` with its weights also acting at the network (``network``)."""
    return Cake(network=True, **options)


def network_shares(plan: Plan, weights: dict[str, float]) -> dict[tuple[Stage, str], float]:
    """Cake's network rate limits (thesis §3.3.1, DRF-like): every link queue a network stage
    of two or more of ``plan``'s tenants crosses is shared by weight — tenant ``i`` gets
    ``w_i / Σ w`` of it over the tenants crossing it (a tenant missing from ``weights`` has weight
    1) — and a tenant's limit at a stage is the least of its shares along the stage's queues (a
    fraction of the link's bandwidth), enforced where the stage starts (the sender shapes, so a
    shared receiver's ingress is protected by every sender's limit). Keyed by (stage, tenant); a
    stage that shares no queue is left unlimited.

    >>> from tailbound.model import Slo
    >>> from tailbound.plan import Bound, TenantPlan
    >>> def t(name, server, client):
    ...     return TenantPlan(name, Slo(0.05), server, "d0", dict.fromkeys(STORAGE_PATH, None),
    ...                       {}, Bound(1.0, "none"), client_host=client)
    >>> shares = network_shares(Plan("p", 1, [t("A", "s0", "c"), t("B", "s0", "c")]), {"A": 3.0})
    >>> shares[Stage.NET_OUT, "A"], shares[Stage.NET_IN, "B"]  # one server, one client: shared
    (0.75, 0.25)
    >>> shares = network_shares(Plan("p", 1, [t("A", "s0", "c"), t("B", "s1", "c")]), {"A": 3.0})
    >>> shares[Stage.NET_OUT, "B"]  # a server each, one client: its ingress is shared
    0.25
    """
    crossing: dict[str, list[str]] = {}
    paths: dict[tuple[Stage, str], tuple[str, ...]] = {}
    for t in plan.tenants:
        queues = stage_queues(t)
        for stage in NETWORK_STAGES:
            for q in queues.get(stage, ()):
                crossing.setdefault(q, []).append(t.name)
                paths[stage, t.name] = queues[stage]
    out: dict[tuple[Stage, str], float] = {}
    for (stage, name), path in paths.items():
        shares = [
            weights.get(name, 1.0) / sum(weights.get(n, 1.0) for n in crossing[q])
            for q in path
            if len(crossing[q]) > 1
        ]
        if shares:
            out[stage, name] = min(shares)
    return out
