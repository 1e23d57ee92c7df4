"""Predicted against measured for Aequitas tenants (``GET /clusters/{c}/report``; docs/service.md,
"Aequitas through the service").

Aequitas promises per class, not per tenant: of the RPCs asking a class, the Plan predicts the
share admitted there (``aequitas.prediction.admitted_share``), and those that run there keep the
class SLO at its percentile. An agent replaying its host's RPCs (:mod:`tailbound.service.
rpc_agent`) posts one summary per tenant and class (``rpc_class``): ``count`` RPCs asked the
class, ``admitted`` ran at it, and ``percentiles`` the RNL of those that ran there in the SLO's
unit (the tail ``verify`` takes: middle 80 % by issue time). It is stored as the measurement of
``tenant/class`` (:func:`row_name`: a tenant's name has no ``/``), the downgraded RPCs in the
row's ``beyond_buckets`` (the RPCs sent beyond the class's admission).

The report adds to each Aequitas tenant's row its ``classes``: per class it asks above the
lowest, the SLO, the predicted share, the latest window of every host sending it (counts summed
over the hosts, the tail the largest of theirs: a conservative merge), the measured share, and
flags judged by ``verify``'s own :class:`~tailbound.verify_aequitas.ClassCheck`:
``beyond_slo`` (the tail above the SLO), ``approaching_slo`` (at least
:data:`~tailbound.service.reports.NEAR` of it) and ``share_below_prediction`` (admitted below
``(1 − SHARE_TOLERANCE)`` × the prediction). The tenant's own ``measured_s`` is its highest
class's tail (the class its ``bound`` is the SLO of) and its flags the union of its classes'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tailbound.service.db import MeasurementRow
from tailbound.service.problems import Problem
from tailbound.service.reports import NEAR, measured_at
from tailbound.verify_aequitas import ClassCheck

#: Separates a tenant's name from its class in a measurement's ``tenant`` column.
SEP = "/"


def row_name(tenant: str, rpc_class: str | None) -> str:
    """The name a summary is stored under: the tenant, or ``tenant/class`` for one class."""
    return tenant if rpc_class is None else f"{tenant}{SEP}{rpc_class}"


def beyond(summary: Any) -> int:
    """What the row's ``beyond_buckets`` holds: the summary's, or for one class the RPCs that
    asked it and were downgraded."""
    if summary.rpc_class is None:
        return int(summary.beyond_buckets)
    return int(summary.count - summary.admitted)


def check_summary(summary: Any, i: int) -> None:
    """422 naming the field: ``rpc_class`` without ``admitted`` or the reverse, more admitted
    than asked, or ``beyond_buckets`` given for a class (its downgrades are ``count −
    admitted``)."""
    where = f"body.tenants[{i}]"
    if (summary.rpc_class is None) != (summary.admitted is None):
        raise Problem(422, "rpc_class and admitted go together", f"{where}.admitted")
    if summary.admitted is not None and summary.admitted > summary.count:
        raise Problem(
            422,
            f"admitted ({summary.admitted}) exceeds the RPCs that asked ({summary.count})",
            f"{where}.admitted",
        )
    if summary.rpc_class is not None and summary.beyond_buckets:
        raise Problem(
            422,
            "not for a class (its downgraded RPCs are count - admitted)",
            f"{where}.beyond_buckets",
        )


def latest_by_host(s: Session, cluster_id: int) -> dict[str, list[MeasurementRow]]:
    """The latest class summary of every (``tenant/class``, host) of a cluster, by
    ``tenant/class``."""
    ids = (
        select(func.max(MeasurementRow.id))
        .where(MeasurementRow.cluster_id == cluster_id, MeasurementRow.tenant.contains(SEP))
        .group_by(MeasurementRow.tenant, MeasurementRow.host)
    )
    out: dict[str, list[MeasurementRow]] = {}
    for m in s.scalars(select(MeasurementRow).where(MeasurementRow.id.in_(ids))):
        out.setdefault(m.tenant, []).append(m)
    return out


def class_rows(plan: Mapping[str, Any], tenant: str, latest: Mapping[str, list[Any]]) -> list[dict]:
    """The ``classes`` of ``tenant``'s row (module documentation)."""
    section = plan["aequitas"]
    classes = section["network"]["classes"][:-1]
    mix = section["tenants"].get(tenant, {}).get("class_mix", {})
    predicted = section["prediction"]["admitted_share"]
    out = []
    for c in classes:
        if not mix.get(c["name"], 0) > 0:
            continue
        rows = latest.get(row_name(tenant, c["name"]), [])
        row: dict[str, Any] = {
            "class": c["name"],
            "slo_s": c["slo_s"],
            "slo_unit": c["slo_unit"],
            "percentile": c["percentile"],
            "predicted_share": predicted.get(c["name"], 1.0),
            "measured_s": None,
            "count": None,
            "admitted": None,
            "admitted_share": None,
            "hosts": sorted(m.host for m in rows),
            "plan_version": max((m.plan_version for m in rows), default=None),
            "flags": [],
        }
        if rows:
            count = sum(int(m.count) for m in rows)
            admitted = count - sum(int(m.beyond_buckets) for m in rows)
            tails = [measured_at(m.percentiles, c["percentile"]) for m in rows]
            tail = max((t[1] for t in tails if t is not None), default=math.nan)
            check = ClassCheck(
                tenant,
                c["name"],
                c["slo_s"],
                c["slo_unit"],
                c["percentile"],
                tail,
                tail,
                count,
                admitted,
                row["predicted_share"],
                admitted / count if count else math.nan,
            )
            flags = []
            if not check.met:
                flags.append("beyond_slo")
            elif tail >= NEAR * c["slo_s"]:
                flags.append("approaching_slo")
            if not check.share_held:
                flags.append("share_below_prediction")
            row.update(
                measured_s=None if math.isnan(tail) else tail,
                count=count,
                admitted=admitted,
                admitted_share=check.admitted_share if count else None,
                flags=flags,
            )
        out.append(row)
    return out


def with_classes(
    plan: Mapping[str, Any], rows: list[dict[str, Any]], latest: Mapping[str, list[Any]]
) -> list[dict[str, Any]]:
    """The report's ``rows`` of an Aequitas ``plan`` with each tenant's ``classes`` (module
    documentation); ``latest`` is :func:`latest_by_host`'s."""
    out = []
    for row in rows:
        classes = class_rows(plan, row["tenant"], latest)
        row = {**row, "classes": classes}
        top = next((c for c in classes if c["measured_s"] is not None), None)
        if top is not None and row["measured_s"] is None:
            row.update(
                measured_s=top["measured_s"],
                measured_percentile=top["percentile"],
                count=top["count"],
                plan_version=top["plan_version"],
            )
        flags = list(row["flags"])
        for c in classes:
            flags += [f for f in c["flags"] if f not in flags]
        row["flags"] = flags
        out.append(row)
    return out
