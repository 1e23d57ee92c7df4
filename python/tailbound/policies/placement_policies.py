"""The placement policies, one factory each (the registry's factories for ``placement``).

Each takes the server model the placement checks latencies with
(:class:`~tailbound.policies.server.ServerModel`, the reference system's by default) and gives a
:class:`~tailbound.policies.placement.Policy`:

- ``workloadcompactor``: the joint LP of thesis ch. 5 (:class:`WorkloadCompactorPolicy`);
- ``effective-bandwidth``, ``average-rate:K``, ``knee``: the fixed-choice baselines of
  :mod:`tailbound.policies.baselines` (§5.3), each tenant keeping the ``(r, b)`` chosen alone;
- ``prioritymeister-placement``: PriorityMeister's multiple rate limiters as a placement check
  (thesis Fig. 5.12, :mod:`tailbound.policies.pm_placement`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tailbound.policies import baselines
from tailbound.policies.baselines import Baseline
from tailbound.policies.placement import FixedPolicy, WorkloadCompactorPolicy
from tailbound.policies.server import REFERENCE, ServerModel

if TYPE_CHECKING:
    from tailbound.policies.pm_placement import PriorityMeisterPolicy


def workloadcompactor(model: ServerModel = REFERENCE) -> WorkloadCompactorPolicy:
    """WorkloadCompactor: every server's tenants' limits from its LP (thesis §5.2.2)."""
    return WorkloadCompactorPolicy(model=model)


def effective_bandwidth(model: ServerModel = REFERENCE) -> FixedPolicy:
    """``b = 0`` and the smallest rate meeting the SLO (:func:`baselines.effective_bandwidth`);
    with a server model beyond the reference's the shapers leave
    :data:`~tailbound.policies.baselines.EFFECTIVE_BANDWIDTH_RESERVE` of the SLO to its terms."""
    if model is REFERENCE:
        return FixedPolicy(Baseline("effective-bandwidth", baselines.effective_bandwidth), model)
    reserve = baselines.EFFECTIVE_BANDWIDTH_RESERVE
    choose = Baseline(
        "effective-bandwidth", lambda w: baselines.effective_bandwidth(w, reserve=reserve)
    )
    return FixedPolicy(choose, model)


def average_rate(k: float, model: ServerModel = REFERENCE) -> FixedPolicy:
    """``r = k ×`` the mean rate, ``b`` from the r-b curve (:func:`baselines.average_rate`);
    named ``average-rate:K`` with ``k`` as the shortest decimal (``average-rate:1.5``).

    >>> average_rate(2.0).name
    'average-rate:2'
    """
    if not k > 0:
        raise ValueError(f"average-rate:K needs K > 0, got {k}")
    choose = Baseline(f"average-rate:{k:g}", lambda w: baselines.average_rate(w, k))
    return FixedPolicy(choose, model)


def knee(model: ServerModel = REFERENCE) -> FixedPolicy:
    """The point of each stage's r-b curve minimising ``r + b`` (:func:`baselines.knee`)."""
    return FixedPolicy(Baseline("knee", baselines.knee), model)


def prioritymeister_placement(model: ServerModel = REFERENCE, k: int = 3) -> PriorityMeisterPolicy:
    """PriorityMeister's multiple rate limiters (``k`` buckets per stage) as the placement check
    (its prioritizer and LP imported when asked for)."""
    from tailbound.policies.pm_placement import PriorityMeisterPolicy

    return PriorityMeisterPolicy(k, model=model)
