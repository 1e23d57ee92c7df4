"""Turn a plan (the policies' hand-off, ARCHITECTURE.md) into a scenario.

A :class:`PlanEntry` is what a policy (PriorityMeister, WorkloadCompactor, SNC-Meister) decides for
one tenant: the device it is placed on, its priority at each stage, its token buckets at each stage
(rates as utilisations of the stage, sizes in seconds of work) and the latency bound it predicts.
:func:`scenario_from_plan` writes those decisions into the ``queues`` of a scenario document:

- ``net_in``'s priority applies at both queues the request message crosses (client egress and
  server ingress), its buckets at the client egress only — the sender shapes, as the thesis'
  network enforcer does at end hosts (§2.2.2);
- ``storage``'s priority and buckets apply at the device's dispatcher;
- ``net_out``'s priority applies at the server egress and client ingress, its buckets at the
  server egress.

Every queue gets a strict-priority scheduler in ``mode`` (``"shaping"``: WorkloadCompactor's
latency is the network-calculus bound plus the shaper's delay; ``"demotion"``: PriorityMeister's
storage enforcer).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailbound.errors import ConfigError
from tailbound.stages import Stage


@dataclass(frozen=True)
class PlanEntry:
    """One tenant's plan.

    ``priority`` and ``buckets`` are keyed by stage name (``net_in``, ``storage``, ``net_out``);
    larger priorities are more important; a bucket is ``(rate, size_s)``. ``bound_s`` is the
    predicted latency bound (kept for reports, not used by the simulator).
    """

    workload: str
    device: str
    priority: Mapping[str, int] = field(default_factory=dict)
    buckets: Mapping[str, Sequence[tuple[float, float]]] = field(default_factory=dict)
    bound_s: float | None = None


def scenario_from_plan(
    base: Mapping[str, Any], plan: Sequence[PlanEntry], *, mode: str = "shaping"
) -> dict[str, Any]:
    """A copy of scenario document ``base`` with each tenant placed and its queues configured.

    ``base`` holds ``hosts``, ``devices`` and ``workloads`` (trace, SLO, client); each planned
    workload's ``device`` is set from the plan and every queue its route crosses gets a priority
    scheduler. Other ``queues`` of ``base`` are replaced.

    >>> base = {"hosts": [{"name": "c"}, {"name": "s"}],
    ...         "devices": [{"name": "d", "host": "s", "kind": "memory"}],
    ...         "workloads": [{"name": "A", "client": "c",
    ...                        "trace": {"synthetic": {"kind": "poisson", "rate": 10,
    ...                                                "duration_s": 1}}}]}
    >>> doc = scenario_from_plan(base, [PlanEntry("A", "d", {"storage": 2},
    ...                                           {"storage": [(0.5, 0.01)]})])
    >>> [q for q in doc["queues"] if q["queue"] == "d"][0]["buckets"]
    {'A': [[0.5, 0.01]]}
    """
    if mode not in ("shaping", "demotion"):
        raise ValueError(f"mode must be 'shaping' or 'demotion', got {mode!r}")
    doc = copy.deepcopy(dict(base))
    workloads = {w["name"]: w for w in doc.get("workloads", [])}
    host_of = {d["name"]: d["host"] for d in doc.get("devices", [])}
    queues: dict[str, dict[str, Any]] = {}

    def configure(queue: str, name: str, priority: int, buckets: Sequence[tuple[float, float]]):
        q = queues.setdefault(
            queue, {"queue": queue, "kind": "priority", "mode": mode, "priority": {}, "buckets": {}}
        )
        q["priority"][name] = int(priority)
        if buckets:
            q["buckets"][name] = [[float(r), float(b)] for r, b in buckets]

    for e in plan:
        if e.workload not in workloads:
            raise ConfigError(None, f"the plan names workload {e.workload!r}, absent from the base")
        if e.device not in host_of:
            raise ConfigError(None, f"the plan names device {e.device!r}, absent from the base")
        w = workloads[e.workload]
        w["device"] = e.device
        w.pop("server", None)
        client, server = w["client"], host_of[e.device]
        p = {s.value: e.priority.get(s.value, 0) for s in Stage}
        b = {s.value: e.buckets.get(s.value, ()) for s in Stage}
        configure(f"{client}.egress", e.workload, p["net_in"], b["net_in"])
        configure(f"{server}.ingress", e.workload, p["net_in"], ())
        configure(e.device, e.workload, p["storage"], b["storage"])
        configure(f"{server}.egress", e.workload, p["net_out"], b["net_out"])
        configure(f"{client}.ingress", e.workload, p["net_out"], ())
    doc["queues"] = list(queues.values())
    return doc
