from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import pytest

from tailbound.model import Cluster, Tenant
from tailbound.policies import registry
from tailbound.policies.events import load_events
from tailbound.policies.placement import place
from tailbound.policies.workload import TenantCurves, characterize_all
from tailbound.policies.workloadcompactor import priority_levels, to_plan
from tailbound.profiles import SsdProfile
from tailbound.stages import Stage
from tailbound.traces.readers import read_trace

#: The WorkloadCompactor system's own result on wc62 (data/README.md).
REFERENCE_SERVERS = 11
REFERENCE_SECONDS = 390.0


def test_priority_levels_tighter_slo_higher_priority() -> None:
    assert priority_levels([0.45, 0.1, 0.95, 0.1, 0.05]) == {0.05: 0, 0.1: 1, 0.45: 2, 0.95: 3}


def check_plan_bounds(result, cluster: Cluster) -> None:  # type: ignore[no-untyped-def]
    plan = to_plan(result, cluster, policy="workloadcompactor", safety_margin=1.0)
    for t in plan.tenants:
        assert t.latency_bound_s <= t.slo_s * (1 + 1e-9), t
        assert t.priority == dict.fromkeys(t.priority, t.priority[next(iter(t.priority))])


def test_plan_levels_fit_the_enforcers(
    wc62_subset: list[TenantCurves], wc62_cluster: Cluster
) -> None:
    """Twelve SLO classes on two servers: past the level limit the ranks are per server (each
    queue carries one server's tenants), in the order of the SLOs; a server with more classes
    than the enforcers' levels is refused."""
    distinct = [w.with_slo(0.5 + 0.05 * i) for i, w in enumerate(wc62_subset)]
    one = place(distinct, wc62_cluster, registry.build("workloadcompactor", "placement"))
    (full,) = [s for s in one.servers if s.tenants]
    halves = [slice(0, 6), slice(6, 12)]
    servers = [
        dataclasses.replace(
            wc62_cluster_server,
            tenants=full.tenants[h],
            rate=full.rate[h],
            bucket=full.bucket[h],
        )
        for h, wc62_cluster_server in zip(halves, one.servers[:2], strict=True)
    ]
    result = dataclasses.replace(one, servers=servers)
    plan = to_plan(result, wc62_cluster, policy="wc", safety_margin=1.0)
    plan.check()  # 12 classes do not fit 8 levels: ranked per server
    assert plan.levels_used() == 6
    for server in ("server000", "server001"):
        mine = sorted(
            (t.slo_s, t.priority[Stage.STORAGE]) for t in plan.tenants if t.server == server
        )
        assert [lv for _, lv in mine] == list(range(6))
    with pytest.raises(ValueError, match="priority levels"):
        to_plan(result, wc62_cluster, policy="wc", safety_margin=1.0, priority_levels_limit=5)


def test_workloadcompactor_subset_first_fit_and_fast(
    wc62_subset: list[TenantCurves], wc62_cluster: Cluster
) -> None:
    ff = place(wc62_subset, wc62_cluster, registry.build("workloadcompactor", "placement"))
    fff = place(
        wc62_subset,
        wc62_cluster,
        registry.build("workloadcompactor", "placement"),
        fast_first_fit=True,
    )
    assert not ff.rejected and not fff.rejected
    check_plan_bounds(ff, wc62_cluster)
    check_plan_bounds(fff, wc62_cluster)
    eb = place(wc62_subset, wc62_cluster, registry.build("effective-bandwidth", "placement"))
    assert ff.servers_used <= eb.servers_used


@pytest.mark.slow
def test_workloadcompactor_reference_run_at_most_11_servers(
    wc62_all: list[TenantCurves], wc62_cluster: Cluster
) -> None:
    for fff in (False, True):
        result = place(
            wc62_all,
            wc62_cluster,
            registry.build("workloadcompactor", "placement"),
            fast_first_fit=fff,
        )
        assert not result.rejected
        assert result.servers_used <= REFERENCE_SERVERS
        check_plan_bounds(result, wc62_cluster)


@pytest.mark.slow
def test_workloadcompactor_reference_events_end_on_at_most_11_servers(
    wc62_all: list[TenantCurves], wc62_cluster: Cluster, wc62_dir: Path
) -> None:
    events = load_events(wc62_dir / "events.csv", len(wc62_all))
    result = place(
        wc62_all, wc62_cluster, registry.build("workloadcompactor", "placement"), events=events
    )
    assert not result.rejected
    assert sum(len(s.tenants) for s in result.servers) == 62
    assert result.servers_used <= REFERENCE_SERVERS
    check_plan_bounds(result, wc62_cluster)


@pytest.mark.slow
def test_workloadcompactor_reference_run_end_to_end_faster_than_the_reference(
    wc62_tenants: list[Tenant], wc62_cluster: Cluster, wc62_dir: Path
) -> None:
    start = time.perf_counter()
    workloads = characterize_all(
        wc62_tenants,
        lambda c: read_trace(c.trace),
        profile=SsdProfile.load(wc62_dir / "profile_ssd.json"),
        link_bandwidth_bytes_per_s=wc62_cluster.link_bytes_per_s,
    )
    result = place(workloads, wc62_cluster, registry.build("workloadcompactor", "placement"))
    elapsed = time.perf_counter() - start
    assert result.servers_used <= REFERENCE_SERVERS and not result.rejected
    assert elapsed < REFERENCE_SECONDS
    assert np.isfinite(elapsed)
