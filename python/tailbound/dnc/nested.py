"""The capacity Nested QoS workloads need under EDF (Wang's thesis §3.2.2, Lemmas 1–3).

A workload's nested classes ``(σ_i, ρ_i, δ_i)``, ``i = 1 … n`` innermost first, with ``σ``, ``ρ``
and ``δ`` non-decreasing outward: class ``i`` is the largest part of the workload fitting a
``(σ_i, ρ_i)`` token bucket, and each of its requests must finish within ``δ_i`` of arriving
(``docs/nested-qos.md``). With one EDF scheduler, every request meets its deadline on a server
of capacity (Lemma 1)::

    C = max_{j = 1..n} { ρ_j , [σ_j + Σ_{i=1}^{j−1} (1 + ρ_i (δ_{i+1} − δ_i))] / δ_j }

The thesis' extraction lost the lemma's equations; this form is rebuilt from the surviving steps
of its proof (Eqs. 3–5, 12–14: the requests due by ``t`` in a busy period, at most one token of
slack per class boundary, maximised at ``t = δ_j``) in ``../shared/seeds/notes-nested-qos.md``,
and reproduces the thesis' example. With every ``ρ_i = ρ`` it is Lemma 2,
``max_j { ρ, [σ_j + (j − 1) + ρ (δ_j − δ_1)] / δ_j }``.

Units: the thesis counts uniform requests — ``σ`` in requests, ``ρ`` and ``C`` in requests per
second (IOPS), ``δ`` in seconds, and the ``1`` is one request. In the Plan's units (``σ``
seconds of work, ``ρ`` a utilisation) pass ``request``, the seconds of work of one (the
largest) request, for that ``1``; ``C`` is then a utilisation of the device the work is
measured on (above 1: a faster device is needed).

>>> sla = [(10, 100, 0.005), (20, 110, 0.05), (30, 120, 0.5)]
>>> single_workload_capacity(sla)  # the thesis' example SLA, IOPS
2000.0
>>> single_workload_capacity([(30, 120, 0.005)])  # all of it within 5 ms
6000.0

Several workloads sharing one EDF server (Lemma 3): with ``N^w(0, t)`` the requests of workload
``w`` due by ``t`` in a busy period (:func:`demand`, the numerator above continued linearly,
``σ_j + Σ_{i<j}(1 + ρ_i(δ_{i+1} − δ_i)) + ρ_j (t − δ_j)`` for ``δ_j ≤ t < δ_{j+1}``, 0 before
``δ_1``), the capacity is ``max{ max_k Σ_w N^w(0, Δ_k) / Δ_k , Σ_w ρ_{w,n} }`` over every class
deadline ``Δ_k`` of every workload (:func:`many_workload_capacity`). Each ``N^w(0, t) / t`` is
monotone on each linear piece, so the deadlines and ``t → ∞`` are the only candidates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: A class ``(sigma, rho, delta_s)``: bucket size, rate, deadline (seconds).
Class = tuple[float, float, float]


def capacity_terms(classes: Sequence[Class], request: float = 1.0) -> list[float]:
    """The capacity each class ``j`` needs, ``max(ρ_j, [σ_j + Σ_{i<j}(request + ρ_i(δ_{i+1} −
    δ_i))] / δ_j)`` (module documentation), innermost first; their maximum is
    :func:`single_workload_capacity`.

    >>> [round(c, 6) for c in capacity_terms([(10, 100, 0.005), (20, 110, 0.05), (30, 120, 0.5)])]
    [2000.0, 510.0, 172.0]
    """
    _check(classes, request)
    terms = []
    carried = 0.0  # Σ_{i<j} (request + ρ_i (δ_{i+1} − δ_i))
    for j, (sigma, rho, delta) in enumerate(classes):
        if j > 0:
            _, rho_in, delta_in = classes[j - 1]
            carried += request + rho_in * (delta - delta_in)
        terms.append(max(float(rho), (sigma + carried) / delta))
    return terms


def single_workload_capacity(classes: Sequence[Class], request: float = 1.0) -> float:
    """The capacity with which EDF meets every deadline of one workload's nested classes
    (Lemma 1, module documentation), in ``σ``'s unit per second: IOPS for ``σ`` in requests
    (``request`` 1), a utilisation for ``σ`` in seconds of work (``request`` the seconds of work
    of one request).

    Raises :class:`ValueError` for no classes, a ``σ``, ``ρ`` or ``δ`` not positive and finite,
    classes not nested (any of them decreasing outward) or ``request`` negative.
    """
    return max(capacity_terms(classes, request))


def _check(classes: Sequence[Class], request: float) -> None:
    if not classes:
        raise ValueError("expected at least one class (sigma, rho, delta_s)")
    if not (math.isfinite(request) and request >= 0):
        raise ValueError(f"request must be a finite number >= 0, got {request}")
    names = ("sigma", "rho", "delta_s")
    for k, c in enumerate(classes, start=1):
        if len(c) != 3 or not all(math.isfinite(v) and v > 0 for v in c):
            raise ValueError(f"class {k}: expected positive finite (sigma, rho, delta_s), got {c}")
        if k > 1:
            for name, inner, outer in zip(names, classes[k - 2], c, strict=True):
                if outer < inner:
                    raise ValueError(
                        f"classes must be nested: class {k} has {name} {outer} < {inner} "
                        f"of class {k - 1}"
                    )


def demand(classes: Sequence[Class], t: float, request: float = 1.0) -> float:
    """``N(0, t)``: the most requests (in ``σ``'s unit) of one workload with a deadline at most
    ``t`` after the start of a busy period (thesis §3.2.2, the proof of Lemma 1, Eqs. 2–11 as
    rebuilt in the notes): ``σ_j + Σ_{i<j}(request + ρ_i(δ_{i+1} − δ_i)) + ρ_j (t − δ_j)`` for
    the largest ``j`` with ``δ_j ≤ t``, and 0 before ``δ_1``.

    >>> demand([(10, 100, 0.005), (20, 110, 0.05)], 0.05)  # 20 + 1 + 100 · 0.045
    25.5
    """
    _check(classes, request)
    if t < classes[0][2]:
        return 0.0
    carried = 0.0
    j = 0
    while j + 1 < len(classes) and classes[j + 1][2] <= t:
        carried += request + classes[j][1] * (classes[j + 1][2] - classes[j][2])
        j += 1
    sigma, rho, delta = classes[j]
    return sigma + carried + rho * (t - delta)


def many_workload_capacity(workloads: Sequence[Sequence[Class]], request: float = 1.0) -> float:
    """The capacity with which one EDF scheduler meets every deadline of several workloads'
    nested classes (Lemma 3, module documentation), in the unit of
    :func:`single_workload_capacity` (of which it is the one-workload case).

    >>> sla = [(10, 100, 0.005), (20, 110, 0.05), (30, 120, 0.5)]
    >>> many_workload_capacity([sla, sla])
    4000.0
    """
    if not workloads:
        raise ValueError("expected at least one workload")
    deadlines = sorted({c[2] for classes in workloads for c in classes})
    by_deadline = max(sum(demand(w, t, request) for w in workloads) / t for t in deadlines)
    return max(by_deadline, sum(float(w[-1][1]) for w in workloads))
