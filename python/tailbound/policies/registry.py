"""The one registry of policies: name → what it is and how to build it.

The CLI, the experiments and (later) the control plane read policy names here and nowhere else.
Looking a name up imports nothing heavy (building the CLI's parser must stay fast); a policy's
module is imported when it is built.

Kinds (each a small protocol of :mod:`tailbound.policies`):

- ``placement``: which server and device each tenant goes to, with its rate limits
  (:class:`~tailbound.policies.placement.Policy`: WorkloadCompactor and its baselines,
  PriorityMeister's multiple rate limiters; ``tailbound place``);
- ``admission``: whether each arriving tenant is admitted, with the priorities and rate limits
  enforced (:class:`~tailbound.policies.admission.AdmissionPolicy`: SNC-Meister and the SNC
  analyses, the DNC baselines; ``tailbound admit`` and ``tailbound bound``);
- ``prioritization``: per-stage priorities and buckets of placed tenants (PriorityMeister,
  bySLO; ``tailbound prioritize``);
- ``scheduling``: a device scheduler without admission or analysis (proportional share, EDF)
  or a runtime controller that changes it while the system runs (Cake), as in the thesis'
  comparisons (:mod:`tailbound.policies.scheduling`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

KINDS = ("placement", "admission", "prioritization", "scheduling")


@dataclass(frozen=True)
class Entry:
    """A registered policy: ``name`` as users spell it, its ``kind``, one line of ``summary``
    and ``factory``, ``"module:function"`` building it (imported on use)."""

    name: str
    kind: str
    summary: str
    factory: str

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """The policy: ``factory(*args, **kwargs)``."""
        module, _, attr = self.factory.partition(":")
        return getattr(importlib.import_module(module), attr)(*args, **kwargs)


_PLACE = "tailbound.policies.workloadcompactor:make_policy"
_ADMIT = "tailbound.policies.admission_policies:make_admission"
_PRIO = "tailbound.policies.pm_plan:prioritizer"
_SCHED = "tailbound.policies.scheduling:make_scheduling"

REGISTRY: tuple[Entry, ...] = (
    Entry("workloadcompactor", "placement", "WorkloadCompactor's joint LP (thesis ch. 5)", _PLACE),
    Entry("effective-bandwidth", "placement", "b = 0, smallest rate meeting the SLO", _PLACE),
    Entry("average-rate:K", "placement", "r = K × mean rate, b from the r-b curve", _PLACE),
    Entry("knee", "placement", "the r-b curve point minimising r + b", _PLACE),
    Entry(
        "prioritymeister-placement",
        "placement",
        "PriorityMeister's multiple rate limiters as a placement check (Fig. 5.12)",
        _PLACE,
    ),
    Entry("snc-meister", "admission", "SNC-Meister (thesis ch. 4, Appendix A.4)", _ADMIT),
    Entry("snc-hop-by-hop", "admission", "SNC hop-by-hop analysis (Appendix A.3)", _ADMIT),
    Entry("snc-convolution", "admission", "SNC convolution analysis (Appendix A.3)", _ADMIT),
    Entry("dnc", "admission", "PriorityMeister-style DNC, worst case (§4.3.1)", _ADMIT),
    Entry("silo", "admission", "Silo++: one level, effective-bandwidth limits (§4.3.1)", _ADMIT),
    Entry("qjump", "admission", "QJump++: fixed class throughputs (§4.3.1)", _ADMIT),
    Entry("prioritymeister", "prioritization", "PriorityMeister's prioritizer (ch. 3)", _PRIO),
    Entry("byslo", "prioritization", "priorities by SLO, tightest first (§3.3.1)", _PRIO),
    Entry("ps", "scheduling", "proportional share: SFQ, equal weights (§3.3.1)", _SCHED),
    Entry("edf", "scheduling", "earliest deadline first, deadlines at the SLOs", _SCHED),
    Entry("cake", "scheduling", "Cake: SFQ weights adjusted from measured tails", _SCHED),
)


def names(kind: str) -> tuple[str, ...]:
    """The registered names of ``kind`` (:data:`KINDS`), in registry order."""
    if kind not in KINDS:
        raise ValueError(f"unknown policy kind {kind!r} (known: {', '.join(KINDS)})")
    return tuple(e.name for e in REGISTRY if e.kind == kind)


def entry(name: str, kind: str) -> Entry:
    """The entry of ``name`` among policies of ``kind``; a parameterised name such as
    ``average-rate:1.5`` matches its pattern (``average-rate:K``)."""
    for e in REGISTRY:
        if e.kind == kind and (e.name == name or _matches(e.name, name)):
            return e
    raise ValueError(f"unknown {kind} policy {name!r} (known: {', '.join(names(kind))})")


def build(name: str, kind: str, *args: Any, **kwargs: Any) -> Any:
    """The policy called ``name`` of ``kind``, built by its factory with ``name`` first."""
    return entry(name, kind).build(name, *args, **kwargs)


def _matches(pattern: str, name: str) -> bool:
    head, sep, _ = pattern.partition(":")
    return bool(sep) and name.startswith(head + ":")
