"""Predicted against measured, per tenant (``GET /clusters/{c}/report``).

For each tenant of the current Plan, the latest summary an agent posted is read at the tenant's
SLO percentile (the smallest measured fraction at or above it; none when the agent measured no
such fraction) and compared with the Plan's predicted bound and the SLO. Flags:

- ``beyond_bound``: the measured latency is above the predicted bound;
- ``approaching_bound``: it is at least :data:`NEAR` of the bound (and not above it);
- ``beyond_slo``: it is above the SLO's latency;
- ``beyond_characterisation``: requests went beyond the Plan's token buckets (the tenant's load
  left what it was admitted with).

>>> measured_at({"0.5": 0.001, "0.99": 0.004, "0.999": 0.009}, 0.995)
(0.999, 0.009)
>>> flags(0.0095, bound_s=0.01, slo_s=0.02, beyond_buckets=0)
['approaching_bound']
"""

from __future__ import annotations

from typing import Any

#: A measured tail at this fraction of its bound or more is "approaching" it.
NEAR = 0.9


def measured_at(percentiles: dict[str, float], percentile: float) -> tuple[float, float] | None:
    """The (fraction, latency) measured at the smallest fraction ≥ ``percentile``."""
    found = sorted((float(k), v) for k, v in percentiles.items() if float(k) >= percentile)
    return found[0] if found else None


def flags(
    measured_s: float | None, *, bound_s: float | None, slo_s: float | None, beyond_buckets: int
) -> list[str]:
    """The flags of one tenant (module docstring)."""
    out = []
    if measured_s is not None and bound_s is not None:
        if measured_s > bound_s:
            out.append("beyond_bound")
        elif measured_s >= NEAR * bound_s:
            out.append("approaching_bound")
    if measured_s is not None and slo_s is not None and measured_s > slo_s:
        out.append("beyond_slo")
    if beyond_buckets > 0:
        out.append("beyond_characterisation")
    return out


def tenant_report(plan_tenant: dict[str, Any], latest: Any | None) -> dict[str, Any]:
    """The row of one tenant: the Plan's entry ``plan_tenant`` (its JSON) and its latest
    measurement row (or None)."""
    percentile = plan_tenant.get("percentile")
    bound = plan_tenant.get("latency_bound_s")
    slo_s = plan_tenant.get("slo_s")
    row: dict[str, Any] = {
        "tenant": plan_tenant["name"],
        "slo_s": slo_s,
        "percentile": percentile,
        "predicted_s": bound,
        "measured_s": None,
        "measured_percentile": None,
        "count": None,
        "window_s": None,
        "host": None,
        "flags": [],
    }
    if latest is None:
        return row
    at = measured_at(latest.percentiles, percentile if percentile is not None else 1.0)
    measured = None if at is None else at[1]
    row.update(
        measured_s=measured,
        measured_percentile=None if at is None else at[0],
        count=latest.count,
        window_s=latest.window_s,
        host=latest.host,
        plan_version=latest.plan_version,
        beyond_buckets=latest.beyond_buckets,
        flags=flags(measured, bound_s=bound, slo_s=slo_s, beyond_buckets=latest.beyond_buckets),
    )
    return row
