"""``tailbound compare`` on a cluster's registered tenants, run for its page (issue 31).

The service stores no ``tailbound compare`` runs, so a cluster's compare page computes one on
demand with the library's own :func:`tailbound.compare.compare` (never a second
implementation): every placement policy of the registry under both server models
(:data:`tailbound.compare.MODELS`), on the cluster's registered tenants (admitted or not), its
servers and its device profile, each plan saved in a temporary folder under ``<data>/scratch``
and replayed as ``tailbound verify --plan`` replays it; the folder is removed afterwards.

The cost is bounded: at most :data:`MAX_TENANTS` tenants (each run characterises, places and
replays them all: 2 × 5 runs of whole traces), and one comparison at a time per server
(:data:`RUNNING`; a second request meanwhile is refused with 429 rather than queued).
"""

from __future__ import annotations

import math
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from tailbound.compare import MODELS, Comparison, Inputs, Outcome, cases, compare
from tailbound.policies.registry import names
from tailbound.service.db import TenantRow
from tailbound.service.engines import Context
from tailbound.service.pages import charts
from tailbound.service.problems import Problem

#: The most registered tenants a page's comparison runs on (else a 422 saying so).
MAX_TENANTS = 30
#: Held while a comparison runs: one at a time per server process.
RUNNING = threading.Lock()


@dataclass(frozen=True)
class CompareRun:
    """A comparison run for a page: the cluster, the tenants compared, those left out because
    they are given by a characterisation (no trace to replay), the outcomes, and the wall time
    (seconds) of the whole run."""

    cluster: str
    tenants: list[str]
    skipped: list[str]
    comparison: Comparison
    seconds: float
    models: tuple[str, ...] = MODELS


def run_compare(context: Context, rows: list[TenantRow], traces: Path, scratch: Path) -> CompareRun:
    """Compare every placement policy under both server models on the registered tenants
    ``rows`` of the cluster of ``context`` (traces in the store ``traces``), in a temporary
    folder under ``scratch``. A :class:`Problem` when the cluster has no device profile, no
    tenant with a trace, more than :data:`MAX_TENANTS` tenants, or a comparison is running."""
    from tailbound.service.admission import tenant_of

    if context.profile_path is None:
        raise Problem(
            409,
            f"cluster {context.name!r} has no device profile: placement policies need one",
            "profile",
        )
    if len(rows) > MAX_TENANTS:
        raise Problem(
            422,
            f"cluster {context.name!r} has {len(rows)} registered tenants; the page compares "
            f"at most {MAX_TENANTS} (run `tailbound compare` on a tenants file for more)",
            "tenants",
        )
    skipped = [r.name for r in rows if "characterisation" in r.document]
    tenants = tuple(tenant_of(r, traces) for r in rows if r.name not in skipped)
    if not tenants:
        raise Problem(409, f"cluster {context.name!r} has no registered tenant with a trace")
    if not RUNNING.acquire(blocking=False):
        raise Problem(429, "a comparison is already running on this server: try again soon")
    try:
        start = time.perf_counter()
        scratch.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=scratch, prefix="compare-") as folder:
            inputs = Inputs(context.tenant_set(tenants), context.cluster, context.profile_path)
            result = compare(inputs, cases(names("placement")), Path(folder))
        return CompareRun(
            context.name,
            [t.name for t in tenants],
            skipped,
            result,
            time.perf_counter() - start,
        )
    finally:
        RUNNING.release()


def _by_policy(run: CompareRun) -> tuple[list[str], dict[tuple[str, str], Outcome]]:
    """The policies in case order, and each (policy, model)'s outcome."""
    found = {(o.case.policy, o.case.model or ""): o for o in run.comparison.outcomes}
    return list(dict.fromkeys(p for p, _ in found)), found


def compare_charts(run: CompareRun) -> dict[str, Markup]:
    """Two SVG bar charts over the placement policies, one bar per server model: the servers
    each plan uses, and the worst and median replayed latency over the bound (at the bound's
    percentile; above 1 a bound was exceeded). A run that did not run draws no bar."""
    policies, found = _by_policy(run)
    width = max(760, 150 * len(policies) + 300)

    def values(model: str, get: Any) -> list[float | None]:
        out: list[float | None] = []
        for p in policies:
            o = found.get((p, model))
            out.append(None if o is None or not o.ran else get(o))
        return out

    def ratio(x: float) -> float | None:
        return None if math.isnan(x) else x

    servers = charts.bar_chart(
        f"Servers used per placement policy on {run.cluster}'s {len(run.tenants)} tenants",
        policies,
        [(f"{m} model", values(m, lambda o: float(o.servers or 0))) for m in run.models],
        y_label="servers used",
        width=width,
    )
    replayed = charts.bar_chart(
        "Replayed latency over the bound per placement policy",
        policies,
        [
            (f"{k} ({m})", values(m, lambda o, k=k: ratio(o.worst if k == "worst" else o.median)))
            for k in ("worst", "median")
            for m in run.models
        ],
        y_label="replayed / bound (log scale)",
        refs=[charts.Ref("1: the bound", 1.0)],
        width=width,
        log_y=True,
    )
    return {"servers_chart": Markup(servers), "replay_chart": Markup(replayed)}
