"""The ``nested-qos`` policy: a tenant's nested classes chosen from its trace, admitted by the
many-workload capacity bound, written as a Plan (Wang's thesis §3.2.3 and §3.3; issue 25,
``docs/nested-qos.md``).

**Parameter selection** (:func:`select_classes`). For a graduated SLO ``(δ_i, f_i)``, ``i = 1 …
n`` (latencies and fractions increasing), and the trace's arrivals ``a_k`` (s) and storage-stage
work ``x_k`` (s of device work, :class:`~tailbound.profiles.tokens.SsdModel`), the thesis'
profiling step for class 1 — "the minimum capacity ``κ_1`` at which fraction ``f_1`` meets
``δ_1``; ``ρ_1 = κ_1``, ``σ_1 = ρ_1 δ_1``" — is applied to every grade:

- ``κ_i`` is the smallest rate (a utilisation of the device: 1 is the device, 2 a device twice
  as fast) at which a FIFO server replaying the trace finishes at least ``⌈f_i · N⌉`` of its
  ``N`` requests within ``δ_i`` of their arrival (request ``k`` at rate ``κ`` finishes
  ``R_k(κ) = max_{j ≤ k} (Σ_{m=j}^{k} x_m / κ − (a_k − a_j))`` after arriving, Lindley's
  recursion; the count within ``δ_i`` is non-decreasing in ``κ``, so ``κ_i`` is found by
  bisection to a relative 1e-12);
- then ``ρ_i = max_{l ≤ i} κ_l`` and ``σ_i = max_{l ≤ i} κ_l δ_l``: the running maxima keep
  the classes nested (``σ``, ``ρ``, ``δ`` non-decreasing outward, as the core requires).

The requests a rate-``κ_i`` FIFO server finishes within ``δ_i`` left at most ``κ_i δ_i`` of
work ahead of them, which is the ``(κ_i δ_i, κ_i)`` envelope; the rule does not prove that the
nested classifier puts ``f_i`` of the requests in classes ``1 … i`` (the thesis profiles, it does
not prove either): ``tailbound verify`` replays the plan and checks each grade
(``tests/policies/test_nested_qos.py`` replays the second half of a trace selected on its first).

**Admission** (:class:`NestedQosPolicy`, ``tailbound admit --policy nested-qos``): tenants
arrive in file order; a tenant is admitted on its ``(server, device)`` if the many-workload
capacity (Lemma 3, :func:`tailbound.dnc.nested.many_workload_capacity`, with the largest request
of the device's tenants as the lemma's one request of slack) of the admitted tenants there and
the newcomer is at most 1 (the device); else it is rejected, naming the capacity it would need.
The Plan schedules the storage stage ``nested`` with one request at the device at a time (MPL 1,
the thesis' model, under which EDF's order is the service order), the network stages FIFO, and
each admitted tenant's classes. Its bound is its innermost grade, ``δ_1`` at ``f_1`` at the
storage stage: at that capacity every request the classifier puts in class 1 meets ``δ_1``
(Lemma 3), and the profiling chose class 1 to hold ``f_1`` of the trace, which is a
prediction, not a proof (the network stages, FIFO, are not analysed).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tailbound.dnc.nested import many_workload_capacity
from tailbound.model import Tenant, TenantSet
from tailbound.plan import (
    Bound,
    Discipline,
    DispatchRule,
    NestedClass,
    Plan,
    Rejection,
    TenantPlan,
)
from tailbound.policies.graduated import HONOURED_BY
from tailbound.policies.graduated import refuse_graduated as refuse_graduated
from tailbound.stages import STORAGE_PATH, Stage

NAME = HONOURED_BY
#: Relative precision of the bisection on ``κ``.
RTOL = 1e-12


def fifo_within(
    time_s: NDArray[np.float64], work_s: NDArray[np.float64], rate: float, delta_s: float
) -> int:
    """How many requests a FIFO server of ``rate`` (device work per second) finishes within
    ``delta_s`` of their arrival, replaying arrivals ``time_s`` (s, non-decreasing) with
    ``work_s`` (s of device work each): Lindley's recursion
    ``f_i = max(f_{i-1}, a_i) + x_i / rate``, unrolled over the whole array (a running
    maximum), so the bisection of :func:`min_rate` costs no Python loop over requests.

    >>> fifo_within(np.array([0.0, 0.0, 0.0]), np.array([1e-3] * 3), 1.0, 2e-3)
    2
    """
    if len(time_s) == 0:
        return 0
    # unrolled: f_i = max_{j<=i} (a_j + (C_i - C_{j-1}) / rate), C the cumulative work
    done = np.cumsum(work_s) / rate
    before = np.concatenate(([0.0], done[:-1]))
    finish = done + np.maximum.accumulate(time_s - before)
    return int(np.count_nonzero(finish - time_s <= delta_s * (1 + 1e-12)))


def min_rate(
    time_s: NDArray[np.float64], work_s: NDArray[np.float64], delta_s: float, fraction: float
) -> float:
    """``κ``: the smallest rate at which a FIFO server finishes ``⌈fraction · N⌉`` of the
    ``N`` requests within ``delta_s`` (module documentation), to a relative :data:`RTOL`.

    >>> round(min_rate(np.array([0.0] * 4), np.array([1e-3] * 4), 2e-3, 0.75), 9)
    1.5
    """
    need = math.ceil(fraction * len(time_s) - 1e-9)
    hi = float(np.max(work_s)) / delta_s  # every request alone within delta
    while fifo_within(time_s, work_s, hi, delta_s) < need:
        hi *= 2
    lo = hi / 2
    while fifo_within(time_s, work_s, lo, delta_s) >= need and lo > 0:
        hi, lo = lo, lo / 2
    while hi - lo > RTOL * hi:
        mid = (lo + hi) / 2
        if fifo_within(time_s, work_s, mid, delta_s) >= need:
            hi = mid
        else:
            lo = mid
    return hi


def select_classes(
    time_s: NDArray[np.float64], work_s: NDArray[np.float64], grades: Sequence[tuple[float, float]]
) -> tuple[NestedClass, ...]:
    """The nested classes ``(σ_i s of work, ρ_i utilisation, δ_i s)`` for ``grades``
    ``(δ_i, f_i)``, innermost first, chosen from a trace by the rule of the module
    documentation. Raises :class:`ValueError` for an empty trace or work not positive."""
    if len(time_s) == 0 or len(time_s) != len(work_s):
        raise ValueError("expected a non-empty trace with one work value per request")
    if not np.all(np.isfinite(work_s)) or np.any(work_s <= 0):
        raise ValueError("every request's work must be positive and finite")
    classes: list[NestedClass] = []
    sigma = rho = 0.0
    for delta, fraction in grades:
        kappa = min_rate(time_s, work_s, delta, fraction)
        rho, sigma = max(rho, kappa), max(sigma, kappa * delta)
        classes.append(NestedClass(sigma, rho, delta))
    return tuple(classes)


@dataclass(frozen=True)
class Decision:
    """One arrival: the tenant, its selected classes, whether it was admitted and the capacity
    (utilisation of its device) its device's admitted tenants would need with it."""

    tenant: Tenant
    classes: tuple[NestedClass, ...]
    admitted: bool
    capacity: float


class NestedQosPolicy:
    """Nested QoS admission (module documentation) of the tenants of ``tset``."""

    analysis = NAME

    def __init__(self, tset: TenantSet) -> None:
        self.tset = tset

    def decide(
        self, traces: Sequence[tuple[NDArray[np.float64], NDArray[np.float64]]]
    ) -> list[Decision]:
        """Admit the tenants in file order, given each one's ``(arrivals s, work s)``."""
        admitted: dict[tuple[str | None, str | None], list[tuple[tuple[NestedClass, ...], float]]]
        admitted = {}
        out = []
        for t, (time_s, work_s) in zip(self.tset.tenants, traces, strict=True):
            grades = t.slo.grades or ((t.slo.latency_s, t.slo.percentile),)
            classes = select_classes(time_s, work_s, grades)
            there = admitted.setdefault((t.server, t.device), [])
            trial = [*there, (classes, float(np.max(work_s)))]
            request = max(x for _, x in trial)
            need = many_workload_capacity(
                [[(c.sigma_s, c.rho, c.delta_s) for c in cs] for cs, _ in trial], request
            )
            ok = need <= 1.0
            if ok:
                there.append((classes, float(np.max(work_s))))
            out.append(Decision(t, classes, ok, need))
        return out

    def plan(self, decisions: Sequence[Decision], meta: dict[str, object] | None = None) -> Plan:
        """The Plan of ``decisions``: storage ``nested`` at MPL 1, each admitted tenant's
        classes, the rejected ones with the capacity they would have needed."""
        tenants = [
            TenantPlan(
                d.tenant.name,
                d.tenant.slo,
                d.tenant.server or "",
                d.tenant.device,
                dict.fromkeys(STORAGE_PATH, 0),
                {},
                Bound(
                    d.tenant.slo.latency_s,
                    NAME,
                    d.tenant.slo.percentile,
                    {Stage.STORAGE: d.tenant.slo.latency_s},
                ),
                client_host=d.tenant.client_host,
                client_vm=d.tenant.client_vm,
                nested={Stage.STORAGE: d.classes},
            )
            for d in decisions
            if d.admitted
        ]
        rejected = [
            Rejection(
                d.tenant.name,
                f"its device would need {d.capacity:.3g} times its capacity (Lemma 3)",
                (d.tenant.name,),
            )
            for d in decisions
            if not d.admitted
        ]
        return Plan(
            NAME,
            len({(t.server, t.device) for t in tenants}),
            tenants,
            rejected=rejected,
            disciplines={
                **dict.fromkeys(STORAGE_PATH, Discipline("fifo")),
                Stage.STORAGE: Discipline("nested"),
            },
            dispatch=DispatchRule(read_mpl=1, write_mpl=1),
            meta=dict(meta or {}),
        )


def nested_qos(tset: TenantSet, **rule: object) -> NestedQosPolicy:
    """The ``nested-qos`` admission policy (registry factory); it takes none of the SNC rule's
    keywords."""
    if rule:
        raise TypeError(f"nested-qos got unexpected keywords {', '.join(sorted(rule))}")
    return NestedQosPolicy(tset)
