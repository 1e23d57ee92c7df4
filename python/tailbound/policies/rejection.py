"""Why a tenant was not placed, with numbers (the placer's rejection reasons).

Two cases, told apart by trying the tenant alone on an empty server like the cluster's:

- **It does not fit even alone.** For WorkloadCompactor the best it could get alone is computed
  stage by stage: with no other tenant, a stage's bound under the server model is
  ``(c_s + b) / (1 − r [s shares its level])`` at the best point ``(r, b)`` of the stage's r-b
  curve (``c_s`` the model's packet terms; at the storage stage a level's own rates count only
  when the device lets a level's requests share it), the sum over stages is the smallest
  worst-case bound any limits give it, and the message names the stage that takes most of it:
  "alone on an empty server its worst-case bound is 53.1 ms against its SLO of 50 ms (storage: a
  burst of 42.7 ms of work at the device's full rate; …)". A mean rate above a queue's capacity is
  said as such. For a fixed-limit baseline, the bound its own limits give alone.
- **It fits alone, but every server refused it.** Then the closest server is named with the
  constraint that failed there. For WorkloadCompactor: the LP of that server with the newcomer,
  each Eq. 5.7 row given the same slack ``t`` seconds and ``t`` minimised
  (:func:`shortfall`), so ``t`` is how many seconds of buckets, blocking and packets too many
  the tightest level and device carry; the closest server is the one with the smallest ``t``
  (among the :data:`CLOSEST_OF` least loaded servers, so a large cluster costs a bounded number
  of LPs).
  A queue whose tenants' mean rates alone exceed its capacity is named first. For a fixed-limit
  baseline: the server whose worst tenant's bound over its SLO is smallest, that tenant's bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import highspy
import numpy as np

from tailbound.policies import wc_lp
from tailbound.policies.server import (
    RATE_CAP,
    SLO_SCALE,
    STORAGE,
    Placed,
    ServerModel,
    latency_bounds,
    queue_rate_sums,
)
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH

if TYPE_CHECKING:
    from tailbound.policies.placement import Policy, ServerState


def _ms(seconds: float) -> str:
    """A bound in milliseconds, one decimal."""
    return f"{seconds * 1e3:.1f} ms"


def _slo(seconds: float) -> str:
    """An SLO in milliseconds as given (50 ms, 0.5 ms)."""
    return f"{seconds * 1e3:.6g} ms"


def _queue_name(queue: int, config_devices: Sequence[str]) -> str:
    if queue == 0:
        return "the link in (net_in)"
    if queue == 1:
        return "the link out (net_out)"
    return f"device {config_devices[queue - 2]}"


def best_alone(workload: TenantCurves, model: ServerModel) -> tuple[float, list[float]]:
    """The smallest worst-case bound (s) any limits give ``workload`` alone on a server under
    ``model``, and its part at each stage (``net_in``, storage, ``net_out``): per stage the best
    point of the r-b curve (rates up to 0.999) for ``(c_s + b) / (1 − r [sharing])``."""
    parts = []
    for s, stage in enumerate(STORAGE_PATH):
        c = workload.curves[stage]
        keep = c.rates < RATE_CAP
        r = np.append(c.rates[keep], RATE_CAP)
        b = np.append(c.buckets[keep], float(c.bucket_at(RATE_CAP)))
        const = 0.0 if s == STORAGE else model.network_terms()
        share = s == STORAGE and model.shares_levels
        parts.append(float(np.min((const + b) / (1.0 - (r if share else 0.0)))))
    return sum(parts), parts


def _alone_reason_lp(workload: TenantCurves, model: ServerModel) -> str:
    slo = workload.slo_s
    for stage in STORAGE_PATH:
        mean = workload.mean(stage)
        if mean > RATE_CAP:
            return (
                f"its mean rate alone needs {mean:.3f} of {stage} (at most {RATE_CAP}): it "
                f"fits on no server"
            )
    total, parts = best_alone(workload, model)
    order = sorted(range(3), key=lambda s: -parts[s])
    top = order[0]
    first = (
        f"{STORAGE_PATH[top]}: a burst of {_ms(parts[top])} of work at the device's full rate"
        if top == STORAGE
        else f"{STORAGE_PATH[top]}: {_ms(parts[top])}"
    )
    rest = "; ".join(f"{STORAGE_PATH[s]}: {_ms(parts[s])}" for s in order[1:])
    detail = f"({first}; {rest})"
    if total > slo:
        return (
            f"alone on an empty server its worst-case bound is {_ms(total)} against its SLO "
            f"of {_slo(slo)} {detail}"
        )
    return (
        f"alone on an empty server its worst-case bound is {_ms(total)}, above the planner's "
        f"guard of {SLO_SCALE} × its SLO of {_slo(slo)} {detail}"
    )


def _alone_reason_fixed(
    workload: TenantCurves, policy: Policy, model: ServerModel, devices: int
) -> str:
    limits = policy.limits(workload)  # type: ignore[attr-defined]
    if limits is None:
        return (
            f"{policy.name} finds no rate within a queue's capacity that meets its SLO of "
            f"{_slo(workload.slo_s)} alone"
        )
    rate, bucket = limits
    alone = [Placed(workload, 0)]
    sums = queue_rate_sums(alone, rate[None, :], devices)
    if np.any(sums > RATE_CAP + 1e-9):
        return f"its {policy.name} rates alone exceed a queue's capacity ({float(sums.max()):.3f})"
    bound = float(latency_bounds(alone, rate[None, :], bucket[None, :], model)[0])
    return (
        f"alone on an empty server its {policy.name} limits give a worst-case bound of "
        f"{_ms(bound)} against its SLO of {_slo(workload.slo_s)}"
    )


def shortfall(
    tenants: Sequence[Placed], devices: int, model: ServerModel
) -> tuple[float, tuple[float, int] | None, int | None]:
    """How far the server's LP (:func:`~tailbound.policies.wc_lp.build_lp`) is from feasible:
    ``(t, (SLO, device), None)`` with ``t`` the smallest slack (s) that, added to the right-hand
    side of every Eq. 5.7 row, makes it feasible, and the level and device whose row needs it
    all; or ``(inf, None, q)`` when queue ``q``'s mean rates alone exceed its capacity (no slack
    on Eq. 5.7 helps). ``t = 0``: the LP is feasible."""
    means = np.array([[t.workload.curves[s].rates[0] for s in STORAGE_PATH] for t in tenants])
    sums = queue_rate_sums(tenants, means, devices)
    if np.any(sums > RATE_CAP):
        return float("inf"), None, int(np.argmax(sums))
    lp, r_vars = wc_lp.build_lp(tenants, devices, model)
    a = lp.dense()
    n_col = len(lp.cost)
    r_cols = np.arange(n_col - len(r_vars), n_col)
    eq57 = np.flatnonzero((a[:, r_cols] > 0).any(axis=1))  # Σ b + SLO' R <= SLO' − c rows
    a = np.hstack([a, np.zeros((a.shape[0], 1))])
    a[eq57, -1] = -1.0
    rows, cols = np.nonzero(a)
    starts = np.searchsorted(rows, np.arange(a.shape[0] + 1))
    cost = np.zeros(n_col + 1)
    cost[-1] = 1.0
    elastic = wc_lp.LpArrays(
        cost=cost,
        col_lower=np.append(lp.col_lower, 0.0),
        col_upper=np.append(lp.col_upper, highspy.kHighsInf),
        row_lower=lp.row_lower,
        row_upper=lp.row_upper,
        start=starts.astype(np.int32),
        index=cols.astype(np.int32),
        value=a[rows, cols],
    )
    h = wc_lp.solver()
    elastic.pass_to(h)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return float("inf"), None, None
    x = np.array(h.getSolution().col_value)
    t = max(0.0, float(x[-1]))
    excess = a[eq57, :-1] @ x[:-1] - lp.row_upper[eq57]
    return t, r_vars[int(np.argmax(excess))], None


#: Servers examined for the closest one: the least loaded (smallest largest queue rate sum), so a
#: rejection on a large full cluster solves a bounded number of LPs.
CLOSEST_OF = 16


def _least_loaded(servers: Sequence[ServerState]) -> list[ServerState]:
    """The :data:`CLOSEST_OF` servers in use with the smallest largest queue rate sum, in
    cluster order among equals."""
    used = [s for s in servers if s.tenants]
    load = [float(queue_rate_sums(s.tenants, s.rate, s.devices).max()) for s in used]
    order = sorted(range(len(used)), key=lambda i: (load[i], i))[:CLOSEST_OF]
    return [used[i] for i in sorted(order)]


def _full_reason_lp(
    workload: TenantCurves, servers: Sequence[ServerState], model: ServerModel
) -> str:
    found: list[tuple[float, str]] = []
    for server in _least_loaded(servers):
        name = server.config.name
        for d in range(server.devices):
            tenants = [*server.tenants, Placed(workload, d)]
            t, level, queue = shortfall(tenants, server.devices, model)
            if level is not None:
                slo, device = level
                found.append(
                    (
                        t,
                        f"on the closest server, {name}, the tenants of SLO {_slo(slo)} on "
                        f"device {server.config.devices[device]} would carry {_ms(t)} more of "
                        f"buckets, blocking and packets than their SLO allows (Eq. 5.7, over "
                        f"the rate the more important levels leave)",
                    )
                )
            elif queue is not None:
                means = np.array([[p.workload.mean(s) for s in STORAGE_PATH] for p in tenants])
                used = float(queue_rate_sums(tenants, means, server.devices)[queue])
                found.append(
                    (
                        float("inf"),
                        f"on the closest server, {name}, the mean rates on "
                        f"{_queue_name(queue, server.config.devices)} would sum to {used:.3f} "
                        f"(at most {RATE_CAP})",
                    )
                )
    if not found:
        return "it fits alone on an empty server, but on none of the cluster's servers"
    return f"the cluster is full: {min(found, key=lambda f: f[0])[1]}"


def _full_reason_fixed(
    workload: TenantCurves, servers: Sequence[ServerState], policy: Policy, model: ServerModel
) -> str:
    best: tuple[float, str] | None = None
    for server in _least_loaded(servers):
        for d in range(server.devices):
            tenants = [*server.tenants, Placed(workload, d)]
            rates = [policy.limits(p.workload) for p in tenants]  # type: ignore[attr-defined]
            if any(r is None for r in rates):
                continue
            rate = np.stack([r[0] for r in rates])
            bucket = np.stack([r[1] for r in rates])
            sums = queue_rate_sums(tenants, rate, server.devices)
            name = server.config.name
            if np.any(sums > RATE_CAP + 1e-9):
                q = int(np.argmax(sums))
                ratio = float("inf")
                text = (
                    f"on the closest server, {name}, the rates on "
                    f"{_queue_name(q, server.config.devices)} would sum to {float(sums[q]):.3f}"
                    f" (at most {RATE_CAP})"
                )
            else:
                bounds = latency_bounds(tenants, rate, bucket, model)
                over = bounds / np.array([p.workload.slo_s for p in tenants])
                k = int(np.argmax(over))
                ratio = float(over[k])
                who = "its" if k == len(tenants) - 1 else f"{tenants[k].workload.name}'s"
                text = (
                    f"on the closest server, {name}, {who} worst-case bound would be "
                    f"{_ms(float(bounds[k]))} against an SLO of {_slo(tenants[k].workload.slo_s)}"
                )
            if best is None or ratio < best[0]:
                best = (ratio, text)
    if best is None:
        return "it fits alone on an empty server, but on none of the cluster's servers"
    return f"the cluster is full: {best[1]}"


def why_rejected(
    workload: TenantCurves,
    servers: Sequence[ServerState],
    policy: Policy,
    devices: int,
    model: ServerModel,
) -> str:
    """The reason, with numbers, that ``workload`` fits on none of ``servers`` under ``policy``
    (an empty server has ``devices`` devices; see the module docstring)."""
    lp = getattr(policy, "screen", None) is not None and hasattr(policy, "lp_solves")
    fixed = hasattr(policy, "limits")
    if policy.configure([Placed(workload, 0)], devices) is None:
        if lp:
            return _alone_reason_lp(workload, model)
        if fixed:
            return _alone_reason_fixed(workload, policy, model, devices)
        return f"it does not meet its SLO of {_slo(workload.slo_s)} even alone on an empty server"
    if lp:
        return _full_reason_lp(workload, servers, model)
    if fixed:
        return _full_reason_fixed(workload, servers, policy, model)
    return "the cluster is full: it fits alone on an empty server, but on none of its servers"
