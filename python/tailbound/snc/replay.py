"""Replaying admitted tenants in the simulator with the priorities and rate limits a policy set.

Every tenant is a key-value workload (no device stage) from its client host to its server host on
a full-bisection network (:mod:`tailbound.sim`): the request crosses the client's egress and the
server's ingress, the response the server's egress and the client's ingress. A tenant's level
(0 = most important) applies at all four links; its token buckets (if any) shape at the sender of
each direction — the client's egress for requests, the server's egress for responses — in the
tenant's ``mode``: ``shaping`` (traffic above its rate limits waits at the end host and that wait
is part of the measured latency, thesis §4.3.3: open loop, end-host queueing included) or
``demotion`` (it is sent at once below every level, PriorityMeister's enforcement, §2.2.1).
A queue takes the mode of its first tenant with buckets there (a scheduler has one mode).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.sim.results import percentile
from tailbound.sim.scenario import Scenario
from tailbound.snc.tenants import TenantSpec
from tailbound.traces.trace import Trace

Bucket = tuple[float, float]


@dataclass(frozen=True)
class Enforced:
    """What the network enforces for one tenant: its level and buckets per direction."""

    level: int
    buckets: Mapping[str, tuple[Bucket, ...]] = field(default_factory=dict)
    mode: str = "shaping"


def scenario(
    tenants: Sequence[TenantSpec],
    traces: Sequence[Trace],
    enforced: Sequence[Enforced],
    *,
    link_bytes_per_s: float = 125_000_000.0,
    mtu_bytes: float = 1500.0,
    propagation_s: float = 5e-6,
) -> Scenario:
    """The simulator scenario of ``tenants`` replaying ``traces`` under ``enforced``."""
    hosts = sorted({t.client_host for t in tenants} | {t.server_host for t in tenants})
    top = 1 + max((e.level for e in enforced), default=0)
    tables: dict[str, dict[str, Any]] = {}
    workloads = []
    for t, trace, e in zip(tenants, traces, enforced, strict=True):
        workloads.append(
            {
                "name": t.name,
                "client": t.client_host,
                "server": t.server_host,
                "slo": {"latency_s": t.slo_s, "percentile": t.percentile},
                "trace": trace,
            }
        )
        links = {
            "in": (f"{t.client_host}.egress", f"{t.server_host}.ingress"),
            "out": (f"{t.server_host}.egress", f"{t.client_host}.ingress"),
        }
        for direction, queues in links.items():
            for i, q in enumerate(queues):
                table = tables.setdefault(
                    q,
                    {
                        "queue": q,
                        "kind": "priority",
                        "mode": "shaping",
                        "priority": {},
                        "buckets": {},
                    },
                )
                table["priority"][t.name] = top - e.level
                limits = e.buckets.get(direction, ())
                if i == 0 and limits:
                    if not table["buckets"]:
                        table["mode"] = e.mode
                    table["buckets"][t.name] = [[float(r), float(b)] for r, b in limits]
    doc = {
        "network": {
            "bandwidth_bytes_per_s": link_bytes_per_s,
            "mtu_bytes": mtu_bytes,
            "propagation_s": propagation_s,
        },
        "hosts": [{"name": h} for h in hosts],
        "workloads": workloads,
        "queues": list(tables.values()),
    }
    return Scenario.from_dict(doc)


def replay(
    tenants: Sequence[TenantSpec],
    traces: Sequence[Trace],
    enforced: Sequence[Enforced],
    **network: float,
) -> dict[str, NDArray[np.float64]]:
    """Each tenant's end-to-end request latencies (s) when ``traces`` are replayed open loop."""
    if not tenants:
        return {}
    sim = scenario(tenants, traces, enforced, **network).simulator()
    sim.run()
    results = sim.results()
    return {t.name: np.asarray(results[t.name].latency) for t in tenants}


def replayed_percentiles(
    tenants: Sequence[TenantSpec],
    traces: Sequence[Trace],
    enforced: Sequence[Enforced],
    **network: float,
) -> list[float]:
    """Each tenant's replayed latency (s) at its own percentile (:func:`replay`)."""
    latencies = replay(tenants, traces, enforced, **network)
    return [percentile(latencies[t.name], t.percentile) for t in tenants]
