"""What the pages show, read from the database and computed by the library's functions (never
a second implementation): the report rows of :func:`tailbound.service.reports.tenant_report`
(predicted against measured, with its flags), Plan diffs of
:func:`tailbound.service.plans.diff`, r-b curves of
:func:`tailbound.policies.workload.characterize` (as ``place`` and the placement engine make
them), replays of :func:`tailbound.verify.replay_saved` (as ``tailbound verify --plan``).
"""

from __future__ import annotations

import json
import math
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tailbound.model import cluster_from_json
from tailbound.service import plan_store
from tailbound.service.db import (
    AgentRow,
    ClusterRow,
    DecisionRow,
    MeasurementRow,
    PlanRow,
    TenantRow,
)
from tailbound.service.engines import Context
from tailbound.service.plans import diff
from tailbound.service.problems import Problem
from tailbound.service.reports import tenant_report

#: Plan versions whose diffs the history page shows at once (newest first).
HISTORY_PAGE = 20
#: Measurements of one tenant drawn at most (the newest).
MEASUREMENTS_SHOWN = 500
#: The verdicts, by the report's flags (the first that applies).
VERDICTS = (
    ("beyond_characterisation", "beyond its characterisation"),
    ("beyond_bound", "beyond its bound"),
    ("approaching_bound", "approaching its bound"),
)


def verdict(row: dict[str, Any]) -> tuple[str, str]:
    """A report row's verdict: a key for styling and the words, from its flags
    (:mod:`tailbound.service.reports`): beyond its characterisation, beyond its bound,
    approaching its bound, meeting its bound, or not measured.

    >>> verdict({"flags": ["approaching_bound"], "measured_s": 0.0095})
    ('approaching', 'approaching its bound')
    >>> verdict({"flags": [], "measured_s": None})
    ('unmeasured', 'not measured')
    """
    for flag, words in VERDICTS:
        if flag in row["flags"]:
            return flag.split("_")[0], words
    if row.get("measured_s") is None:
        return "unmeasured", "not measured"
    return "meeting", "meeting its bound"


def slo_text(doc: dict[str, Any]) -> str:
    """A tenant's SLO in words from a Plan entry or a tenants-file entry: graduated grades
    (``90% ≤ 5 ms, 99% ≤ 50 ms``) or the single pair (``99.9% ≤ 10 ms``).

    >>> slo_text({"slo_s": 0.01, "percentile": 0.999})
    '99.9% ≤ 10 ms'
    >>> slo_text({"slo_grades": [[0.005, 0.9], [0.05, 0.99]]})
    '90% ≤ 5 ms, 99% ≤ 50 ms'
    """
    grades = doc.get("slo_grades")
    if grades:
        return ", ".join(f"{100 * f:.4g}% ≤ {seconds(s)}" for s, f in grades)
    if doc.get("slo_s") is None:
        return "best effort"
    return f"{100 * (doc.get('percentile') or 1.0):.4g}% ≤ {seconds(doc['slo_s'])}"


def seconds(v: float | None) -> str:
    """A latency for a table: ``10 ms``, ``1.2 s``, ``250 µs``; ``–`` for none, ``∞``."""
    if v is None:
        return "–"
    if math.isinf(v):
        return "∞"
    if abs(v) >= 1:
        return f"{v:.3g} s"
    if abs(v) >= 1e-3:
        return f"{v * 1e3:.3g} ms"
    return f"{v * 1e6:.3g} µs"


def current_plan(s: Session, row: ClusterRow) -> dict[str, Any]:
    """The cluster's current Plan document (an empty one before the first admission)."""
    if row.version == 0:
        return {"tenants": [], "meta": {"version": 0}}
    doc = plan_store.version_text(s, row.id, row.version)
    if doc is None:
        raise Problem(404, f"cluster {row.name!r} has no Plan version {row.version}", "version")
    return dict(json.loads(doc))


def latest_measurements(s: Session, row: ClusterRow) -> dict[str, MeasurementRow]:
    """Each tenant's latest measurement on the cluster (what ``GET …/report`` reads)."""
    latest_ids = (
        select(func.max(MeasurementRow.id))
        .where(MeasurementRow.cluster_id == row.id)
        .group_by(MeasurementRow.tenant)
    )
    return {
        m.tenant: m
        for m in s.scalars(select(MeasurementRow).where(MeasurementRow.id.in_(latest_ids)))
    }


def report_rows(s: Session, row: ClusterRow, plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's row per tenant of ``plan`` (the API's), with its verdict and SLO words."""
    latest = latest_measurements(s, row)
    out = []
    for t in plan["tenants"]:
        r = tenant_report(t, latest.get(t["name"]))
        r["verdict"] = verdict(r)
        r["slo"] = slo_text(t)
        r["server"], r["device"], r["client_host"] = t["server"], t["device"], t["client_host"]
        out.append(r)
    return out


def overview(s: Session, row: ClusterRow) -> dict[str, Any]:
    """A cluster's page: its hosts with the tenants of its current Plan on each, the report
    rows, the tenants by state and the agents."""
    cluster = cluster_from_json(row.document, f"cluster {row.name}")
    plan = current_plan(s, row)
    rows = report_rows(s, row, plan)
    servers = [
        {
            "name": server.name,
            "devices": list(server.devices),
            "tenants": [r for r in rows if r["server"] == server.name],
        }
        for server in cluster.servers
    ]
    clients = [
        {
            "name": c.name,
            "vms": list(c.vms),
            "tenants": [r for r in rows if r["client_host"] == c.name],
        }
        for c in cluster.client_hosts
    ]
    tenants = list(
        s.scalars(select(TenantRow).where(TenantRow.cluster_id == row.id).order_by(TenantRow.id))
    )
    agents = list(s.scalars(select(AgentRow).where(AgentRow.cluster == row.name)))
    return {
        "cluster": row,
        "servers": servers,
        "clients": clients,
        "rows": rows,
        "tenants": tenants,
        "waiting": [t.name for t in tenants if t.state != "admitted"],
        "admitted": [t.name for t in tenants if t.state == "admitted"],
        "agents": agents,
        "plan": plan,
    }


def history(s: Session, row: ClusterRow, *, before: int | None = None) -> dict[str, Any]:
    """Up to :data:`HISTORY_PAGE` Plan versions, newest first from ``before`` (default the
    current), each with its diff from its predecessor."""
    top = row.version if before is None else min(before, row.version)
    low = max(1, top - HISTORY_PAGE + 1)
    plans = {
        p.version: p
        for p in s.scalars(
            select(PlanRow).where(
                PlanRow.cluster_id == row.id,
                PlanRow.version >= low - 1,
                PlanRow.version <= top,
            )
        )
    }
    texts = plan_store.version_texts(s, row.id, low - 1, top)
    versions = []
    for v in range(top, low - 1, -1):
        p = plans.get(v)
        if p is None:
            continue
        old = json.loads(texts[v - 1]) if v - 1 in texts else {"tenants": []}
        new = json.loads(texts[v])
        changes = diff(old, new)
        versions.append({"row": p, "diff": changes, "values": changed_values(old, new, changes)})
    return {"versions": versions, "older": low - 1 if low > 1 else None}


def changed_values(
    old: dict[str, Any], new: dict[str, Any], changes: dict[str, Any]
) -> dict[str, dict[str, tuple[Any, Any]]]:
    """For each tenant :func:`~tailbound.service.plans.diff` found changed, the before and after
    of each changed field that is a number or a string (nested fields are named only).

    >>> a = {"tenants": [{"name": "A", "latency_bound_s": 0.01, "priority": {"storage": 1}}]}
    >>> b = {"tenants": [{"name": "A", "latency_bound_s": 0.02, "priority": {"storage": 2}}]}
    >>> changed_values(a, b, diff(a, b))
    {'A': {'latency_bound_s': (0.01, 0.02)}}
    """
    before = {t["name"]: t for t in old.get("tenants", [])}
    after = {t["name"]: t for t in new.get("tenants", [])}
    scalar = (int, float, str, type(None))
    return {
        name: {
            f: (before[name].get(f), after[name].get(f))
            for f in fields
            if isinstance(before[name].get(f), scalar) and isinstance(after[name].get(f), scalar)
        }
        for name, fields in changes["changed"].items()
    }


def tenant_page(s: Session, row: ClusterRow, tenant: TenantRow) -> dict[str, Any]:
    """A tenant's page: its Plan entry (if admitted), report row, measurements over time (each
    the report's row against the current Plan's bound) and decisions."""
    plan = current_plan(s, row)
    entry = next((t for t in plan["tenants"] if t["name"] == tenant.name), None)
    measured = list(
        s.scalars(
            select(MeasurementRow)
            .where(MeasurementRow.cluster_id == row.id, MeasurementRow.tenant == tenant.name)
            .order_by(MeasurementRow.id.desc())
            .limit(MEASUREMENTS_SHOWN)
        )
    )[::-1]
    rows = []
    for m in measured:
        r = tenant_report(entry, m) if entry is not None else {"flags": [], "measured_s": None}
        r["verdict"] = verdict(r)
        r["at"] = m.created_at
        r["percentiles"] = dict(sorted(m.percentiles.items(), key=lambda kv: float(kv[0])))
        r["row"] = m
        rows.append(r)
    decisions = list(
        s.scalars(
            select(DecisionRow)
            .where(DecisionRow.cluster_id == row.id, DecisionRow.tenant == tenant.name)
            .order_by(DecisionRow.id)
        )
    )
    return {
        "cluster": row,
        "tenant": tenant,
        "entry": entry,
        "slo": slo_text(entry if entry is not None else tenant.document),
        "measurements": rows,
        "latest": rows[-1] if rows else None,
        "decisions": decisions,
        "version": row.version,
    }


# ------------------------------------------------------------------------------ r-b curves
class CurveCache:
    """The r-b curves of tenants by (cluster, tenant, trace hash), computed once each: a
    tenant's trace is immutable (stored by its hash), so its curves are too. Bounded to
    ``size`` tenants, least recently used out first."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._items: OrderedDict[tuple[int, str, str | None], dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, context: Context, cluster_id: int, tenant: TenantRow, traces: Path) -> Any:
        """``{stage: RbCurve}`` of ``tenant`` as the cluster's placement characterises it
        (:func:`tailbound.policies.workload.characterize`: every stage, the safety margin
        applied), or its network stages only when the cluster has no device profile."""
        # a tenant given by its characterisation has no trace; its document is immutable too
        key = (cluster_id, tenant.name, tenant.trace_sha256 or "characterisation")
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        curves = rb_curves(context, tenant, traces)
        with self._lock:
            self._items[key] = curves
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return curves


def rb_curves(context: Context, tenant: TenantRow, traces: Path) -> dict[str, Any]:
    """The r-b curves of one registered tenant (:meth:`CurveCache.get`)."""
    from tailbound.characterize import rb_curve
    from tailbound.characterize.prune import prune
    from tailbound.policies.workload import (
        DEFAULT_SEGMENTS,
        characterize,
        from_characterisation,
    )
    from tailbound.profiles import stage_model
    from tailbound.service.admission import tenant_of
    from tailbound.stages import NETWORK_PATH
    from tailbound.traces.readers import read_trace

    t = tenant_of(tenant, traces)
    link = context.cluster.link_bytes_per_s
    given = tenant.document.get("characterisation")
    if context.profile is not None:
        # the engine's own cache first (an admitted tenant of a placement cluster has the curves
        # it was placed with), read only: the engine iterates it while deciding; a tenant given
        # by its characterisation (placement clusters only) has no trace to characterise
        margin = context.options.get("safety_margin", 1.0)
        made = context.curves.get(t)
        if made is None and given is not None:
            made = from_characterisation(t, given, safety_margin=margin)
        elif made is None:
            made = characterize(
                t,
                read_trace(t.trace),
                profile=context.profile,
                link_bandwidth_bytes_per_s=link,
                safety_margin=margin,
            )
        return {str(stage): curve for stage, curve in made.curves.items()}
    return {
        str(stage): prune(
            rb_curve(read_trace(t.trace), stage_model(stage, link_bandwidth_bytes_per_s=link)),
            DEFAULT_SEGMENTS,
        )
        for stage in NETWORK_PATH
    }


# ------------------------------------------------------------------------------ verify
@dataclass(frozen=True)
class Replay:
    """A Plan version replayed in the simulator (``tailbound verify --plan``): per tenant its
    SLO, the Plan's bound and the replayed latencies."""

    version: int
    checks: list[dict[str, Any]]
    all_held: bool
    seconds: float


def replay(plan_text: str, version: int, scratch: Path) -> Replay:
    """Replay Plan ``plan_text`` with the inputs it records (:func:`tailbound.verify.replay_saved`,
    as ``tailbound verify --plan`` does); nothing is stored."""
    import time

    from tailbound.plan import Plan
    from tailbound.verify import replay_saved

    start = time.perf_counter()
    scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=scratch) as folder:
        path = Path(folder) / f"plan-v{version}.json"
        path.write_text(plan_text)
        plan = Plan.load(path)
        verification = replay_saved(plan, path)
    checks = [
        {
            "name": c.name,
            "slo_s": c.slo.latency_s,
            "percentile": c.slo.percentile,
            "bound_s": c.bound_s,
            "bound_percentile": c.bound_percentile,
            "achieved_s": c.achieved_s,
            "at_bound_s": c.at_bound_s,
            "worst_window_s": c.worst_window_s,
            "max_s": c.max_s,
            "requests": c.requests,
            "met": c.met,
            "bound_held": c.bound_held,
        }
        for c in verification.checks
    ]
    return Replay(version, checks, verification.all_held, time.perf_counter() - start)
