"""Partitioned placement (tailbound.policies.partitioned): every tenant placed once, on servers
whose limits the policy checked, with a server count close to one placement's."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tailbound.characterize import RbCurve
from tailbound.experiments.wc_common import FIG54_SLOS, resample, server_cluster
from tailbound.model import Slo
from tailbound.policies.partitioned import place_partitioned
from tailbound.policies.placement import PlacementResult, WorkloadCompactorPolicy, place
from tailbound.policies.server import check
from tailbound.policies.workload import TenantCurves
from tailbound.stages import STORAGE_PATH


@pytest.fixture(scope="module")
def fleet(wc62_subset: list[TenantCurves]) -> list[TenantCurves]:
    return resample(wc62_subset, 240, np.random.default_rng(5), slos=FIG54_SLOS, scale=(0.8, 1.2))


def checked(result: PlacementResult, tenants: list[TenantCurves]) -> None:
    """Each tenant on exactly one server or rejected, each server's limits pass the check,
    server names unique."""
    placed = Counter(p.workload.name for s in result.servers for p in s.tenants)
    assert all(n == 1 for n in placed.values())
    assert set(placed) | set(result.rejected) == {w.name for w in tenants}
    names = [s.config.name for s in result.servers]
    assert len(set(names)) == len(names)
    for s in result.servers:
        if s.tenants:
            assert check(s.tenants, s.rate, s.bucket, s.devices), s.config.name


def test_one_partition_is_the_single_placement(fleet: list[TenantCurves]) -> None:
    single = place(
        fleet, server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True
    )
    one = place_partitioned(
        fleet, server_cluster(), WorkloadCompactorPolicy, partitions=1, grow=True
    )
    assert [[p.workload.name for p in s.tenants] for s in one.result.servers] == [
        [p.workload.name for p in s.tenants] for s in single.servers
    ]


def test_partitions_cost_few_servers(fleet: list[TenantCurves]) -> None:
    single = place(
        fleet, server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True
    )
    parts = place_partitioned(
        fleet, server_cluster(), WorkloadCompactorPolicy, partitions=3, grow=True
    )
    checked(parts.result, fleet)
    assert not parts.result.rejected
    assert parts.partitions == 3 and len(parts.part_seconds) == 3
    # the seam: each partition's last servers are re-placed together, never worse
    assert parts.tail_saved >= 0
    assert parts.result.servers_used <= single.servers_used + 3
    assert parts.result.servers_used <= 1.1 * single.servers_used


def _flat(name: str, mean: float, slo_s: float = 1.0) -> TenantCurves:
    curve = RbCurve(np.array([mean, 1.0]), np.array([0.001, 0.0]), mean)
    return TenantCurves(name, Slo(slo_s), {s: curve for s in STORAGE_PATH})


def test_a_tenant_its_partition_refuses_is_placed_in_another() -> None:
    """Two servers, two partitions: partition 0 gets the heavy tenants (even arrivals), fills
    its one server and refuses the second heavy one, which partition 1's server still takes."""
    tenants = [
        _flat("heavy0", 0.45),
        _flat("light0", 0.05),
        _flat("heavy1", 0.45),
        _flat("light1", 0.05),
        _flat("heavy2", 0.45),
        _flat("light2", 0.05),
    ]
    cluster = server_cluster(servers=2)
    single = place(tenants, cluster, WorkloadCompactorPolicy(), fast_first_fit=True)
    parts = place_partitioned(tenants, cluster, WorkloadCompactorPolicy, partitions=2)
    checked(parts.result, tenants)
    assert parts.rescued >= 1
    assert sorted(parts.result.rejected) == sorted(single.rejected)
    on = {p.workload.name: s.config.name for s in parts.result.servers for p in s.tenants}
    assert on["heavy0"] == "server000" and on["light0"] == "server001"


def test_windowed_partitions_stay_valid(fleet: list[TenantCurves]) -> None:
    """Partitions trying only their last 4 servers: every tenant placed once on a checked
    server, within 10 % of one unbounded placement's servers on this fleet."""
    single = place(
        fleet, server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True
    )
    parts = place_partitioned(
        fleet, server_cluster(), WorkloadCompactorPolicy, partitions=3, grow=True, window=4
    )
    checked(parts.result, fleet)
    assert not parts.result.rejected
    assert parts.result.servers_used <= 1.1 * single.servers_used


def test_one_partition_with_a_window_is_the_windowed_placement(fleet: list[TenantCurves]) -> None:
    single = place(
        fleet, server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True, window=4
    )
    one = place_partitioned(
        fleet, server_cluster(), WorkloadCompactorPolicy, partitions=1, grow=True, window=4
    )
    assert [[p.workload.name for p in s.tenants] for s in one.result.servers] == [
        [p.workload.name for p in s.tenants] for s in single.servers
    ]
