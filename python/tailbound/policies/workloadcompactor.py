"""WorkloadCompactor (thesis ch. 5; Zhu, Kozuch, Harchol-Balter, SoCC'17): choose every tenant's
token-bucket rate limits jointly with its placement, so tenants pack onto few servers while every
tail-latency SLO holds.

The pieces:

- priorities by SLO (:func:`priority_levels`): tighter SLO, higher priority; equal SLOs share a
  level (§5.2.1);
- the per-server LP (:mod:`tailbound.policies.wc_lp`, §5.2.2, Eq. 5.4 and 5.7);
- the latency check (:func:`tailbound.policies.server.check`, Eq. 5.5 plus shaper delays);
- first-fit / fast-first-fit placement with re-optimisation on arrival and departure
  (:mod:`tailbound.policies.placement`, §5.2.3);
- :mod:`tailbound.policies.placement_policies` builds it or one of the baselines (by name through
  :mod:`tailbound.policies.registry`);
- :func:`to_plan` turns a placement into the :class:`~tailbound.plan.Plan` hand-off.
"""

from __future__ import annotations

from collections.abc import Iterable

from tailbound.dnc.device import LOW_PRIORITY_MPL, DeviceLimits
from tailbound.model import Cluster
from tailbound.plan import (
    PRIORITY_LEVELS,
    Bound,
    DispatchRule,
    Plan,
    Rejection,
    StageLimit,
    TenantPlan,
)
from tailbound.policies.placement import (
    PlacementResult,
)
from tailbound.policies.server import REFERENCE, ServerModel
from tailbound.profiles import SsdProfile
from tailbound.stages import STORAGE_PATH, Stage

#: The analysis behind a placement's bounds: WorkloadCompactor's latency check (Eq. 5.5 with
#: the shapers' delays, :func:`tailbound.policies.server.check`), a worst-case bound; with the
#: reference system's server model it is named ``wc-check-reference``.
ANALYSIS = "wc-check"


#: The dispatcher's default limit on the requests of one level in service: 1, so a level is
#: served first come first served while the device shares among levels (docs/dnc.md, "The
#: storage stage"); on wc62 it takes WorkloadCompactor from 24 servers to 12.
LEVEL_MPL = 1


def server_model(
    profile: SsdProfile,
    link_bytes_per_s: float,
    mtu_bytes: float,
    low_priority_work_s: float | None = None,
    level_mpl: int | None = LEVEL_MPL,
) -> ServerModel:
    """The sound server model of docs/dnc.md ("The storage stage") for devices of ``profile``
    behind the dispatch rule :func:`dispatch_rule` (with its cap on the work in service below
    the top level when ``low_priority_work_s`` is given, and at most ``level_mpl`` requests of
    one level in service, ``None`` for no such limit), on links of ``link_bytes_per_s``."""
    device = DeviceLimits.of(profile, low_priority_work_s, level_mpl)
    return ServerModel(device, mtu_bytes / link_bytes_per_s)


def dispatch_rule(model: ServerModel) -> DispatchRule:
    """What the enforcers must apply for ``model``'s bounds to hold: the profile's MPLs and byte
    limits, nothing less important joining a request in service (thesis §2.2.1), the cap on
    less important work and the limit on one level's requests in service, if any."""
    if model.device is None:
        return DispatchRule()
    return DispatchRule(
        low_priority_mpl=LOW_PRIORITY_MPL,
        low_priority_work_s=model.device.low_priority_work_s,
        level_mpl=model.device.level_mpl,
    )


def priority_levels(slos: Iterable[float]) -> dict[float, int]:
    """Priority level of each distinct SLO: 0 is the highest (the tightest SLO).

    Examples
    --------
    >>> priority_levels([0.45, 0.1, 0.95, 0.1])
    {0.1: 0, 0.45: 1, 0.95: 2}
    """
    return {slo: level for level, slo in enumerate(sorted(set(slos)))}


def to_plan(
    result: PlacementResult,
    cluster: Cluster,
    *,
    policy: str,
    safety_margin: float,
    meta: dict[str, object] | None = None,
    priority_levels_limit: int = PRIORITY_LEVELS,
    memo: dict[object, list[TenantPlan]] | None = None,
) -> Plan:
    """The :class:`Plan` of a placement: per tenant its server, device, client host, priority
    and ``(r, b)`` per stage, and its predicted bound.

    Priorities are dense ranks of the SLOs (the analysis orders a server's tenants by SLO), over
    the whole cluster when they fit in ``priority_levels_limit`` levels, else per server (every
    queue carries one server's tenants only: its own link, device and client host, so per-server
    ranks enforce the same order); a server with more SLO classes than that cannot be enforced as
    analysed, and is an error.

    ``memo``, a dict kept by the caller between calls on successive placements of one cluster
    under one server model (the control plane's), keeps each server's tenant entries: a server
    whose tenants, limits, priority levels and client VMs are unchanged since the previous call
    reuses them instead of recomputing its bounds (the entries are immutable; the memo keeps
    the last call's servers only)."""
    levels = _levels(result, priority_levels_limit)
    analysis = ANALYSIS if result.model is not REFERENCE else f"{ANALYSIS}-reference"
    clients = _client_hosts(result, cluster)
    capacity = {
        Stage.NET_IN: cluster.link_bytes_per_s,
        Stage.STORAGE: None,
        Stage.NET_OUT: cluster.link_bytes_per_s,
    }
    tenants: list[TenantPlan] = []
    kept: dict[object, list[TenantPlan]] = {}
    for i, server in enumerate(result.servers):
        if not server.tenants:
            continue
        key = None
        if memo is not None:
            key = (
                server.config.name,
                id(result.model),
                tuple((p.workload, p.device) for p in server.tenants),
                server.rate.tobytes(),
                server.bucket.tobytes(),
                tuple(sorted(levels[i].items())),
                tuple(clients.get(p.workload.name) for p in server.tenants),
            )
            if key in memo:
                kept[key] = memo[key]
                tenants.extend(memo[key])
                continue
        bounds = server.bounds(result.model)
        mine = []
        for row, p in enumerate(server.tenants):
            limits = {
                stage: StageLimit(
                    rate=float(server.rate[row, s]),
                    bucket_s=float(server.bucket[row, s]),
                    capacity_per_s=capacity[stage],
                )
                for s, stage in enumerate(STORAGE_PATH)
            }
            host, vm = clients.get(p.workload.name, (None, None))
            mine.append(
                TenantPlan(
                    name=p.workload.name,
                    slo=p.workload.slo,
                    server=server.config.name,
                    device=server.config.devices[p.device],
                    client_host=host,
                    client_vm=vm,
                    priority=dict.fromkeys(STORAGE_PATH, levels[i][p.workload.slo_s]),
                    limits=limits,
                    bound=Bound(float(bounds[row]), analysis),
                )
            )
        tenants.extend(mine)
        if key is not None:
            kept[key] = mine
    if memo is not None:
        memo.clear()
        memo.update(kept)
    return Plan(
        policy=policy,
        priority_levels=priority_levels_limit,
        dispatch=dispatch_rule(result.model),
        servers_used=result.servers_used,
        tenants=tenants,
        rejected=[
            Rejection(name, result.reasons.get(name, "fits on no server"))
            for name in result.rejected
        ],
        safety_margin=safety_margin,
        meta=dict(meta or {}),
    )


def _levels(result: PlacementResult, limit: int) -> dict[int, dict[float, int]]:
    """Each server's SLO → priority level (see :func:`to_plan`)."""
    servers = {i: [p.workload.slo_s for p in s.tenants] for i, s in enumerate(result.servers)}
    overall = priority_levels(slo for slos in servers.values() for slo in slos)
    if len(overall) <= limit:
        return dict.fromkeys(servers, overall)
    out = {i: priority_levels(slos) for i, slos in servers.items()}
    for i, ranks in out.items():
        if len(ranks) > limit:
            raise ValueError(
                f"server {result.servers[i].config.name} holds {len(ranks)} SLO classes, more "
                f"than the {limit} priority levels the enforcers offer"
            )
    return out


def _client_hosts(
    result: PlacementResult, cluster: Cluster
) -> dict[str, tuple[str | None, str | None]]:
    """Client VMs as the WorkloadCompactor system grouped them: all tenants of a server on one
    client host of their own, so the client's link carries exactly the server's flows and the
    two-hop network bound equals Eq. 5.1 at the server's link. Tenants of a server that does not
    get a host of its own (too few hosts or VMs) get ``None``."""
    out: dict[str, tuple[str | None, str | None]] = {}
    free = list(cluster.client_hosts)
    for server in result.servers:
        if not server.tenants:
            continue
        host = next((h for h in free if len(h.vms) >= len(server.tenants)), None)
        if host is not None:
            free.remove(host)
        for k, t in enumerate(server.tenants):
            out[t.workload.name] = (host.name, host.vms[k]) if host else (None, None)
    return out
