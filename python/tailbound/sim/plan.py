"""The one scenario builder: a :class:`~tailbound.plan.Plan` (the policies' hand-off) as a scenario.

A plan says, per tenant, the server (and device) it is placed on, its priority at each stage (0 is
the highest) and its token buckets at each stage (rates as utilisations of the stage, sizes in
seconds of work), and how each stage's queues are scheduled. :func:`scenario_from_plan` builds the
scenario document that replays each tenant's trace through exactly that configuration, with the
plan's own conventions (:func:`~tailbound.plan.stage_queues`,
:func:`~tailbound.plan.enforcer_level`):

- one host per server of the plan and per client host (a tenant without one gets its own);
  a device ``"<server>.<device>"`` per device in use, served by ``profile`` under the plan's
  :class:`~tailbound.plan.DispatchRule`; a tenant without a device is a network-only workload
  (request to its server and response back);
- a stage's priority applies at every queue it crosses, its buckets at its first queue only —
  the sender shapes, as the thesis' network enforcer does at end hosts (§2.2.2) and the storage
  enforcer at the device's dispatcher (§2.2.1);
- each queue gets its stage's discipline, any kind of the core's, with every per-stage
  parameter the plan gives the tenants: the queue tables are
  :func:`tailbound.plan_queues.queue_tables`, the one translation of a plan into schedulers,
  which the storage gateway's configuration uses too (strict priority with the plan's limit
  mode — ``"shaping"``: traffic over its buckets waits; ``"demotion"``: it goes on below every
  level —, FIFO, DWRR over the tenants' service classes, SFQ with their weights, EDF with their
  deadlines, else their SLOs, ...);
- a device whose tenants the plan's storage controller controls (PSLO's, the plan's
  ``control.storage``) carries it as its ``control`` table, the one translation
  :func:`tailbound.plan_control.control_table` (the gateway's configuration uses the same);
- a profile with an ``array`` section (``tailbound profile --depth-sweep``: a device whose
  throughput and tail depend on the requests outstanding, ``docs/simulator.md`` "Arrays") gives
  every device it serves that service model.

Everything that replays a plan (``tailbound simulate`` of a plan, :mod:`tailbound.verify`, the
measured floors of admission, the experiments) builds its scenario here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tailbound.errors import ConfigError
from tailbound.jsonio import read_json
from tailbound.plan import Plan, TenantPlan, client_name, device_name
from tailbound.plan_control import control_table
from tailbound.plan_queues import queue_tables
from tailbound.sim.results import WorkloadResult
from tailbound.traces.trace import Trace


def scenario_from_plan(
    plan: Plan,
    traces: Mapping[str, Mapping[str, Any] | Trace],
    *,
    link_bandwidth_bytes_per_s: float,
    profile: str | Path | Mapping[str, Any] | None = None,
    devices: Mapping[str, Mapping[str, Any]] | None = None,
    mode: str | None = None,
    mtu_bytes: float = 1500,
    propagation_s: float = 0.0,
    base_latency_s: float = 0.0,
    duration_s: float | None = None,
    issue: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The scenario document replaying ``plan``.

    ``traces`` maps each tenant's name to its trace: a :class:`~tailbound.traces.Trace`, or a
    source (``{"path": ..., "format": ...}`` or ``{"synthetic": {...}}``, see
    :mod:`tailbound.sim.sources`); ``profile`` is the SSD profile (a path, or its JSON document)
    of every device, unless ``devices`` gives a device's own scenario table (``kind``,
    ``profile``, limits; keyed by :func:`~tailbound.plan.device_name`). ``mode`` overrides the
    plan's limit mode at every priority queue (to compare shaping and demotion on one plan);
    ``issue`` gives a tenant's issue discipline (closed loop), open loop otherwise.

    >>> from tailbound.model import Slo
    >>> from tailbound.plan import Bound, StageLimit, TenantPlan
    >>> from tailbound.stages import STORAGE_PATH
    >>> limit = StageLimit(0.5, 0.001)
    >>> t = TenantPlan("A", Slo(0.05), "s0", "ssd0", {s: 0 for s in STORAGE_PATH},
    ...                {s: limit for s in STORAGE_PATH}, Bound(0.04, "demo"))
    >>> doc = scenario_from_plan(
    ...     Plan("demo", 1, [t]),
    ...     {"A": {"synthetic": {"kind": "poisson", "rate": 10, "duration_s": 1}}},
    ...     profile={"bandwidthTable": [{"requestSize": 4096, "readBandwidth": 1e8,
    ...                                  "writeBandwidth": 1e8}]},
    ...     link_bandwidth_bytes_per_s=125e6)
    >>> sorted(q["queue"] for q in doc["queues"])
    ['client-A.egress', 'client-A.ingress', 's0.egress', 's0.ingress', 's0.ssd0']
    """
    if mode is not None and mode not in ("shaping", "demotion"):
        raise ValueError(f"mode must be 'shaping' or 'demotion', got {mode!r}")
    missing = [t.name for t in plan.tenants if t.name not in traces]
    if missing:
        raise ConfigError(None, f"no trace given for planned tenants {missing}")
    hosts = sorted({t.server for t in plan.tenants} | {client_name(t) for t in plan.tenants})
    doc: dict[str, Any] = {
        "network": {
            "bandwidth_bytes_per_s": link_bandwidth_bytes_per_s,
            "mtu_bytes": mtu_bytes,
            "propagation_s": propagation_s,
        },
        "hosts": [{"name": h} for h in hosts],
        "devices": _devices(plan, profile, devices or {}, base_latency_s),
        "workloads": [
            _workload(t, traces[t.name], (issue or {}).get(t.name)) for t in plan.tenants
        ],
        "queues": [{"queue": q, **table} for q, table in queue_tables(plan, mode=mode).items()],
    }
    if duration_s is not None:
        doc["duration_s"] = duration_s
    return doc


def _devices(
    plan: Plan,
    profile: str | Path | Mapping[str, Any] | None,
    tables: Mapping[str, Mapping[str, Any]],
    base_latency_s: float,
) -> list[dict[str, Any]]:
    used = sorted({(device_name(t), t.server) for t in plan.tenants if t.device is not None})
    rule = {k: v for k, v in plan.dispatch.to_json().items() if v is not None}
    out = []
    for name, host in used:
        if name in tables:
            table = {**tables[name], "name": name, "host": host}
        elif profile is None:
            raise ConfigError(None, f"no profile for device {name!r} of the plan")
        else:
            doc = str(profile) if isinstance(profile, str | Path) else dict(profile)
            table = {"name": name, "host": host, "profile": doc, "base_latency_s": base_latency_s}
            array = profile_array(profile)
            if array is not None:
                table["array"] = array
        control = control_table(plan, name)
        if control is not None:
            table["control"] = control
        out.append({**table, **rule})
    return out


def profile_array(profile: str | Path | Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``array`` section of a device profile (a path or its document), the array service
    model ``tailbound profile --depth-sweep`` fits (``docs/simulator.md``, "Arrays"); ``None``
    without one. The scenario's reader checks it."""
    doc = read_json(profile, what="the profile") if isinstance(profile, str | Path) else profile
    array = doc.get("array") if isinstance(doc, Mapping) else None
    return None if array is None else dict(array)


def _workload(
    t: TenantPlan, trace: Mapping[str, Any] | Trace, issue: Mapping[str, Any] | None
) -> dict[str, Any]:
    w: dict[str, Any] = {
        "name": t.name,
        "client": client_name(t),
        "trace": trace if isinstance(trace, Trace) else dict(trace),
    }
    if t.slo is not None:
        w["slo"] = {"latency_s": t.slo.latency_s, "percentile": t.slo.percentile}
    if t.device is not None:
        w["device"] = device_name(t)
    else:
        w["server"] = t.server
    if issue is not None:
        w["issue"] = dict(issue)
    return w


def replay_results(
    plan: Plan,
    traces: Mapping[str, Mapping[str, Any] | Trace],
    **scenario: Any,
) -> dict[str, WorkloadResult]:
    """Each planned tenant's requests (issue times and latencies) when ``traces`` are replayed
    through ``plan`` open loop to the end (``scenario``: the keyword arguments of
    :func:`scenario_from_plan`)."""
    from tailbound.sim.scenario import Scenario

    if not plan.tenants:
        return {}
    sim = Scenario.from_dict(scenario_from_plan(plan, traces, **scenario)).simulator()
    sim.run()
    results = sim.results()
    return {t.name: results[t.name] for t in plan.tenants}


def replay(
    plan: Plan,
    traces: Mapping[str, Mapping[str, Any] | Trace],
    **scenario: Any,
) -> dict[str, NDArray[np.float64]]:
    """Each planned tenant's request latencies (s) in :func:`replay_results`."""
    return {
        name: np.asarray(r.latency) for name, r in replay_results(plan, traces, **scenario).items()
    }
