"""Turn a :class:`~tailbound.plan.Plan` (the policies' hand-off, ARCHITECTURE.md) into a scenario.

A plan says, per tenant, the server and device it is placed on, its priority at each stage (0 is
the highest) and its token buckets at each stage (rates as utilisations of the stage, sizes in
seconds of work). :func:`scenario_from_plan` builds the scenario document that replays each
tenant's trace through exactly that configuration:

- one host per server of the plan and per client host (a tenant without one gets its own);
  a device ``"<server>.<device>"`` per device in use, served by ``profile``;
- ``net_in``'s priority applies at both queues the request message crosses (client egress and
  server ingress), its buckets at the client egress only — the sender shapes, as the thesis'
  network enforcer does at end hosts (§2.2.2);
- ``storage``'s priority and buckets apply at the device's dispatcher;
- ``net_out``'s priority applies at the server egress and client ingress, its buckets at the
  server egress.

Every queue gets a strict-priority scheduler in ``mode`` (``"shaping"``: WorkloadCompactor's
latency is the network-calculus bound plus the shaper's delay; ``"demotion"``: PriorityMeister's
storage enforcer, thesis §2.2.1). The simulator counts larger priorities as more important, so
plan level ``p`` becomes ``top − p`` with ``top`` the plan's lowest level.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tailbound.errors import ConfigError
from tailbound.plan import Plan, TenantPlan
from tailbound.stages import Stage
from tailbound.traces.trace import Trace


def device_name(tenant: TenantPlan) -> str:
    """The simulator's name of the device ``tenant`` is placed on (device names repeat across
    servers, so the server is part of it)."""
    return f"{tenant.server}.{tenant.device}"


def client_name(tenant: TenantPlan) -> str:
    """The client host ``tenant`` runs on: the plan's, else a host of its own."""
    return tenant.client_host or f"client-{tenant.name}"


def scenario_from_plan(
    plan: Plan,
    traces: Mapping[str, Mapping[str, Any] | Trace],
    *,
    profile: str | Path | Mapping[str, Any],
    link_bandwidth_bytes_per_s: float,
    mode: str = "shaping",
    mtu_bytes: int = 1500,
    base_latency_s: float = 0.0,
    duration_s: float | None = None,
) -> dict[str, Any]:
    """The scenario document replaying ``plan``.

    ``traces`` maps each tenant's name to its trace: a :class:`~tailbound.traces.Trace`, or a
    source (``{"path": ..., "format": ...}`` or ``{"synthetic": {...}}``, see
    :mod:`tailbound.sim.sources`); ``profile`` is the SSD profile (a path, or its JSON document)
    of every device.

    >>> from tailbound.plan import StageLimit, TenantPlan
    >>> from tailbound.stages import STORAGE_PATH
    >>> limit = StageLimit(0.5, 0.001)
    >>> t = TenantPlan("A", 0.05, "s0", "ssd0", {s: 0 for s in STORAGE_PATH},
    ...                {s: limit for s in STORAGE_PATH}, 0.04)
    >>> doc = scenario_from_plan(
    ...     Plan("demo", 1, [t]),
    ...     {"A": {"synthetic": {"kind": "poisson", "rate": 10, "duration_s": 1}}},
    ...     profile={"bandwidthTable": [{"requestSize": 4096, "readBandwidth": 1e8,
    ...                                  "writeBandwidth": 1e8}]},
    ...     link_bandwidth_bytes_per_s=125e6)
    >>> sorted(q["queue"] for q in doc["queues"])
    ['client-A.egress', 'client-A.ingress', 's0.egress', 's0.ingress', 's0.ssd0']
    """
    if mode not in ("shaping", "demotion"):
        raise ValueError(f"mode must be 'shaping' or 'demotion', got {mode!r}")
    missing = [t.name for t in plan.tenants if t.name not in traces]
    if missing:
        raise ConfigError(None, f"no trace given for planned tenants {missing}")
    hosts = sorted({t.server for t in plan.tenants} | {client_name(t) for t in plan.tenants})
    profile_doc = str(profile) if isinstance(profile, str | Path) else dict(profile)
    devices = sorted({(device_name(t), t.server) for t in plan.tenants})
    doc: dict[str, Any] = {
        "network": {"bandwidth_bytes_per_s": link_bandwidth_bytes_per_s, "mtu_bytes": mtu_bytes},
        "hosts": [{"name": h} for h in hosts],
        "devices": [
            {"name": name, "host": host, "profile": profile_doc, "base_latency_s": base_latency_s}
            for name, host in devices
        ],
        "workloads": [
            {
                "name": t.name,
                "client": client_name(t),
                "device": device_name(t),
                "slo": {"latency_s": t.slo_s, "percentile": t.percentile},
                "trace": _source(traces[t.name]),
            }
            for t in plan.tenants
        ],
        "queues": _queues(plan, mode),
    }
    if duration_s is not None:
        doc["duration_s"] = duration_s
    return doc


def _source(trace: Mapping[str, Any] | Trace) -> Mapping[str, Any] | Trace:
    return trace if isinstance(trace, Trace) else dict(trace)


def _queues(plan: Plan, mode: str) -> list[dict[str, Any]]:
    top = max((p for t in plan.tenants for p in t.priority.values()), default=0)
    queues: dict[str, dict[str, Any]] = {}

    def configure(queue: str, tenant: TenantPlan, stage: Stage, *, shaped: bool) -> None:
        q = queues.setdefault(
            queue, {"queue": queue, "kind": "priority", "mode": mode, "priority": {}, "buckets": {}}
        )
        q["priority"][tenant.name] = top - tenant.priority[stage]
        if shaped:
            q["buckets"][tenant.name] = [[r, b] for r, b in tenant.buckets(stage)]

    for t in plan.tenants:
        client, server = client_name(t), t.server
        configure(f"{client}.egress", t, Stage.NET_IN, shaped=True)
        configure(f"{server}.ingress", t, Stage.NET_IN, shaped=False)
        configure(device_name(t), t, Stage.STORAGE, shaped=True)
        configure(f"{server}.egress", t, Stage.NET_OUT, shaped=True)
        configure(f"{client}.ingress", t, Stage.NET_OUT, shaped=False)
    return list(queues.values())
