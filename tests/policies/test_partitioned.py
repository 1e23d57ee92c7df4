"""Partitioned placement (tailbound.policies.partitioned): every tenant placed once, on servers
whose limits the policy checked, with a server count close to one placement's."""

from __future__ import annotations

import gc
import pickle
from collections import Counter

import numpy as np
import pytest

from tailbound.characterize import RbCurve
from tailbound.executor import Runner
from tailbound.experiments.wc_common import FIG54_SLOS, resample, server_cluster
from tailbound.model import Slo
from tailbound.policies.partitioned import _Options, _place_part, _Tenants, place_partitioned
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


def test_packed_tenants_travel_whole(fleet: list[TenantCurves]) -> None:
    """What a partition's worker unpacks is what the caller packed: names, SLOs, largest
    requests, every curve's points, mean, stage and name; tenants sharing a curves dict still
    share one (the placer's remembered refusals are keyed by it)."""
    shared = fleet[0].with_slo(0.25, "again")  # the same curves dict as fleet[0]
    tenants = [*fleet[:30], shared]
    packed = _Tenants.pack(tenants)
    assert packed is not None
    back = pickle.loads(pickle.dumps(packed)).unpack()
    assert [(w.name, w.slo, w.largest) for w in back] == [
        (w.name, w.slo, w.largest) for w in tenants
    ]
    for a, b in zip(back, tenants, strict=True):
        assert list(a.curves) == list(b.curves)
        for stage, c in b.curves.items():
            got = a.curves[stage]
            assert np.array_equal(got.rates, c.rates) and np.array_equal(got.buckets, c.buckets)
            assert (got.mean_rate, got.stage, got.name) == (c.mean_rate, c.stage, c.name)
            assert not got.rates.flags.writeable
    assert back[-1].curves is back[0].curves and back[1].curves is not back[0].curves
    odd = TenantCurves("odd", Slo(1.0), {STORAGE_PATH[0]: fleet[0].curves[STORAGE_PATH[0]]})
    assert _Tenants.pack([fleet[0], odd]) is None  # other stages: sent as they are


def test_a_local_pool_places_as_this_process_does(fleet: list[TenantCurves]) -> None:
    """Partitions placed by two worker processes (tenants packed, results as indices) give the
    placement this process gives, server by server, with the same work counted."""

    def run(runner: Runner) -> tuple[list[tuple[str, list[str], list[float]]], int]:
        out = place_partitioned(
            fleet[:120],
            server_cluster(),
            WorkloadCompactorPolicy,
            partitions=2,
            runner=runner,
            grow=True,
            window=8,
        )
        servers = [
            (s.config.name, [p.workload.name for p in s.tenants], s.rate.ravel().tolist())
            for s in out.result.servers
        ]
        return servers, out.result.configure_calls

    pooled = Runner(jobs=2)
    assert run(pooled) == run(Runner())
    assert pooled.restarts == 0


def test_a_worker_forgets_the_tenants_of_a_placed_partition(fleet: list[TenantCurves]) -> None:
    """After a partition placed in a worker (``forget``), no cache keeps its tenants alive:
    a worker's memory does not grow with the partitions it has placed."""
    renamed = [TenantCurves(f"forget{w.name}", w.slo, dict(w.curves), w.largest) for w in fleet]
    packed = _Tenants.pack(renamed[:40])
    del renamed
    options = _Options(WorkloadCompactorPolicy, True, True, 125e6, 8, forget=True)
    part = _place_part(options, (packed, server_cluster().servers))
    assert len(part.rejected) == 0 and sum(len(s.tenants) for s in part.servers) == 40
    del packed
    gc.collect()
    alive = [
        o for o in gc.get_objects() if isinstance(o, TenantCurves) and o.name.startswith("forget")
    ]
    assert alive == []
