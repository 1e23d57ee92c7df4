"""The ``nested-qos`` policy: a tenant's nested classes chosen from its trace, admitted by the
many-workload capacity bound, written as a Plan (Wang's thesis §3.2.3 and §3.3; issue 25,
``docs/nested-qos.md``).

**Parameter selection** (:func:`select_classes`; thesis §3.2.3, ``docs/nested-qos.md``). For
a graduated SLO ``(δ_i, f_i)``, ``i = 1 … n`` (latencies and fractions increasing), and the
trace's arrivals ``a_k`` (s) and storage-stage work ``x_k`` (s of device work,
:class:`~tailbound.profiles.tokens.SsdModel`), the thesis' profiling step — "using a
decomposition algorithm (see [31]) one can determine the minimum capacity ``κ_1`` required for a
fraction ``f_1`` of the workload to meet the deadline ``δ_1``. We choose ``ρ_1 = κ_1`` and
``σ_1 = ρ_1 δ_1``. We similarly profile each of the classes" — is applied to every grade:

- ``κ_i`` is the smallest rate (a utilisation of the device: 1 is the device, 2 a device twice
  as fast) at which the decomposition of [31] (Lu, Jin and Varman's RTT,
  :func:`tailbound.characterize.decompose.decomposed_rate`) keeps at least ``⌈f_i · N⌉`` of the
  trace's ``N`` requests in a primary stream that a rate-``κ_i`` FIFO queue serves within
  ``δ_i``; the requests that would miss are moved out and take no service from it;
- then ``ρ_i = max_{l ≤ i} κ_l`` and ``σ_i = max_{l ≤ i} κ_l δ_l``: the running maxima keep
  the classes nested (``σ``, ``ρ``, ``δ`` non-decreasing outward, as the core requires).

The primary stream of grade ``i`` conforms to the ``(κ_i δ_i, κ_i)`` envelope (its work arriving
in ``[s, t]`` is served within ``[s, t + δ_i]``), so on the profiled trace the envelope holds a
subsequence of ``f_i`` of the requests; the running maxima only widen it. It does not prove that
the classifier's cascade puts ``f_i`` of the requests in classes ``1 … i`` of another trace
(the thesis profiles, it does not prove either): ``tailbound verify`` replays the plan and
checks each grade (``tests/policies/test_nested_qos.py`` replays the second half of a trace
selected on its first).

An earlier rule took ``κ_i`` from a FIFO server that serves *every* request; it is no sounder
(the requests such a server finishes within ``δ_i`` conform to the same envelope), and never
cheaper: the primary queue's backlog never exceeds that server's, so the decomposition keeps
every request it finishes in time and its ``κ`` is at most the FIFO rule's
(``tests/characterize/test_decompose.py``). On a bursty trace the FIFO server lets the excess
of a burst delay every request after it, pushing ``κ`` toward the burst rate
(``docs/results-nested-qos.md``: 2385 and 4424 IOPS against 1665 and 2835 for the two
Exchange stand-ins of §4.4).

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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tailbound.characterize.decompose import decomposed_rate
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


def select_classes(
    time_s: NDArray[np.float64], work_s: NDArray[np.float64], grades: Sequence[tuple[float, float]]
) -> tuple[NestedClass, ...]:
    """The nested classes ``(σ_i s of work, ρ_i utilisation, δ_i s)`` for ``grades``
    ``(δ_i, f_i)``, innermost first, chosen from a trace by the rule of the module
    documentation. Raises :class:`ValueError` for an empty trace, work not positive or a grade
    out of range (:func:`~tailbound.characterize.decompose.decomposed_rate`).

    A burst of six 1 ms requests and four lone ones at 4, 5, 6 and 7 ms: 60% within 2 ms keeps
    two of the burst and the four after it at ``κ_1 = 1`` (a FIFO server of all ten would need
    7/6); all within 10 ms needs the burst's 6 ms of work done in 10 ms, ``κ_2 = 0.6``, so
    ``ρ_2 = 1`` (nested) and ``σ_2 = 0.6 × 10`` ms.

    >>> t = np.array([0.0] * 6 + [0.004, 0.005, 0.006, 0.007])
    >>> [tuple(round(v, 6) for v in c) for c in select_classes(t, np.full(10, 1e-3),
    ...                                                        [(0.002, 0.6), (0.01, 1.0)])]
    [(0.002, 1.0, 0.002), (0.006, 1.0, 0.01)]
    """
    classes: list[NestedClass] = []
    sigma = rho = 0.0
    for delta, fraction in grades:
        kappa = decomposed_rate(time_s, work_s, delta, fraction)
        rho, sigma = max(rho, kappa), max(sigma, kappa * delta)
        classes.append(NestedClass(sigma, rho, delta))
    return tuple(classes)


@dataclass(frozen=True)
class Decision:
    """One arrival: the tenant, its selected classes, whether it was admitted and the capacity
    (utilisation of its device) its device's admitted tenants would need with it; ``largest_s``
    is its largest request's work (s)."""

    tenant: Tenant
    classes: tuple[NestedClass, ...]
    admitted: bool
    capacity: float
    largest_s: float = 0.0


def decide_one(
    there: Sequence[Decision],
    tenant: Tenant,
    time_s: NDArray[np.float64],
    work_s: NDArray[np.float64],
) -> Decision:
    """One step of :meth:`NestedQosPolicy.decide`: ``tenant`` (its requests' arrivals and work,
    s) against the admitted decisions ``there`` of its device; the control plane decides each
    arrival with it."""
    grades = tenant.slo.grades or ((tenant.slo.latency_s, tenant.slo.percentile),)
    return decide_classes(
        there, tenant, select_classes(time_s, work_s, grades), float(np.max(work_s))
    )


def decide_classes(
    there: Sequence[Decision], tenant: Tenant, classes: tuple[NestedClass, ...], largest: float
) -> Decision:
    """:func:`decide_one` of a tenant given by its nested ``classes`` and its largest request's
    work ``largest`` (s) instead of its trace (the control plane's characterisation)."""
    trial = [*((d.classes, d.largest_s) for d in there), (classes, largest)]
    request = max(x for _, x in trial)
    need = many_workload_capacity(
        [[(c.sigma_s, c.rho, c.delta_s) for c in cs] for cs, _ in trial], request
    )
    return Decision(tenant, classes, need <= 1.0, need, largest)


class NestedQosPolicy:
    """Nested QoS admission (module documentation) of the tenants of ``tset``."""

    analysis = NAME

    def __init__(self, tset: TenantSet) -> None:
        self.tset = tset

    def decide(
        self, traces: Sequence[tuple[NDArray[np.float64], NDArray[np.float64]]]
    ) -> list[Decision]:
        """Admit the tenants in file order, given each one's ``(arrivals s, work s)``."""
        admitted: dict[tuple[str | None, str | None], list[Decision]] = {}
        out = []
        for t, (time_s, work_s) in zip(self.tset.tenants, traces, strict=True):
            there = admitted.setdefault((t.server, t.device), [])
            d = decide_one(there, t, time_s, work_s)
            if d.admitted:
                there.append(d)
            out.append(d)
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
