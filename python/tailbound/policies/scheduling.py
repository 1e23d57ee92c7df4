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

from tailbound.plan import Bound, Discipline, Plan, device_name
from tailbound.sim.results import percentile
from tailbound.sim.simulator import Simulator
from tailbound.stages import STORAGE_PATH, Stage

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
    """

    period_s: float = 1.0
    upper: float = 0.9
    max_weight: float = 64.0

    def plan(self, placed: Plan) -> Plan:
        return proportional_share(placed, "cake")

    def run(self, sim: Simulator, plan: Plan, until_s: float) -> None:
        if not self.period_s > 0:
            raise ValueError(f"Cake's period must be positive, got {self.period_s}")
        tenants = [t for t in plan.tenants if t.slo is not None and t.device is not None]
        weights = {t.name: t.weight.get(Stage.STORAGE, 1.0) for t in tenants}
        seen = dict.fromkeys(weights, 0)
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
