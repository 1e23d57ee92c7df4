"""The one registry of policies: name → what it is and how to build it.

The CLI, the experiments and (later) the control plane read policy names here and nowhere else:
each entry's factory builds exactly its policy (no factory looks at a policy's name again), and a
parameterised name such as ``average-rate:1.5`` is parsed here, once (:func:`build`). Looking a
name up imports nothing (building the CLI's parser must stay fast); a policy's module is imported
when it is built.

Kinds (each a small protocol of :mod:`tailbound.policies`) and what their factories take:

- ``placement``: which server and device each tenant goes to, with its rate limits
  (:class:`~tailbound.policies.placement.Policy`: WorkloadCompactor and its baselines,
  PriorityMeister's multiple rate limiters; ``tailbound place``); factories of
  :mod:`tailbound.policies.placement_policies`, taking the server model;
- ``admission``: whether each arriving tenant is admitted, with the priorities and rate limits
  enforced (:class:`~tailbound.policies.admission.AdmissionPolicy`: SNC-Meister and the SNC
  analyses, family ``snc``, which run an :class:`~tailbound.policies.admission_policies.SncRule`;
  the DNC baselines, family ``dnc``, worst case; ``tailbound admit`` and ``tailbound bound``;
  Nested QoS, family ``nested``, graduated SLOs on the storage stage, ``tailbound admit`` only;
  PSLO, family ``control``, a controller of each tenant's rate and depth at its device, every
  tenant admitted, ``tailbound admit`` only; Aequitas, family ``rpc``, RPC tenants over WFQ
  classes with a per-RPC admission controller, every tenant admitted, ``tailbound admit``
  only);
  factories of :mod:`tailbound.policies.admission_policies`, taking the tenant set;
- ``prioritization``: per-stage priorities and buckets of placed tenants (PriorityMeister,
  bySLO; ``tailbound prioritize``); factories of :mod:`tailbound.policies.pm_plan`, giving the
  prioritizer function;
- ``scheduling``: a device scheduler without admission or analysis (proportional share, EDF)
  or a runtime controller that changes it while the system runs (Cake), as in the thesis'
  comparisons; each a :class:`~tailbound.policies.scheduling.RuntimeController`
  (:mod:`tailbound.policies.scheduling`).

Examples
--------
>>> names("prioritization")
('prioritymeister', 'byslo')
>>> entry("average-rate:1.5", "placement").name
'average-rate:K'
>>> registered(("dnc", "silo"), "admission")
('dnc', 'silo')
>>> registered(("dnc", "slio"), "admission")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: unknown admission policy 'slio' (known: ...)
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

KINDS = ("placement", "admission", "prioritization", "scheduling")


@dataclass(frozen=True)
class Entry:
    """A registered policy: ``name`` as users spell it (``name:K`` takes one number ``K`` > 0
    after the colon, e.g. ``average-rate:1.5``), its ``kind``, one line of ``summary``,
    ``factory``, ``"module:function"`` building exactly this policy (imported on use), and its
    ``family`` within the kind (admission: ``snc`` or ``dnc``; else empty)."""

    name: str
    kind: str
    summary: str
    factory: str
    family: str = ""

    @property
    def parameterised(self) -> bool:
        """Whether the name takes a number after its colon (``average-rate:K``)."""
        return ":" in self.name

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """The policy: ``factory(*args, **kwargs)`` (a parameterised entry's number first)."""
        module, _, attr = self.factory.partition(":")
        return getattr(importlib.import_module(module), attr)(*args, **kwargs)


_PLACE = "tailbound.policies.placement_policies:"
_ADMIT = "tailbound.policies.admission_policies:"
_PRIO = "tailbound.policies.pm_plan:"
_SCHED = "tailbound.policies.scheduling:"

REGISTRY: tuple[Entry, ...] = (
    Entry(
        "workloadcompactor",
        "placement",
        "WorkloadCompactor's joint LP (thesis ch. 5)",
        _PLACE + "workloadcompactor",
    ),
    Entry(
        "effective-bandwidth",
        "placement",
        "b = 0, smallest rate meeting the SLO",
        _PLACE + "effective_bandwidth",
    ),
    Entry(
        "average-rate:K",
        "placement",
        "r = K × mean rate, b from the r-b curve",
        _PLACE + "average_rate",
    ),
    Entry("knee", "placement", "the r-b curve point minimising r + b", _PLACE + "knee"),
    Entry(
        "prioritymeister-placement",
        "placement",
        "PriorityMeister's multiple rate limiters as a placement check (Fig. 5.12)",
        _PLACE + "prioritymeister_placement",
    ),
    Entry(
        "snc-meister",
        "admission",
        "SNC-Meister (thesis ch. 4, Appendix A.4)",
        _ADMIT + "snc_meister",
        "snc",
    ),
    Entry(
        "snc-hop-by-hop",
        "admission",
        "SNC hop-by-hop analysis (Appendix A.3)",
        _ADMIT + "snc_hop_by_hop",
        "snc",
    ),
    Entry(
        "snc-convolution",
        "admission",
        "SNC convolution analysis (Appendix A.3)",
        _ADMIT + "snc_convolution",
        "snc",
    ),
    Entry(
        "dnc",
        "admission",
        "PriorityMeister-style DNC, worst case (§4.3.1)",
        _ADMIT + "dnc",
        "dnc",
    ),
    Entry(
        "silo",
        "admission",
        "Silo++: one level, effective-bandwidth limits (§4.3.1)",
        _ADMIT + "silo",
        "dnc",
    ),
    Entry(
        "qjump",
        "admission",
        "QJump++: fixed class throughputs (§4.3.1)",
        _ADMIT + "qjump",
        "dnc",
    ),
    Entry(
        "nested-qos",
        "admission",
        "Nested QoS: graduated SLOs as nested classes from the trace, Lemma 3 (Wang §3.2)",
        "tailbound.policies.nested_qos:nested_qos",
        "nested",
    ),
    Entry(
        "pslo",
        "admission",
        "PSLO: percentile-latency and throughput SLOs by per-tenant rate and depth control "
        "(Li et al. 2016)",
        "tailbound.policies.pslo:pslo",
        "control",
    ),
    Entry(
        "aequitas",
        "admission",
        "Aequitas: RPC classes over WFQ, admission by downgrading (Zhang et al. 2022)",
        "tailbound.policies.aequitas:aequitas",
        "rpc",
    ),
    Entry(
        "prioritymeister",
        "prioritization",
        "PriorityMeister's prioritizer (ch. 3)",
        _PRIO + "prioritymeister",
    ),
    Entry("byslo", "prioritization", "priorities by SLO, tightest first (§3.3.1)", _PRIO + "byslo"),
    Entry(
        "ps",
        "scheduling",
        "proportional share: SFQ, equal weights (§3.3.1)",
        _SCHED + "ProportionalShare",
    ),
    Entry(
        "edf",
        "scheduling",
        "earliest deadline first, deadlines at the SLOs",
        _SCHED + "EarliestDeadlineFirst",
    ),
    Entry("cake", "scheduling", "Cake: SFQ weights adjusted from measured tails", _SCHED + "Cake"),
    Entry(
        "cake-net",
        "scheduling",
        "Cake, its weights also as network rate limits (the extension §3.3.1 dropped)",
        _SCHED + "cake_network",
    ),
)


def names(kind: str, family: str | None = None) -> tuple[str, ...]:
    """The registered names of ``kind`` (:data:`KINDS`), in registry order; with ``family``
    only those of that family (``names("admission", "dnc")``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown policy kind {kind!r} (known: {', '.join(KINDS)})")
    return tuple(e.name for e in REGISTRY if e.kind == kind and family in (None, e.family))


def entry(name: str, kind: str) -> Entry:
    """The entry of ``name`` among policies of ``kind``; a parameterised name such as
    ``average-rate:1.5`` matches its pattern (``average-rate:K``)."""
    for e in REGISTRY:
        if e.kind == kind and (e.name == name or _matches(e, name)):
            return e
    raise ValueError(f"unknown {kind} policy {name!r} (known: {', '.join(names(kind))})")


def find(name: str) -> Entry:
    """The entry called ``name`` whatever its kind (names are unique across kinds)."""
    for kind in KINDS:
        try:
            return entry(name, kind)
        except ValueError:
            continue
    raise ValueError(f"unknown policy {name!r} (known: {', '.join(e.name for e in REGISTRY)})")


def registered(policies: Iterable[str], kind: str) -> tuple[str, ...]:
    """``policies`` as a tuple, each checked to be a registered name of ``kind`` (a
    parameterised one with its number): how an experiment names the policies it compares, so a
    misspelt name fails when its module is imported."""
    out = tuple(policies)
    for name in out:
        e = entry(name, kind)
        if e.parameterised:
            parameter(name, e)
    return out


def build(name: str, kind: str, *args: Any, **kwargs: Any) -> Any:
    """The policy called ``name`` of ``kind``: its entry's factory with ``args`` and ``kwargs``
    (a parameterised name's number first: ``average-rate:1.5`` → ``average_rate(1.5, …)``)."""
    e = entry(name, kind)
    if e.parameterised:
        return e.build(parameter(name, e), *args, **kwargs)
    return e.build(*args, **kwargs)


def parameter(name: str, e: Entry) -> float:
    """The number ``K`` of a parameterised ``name`` (``average-rate:1.5`` → 1.5): finite and
    positive, else a ``ValueError`` naming the pattern."""
    placeholder = e.name.partition(":")[2]
    text = name.partition(":")[2]
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{e.name} needs a number {placeholder} > 0, got {name!r}")
    return value


def _matches(e: Entry, name: str) -> bool:
    return e.parameterised and name.startswith(e.name.partition(":")[0] + ":")
