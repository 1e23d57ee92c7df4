from __future__ import annotations

import numpy as np
import pytest

from tailbound.model import Cluster, Server
from tailbound.policies import registry
from tailbound.policies.events import Event
from tailbound.policies.placement import Placer, place
from tailbound.policies.workload import TenantCurves

POLICIES = [
    "workloadcompactor",
    "effective-bandwidth",
    "average-rate:1.5",
    "average-rate:2",
    "knee",
]


def small_cluster(servers: int = 12, devices: int = 1) -> Cluster:
    return Cluster(
        125e6,
        tuple(Server(f"s{i}", tuple(f"ssd{d}" for d in range(devices))) for i in range(servers)),
    )


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fff", [False, True])
def test_placement_meets_every_slo(wc62_subset: list[TenantCurves], policy: str, fff: bool) -> None:
    result = place(
        wc62_subset, small_cluster(), registry.build(policy, "placement"), fast_first_fit=fff
    )
    for server in result.servers:
        if server.tenants:
            bounds = server.bounds()
            slo = np.array([t.workload.slo_s for t in server.tenants])
            assert np.all(bounds <= slo * (1 + 1e-9))
            assert server.rate[:, 1].sum() <= 0.999 + 1e-9


def test_workloadcompactor_uses_no_more_servers_than_baselines(
    wc62_subset: list[TenantCurves],
) -> None:
    cluster = small_cluster()
    wc = place(wc62_subset, cluster, registry.build("workloadcompactor", "placement"))
    assert not wc.rejected
    for policy in POLICIES[1:]:
        other = place(wc62_subset, cluster, registry.build(policy, "placement"))
        placed_other = len(wc62_subset) - len(other.rejected)
        assert wc.servers_used <= other.servers_used or placed_other < len(wc62_subset)


def test_fast_first_fit_tries_fewer_configurations(wc62_subset: list[TenantCurves]) -> None:
    cluster = small_cluster()
    ff = place(wc62_subset, cluster, registry.build("workloadcompactor", "placement"))
    fff = place(
        wc62_subset, cluster, registry.build("workloadcompactor", "placement"), fast_first_fit=True
    )
    assert fff.configure_calls <= ff.configure_calls
    assert fff.servers_used <= ff.servers_used + 1


def test_departure_reoptimises_the_server(wc62_subset: list[TenantCurves]) -> None:
    placer = Placer(small_cluster(), registry.build("workloadcompactor", "placement"))
    for w in wc62_subset[:6]:
        placer.add(w)
    first = placer.where[wc62_subset[0].name]
    before = placer.servers[first].rate.sum()
    placer.remove(wc62_subset[0].name)
    server = placer.servers[first]
    assert wc62_subset[0].name not in [t.workload.name for t in server.tenants]
    assert server.rate.shape[0] == len(server.tenants)
    assert server.rate.sum() <= before + 1e-9
    assert np.all(server.bounds() <= [t.workload.slo_s * (1 + 1e-9) for t in server.tenants])


def test_events_replay_arrivals_and_departures(wc62_subset: list[TenantCurves]) -> None:
    events = [Event(i, "add") for i in range(6)] + [
        Event(2, "del"),
        Event(2, "add"),
        Event(0, "del"),
    ]
    result = place(
        wc62_subset,
        small_cluster(),
        registry.build("workloadcompactor", "placement"),
        events=events,
    )
    names = {p.workload.name for s in result.servers for p in s.tenants}
    assert names == {w.name for w in wc62_subset[1:6]}
    assert result.peak_servers >= result.servers_used


def test_several_devices_share_the_server_link(wc62_subset: list[TenantCurves]) -> None:
    one = place(
        wc62_subset, small_cluster(devices=1), registry.build("workloadcompactor", "placement")
    )
    two = place(
        wc62_subset, small_cluster(devices=2), registry.build("workloadcompactor", "placement")
    )
    assert two.servers_used <= one.servers_used
    for server in two.servers:
        if server.tenants:
            assert server.rate[:, 0].sum() <= 0.999 + 1e-9  # one net_in queue for both devices
            for d in range(2):
                on_d = [k for k, t in enumerate(server.tenants) if t.device == d]
                assert server.rate[on_d, 1].sum() <= 0.999 + 1e-9


def test_grow_adds_servers_and_rejects_what_fits_nowhere(wc62_subset: list[TenantCurves]) -> None:
    result = place(
        wc62_subset,
        small_cluster(servers=1),
        registry.build("workloadcompactor", "placement"),
        grow=True,
    )
    assert not result.rejected and len(result.servers) >= result.servers_used
    impossible = wc62_subset[0].with_slo(1e-6, "impossible")
    result = place(
        [impossible],
        small_cluster(servers=1),
        registry.build("workloadcompactor", "placement"),
        grow=True,
    )
    assert result.rejected == ["impossible"] and len(result.servers) == 1
