from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tailbound.experiments.wc_common import FIG54_SLOS, resample, server_cluster
from tailbound.model import Cluster, Server
from tailbound.policies import registry
from tailbound.policies.events import Event
from tailbound.policies.placement import (
    PlacementResult,
    Placer,
    WorkloadCompactorPolicy,
    place,
)
from tailbound.policies.server import check
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


def _draws(pool: list[TenantCurves], count: int, seed: int) -> list[TenantCurves]:
    """``count`` workloads drawn with replacement from ``pool`` with random SLOs from Fig. 5.4's
    set, renamed ``name#k`` (the same curves object shared by the copies, as wc_fig54)."""
    rng = np.random.default_rng(seed)
    return [
        pool[int(i)].with_slo(float(rng.choice([0.1, 0.25, 1.0])), f"{pool[int(i)].name}#{k}")
        for k, i in enumerate(rng.integers(len(pool), size=count))
    ]


@pytest.mark.parametrize("policy", ["workloadcompactor", "effective-bandwidth", "knee"])
@pytest.mark.parametrize("model_name", ["reference", "sound"])
def test_remembered_refusals_change_no_placement(
    wc62_subset: list[TenantCurves], wc62_dir: Path, policy: str, model_name: str
) -> None:
    """A refusal the placer remembers (the same curves, SLO and largest requests refused by a
    server that has only gained tenants since) is one the policy would repeat: every workload
    lands on the same (server, device) with and without the memory, with departures too (which
    make a server forget), and the memory saves checks."""
    from tailbound.experiments.wc_common import model_for

    model = model_for(model_name, wc62_dir)
    workloads = _draws(wc62_subset, 60, 1)
    events = [Event(i, "add") for i in range(40)]
    events += [Event(i, "del") for i in range(0, 40, 3)]
    events += [Event(i, "add") for i in range(40, 60)]
    runs = {}
    for remember in (True, False):
        built = registry.build(policy, "placement", model)
        if hasattr(built, "certify"):  # the certificates would refute the repeats first
            built.certify = False
        placer = Placer(small_cluster(2), built, grow=True, remember_refusals=remember)
        for e in events:
            if e.kind == "add":
                placer.add(workloads[e.tenant])
            else:
                placer.remove(workloads[e.tenant].name)
        where = {
            p.workload.name: (i, p.device) for i, s in enumerate(placer.servers) for p in s.tenants
        }
        runs[remember] = (where, placer.rejected, placer.calls, placer.remembered)
    (on, rejected_on, calls_on, remembered), (off, rejected_off, calls_off, none) = (
        runs[True],
        runs[False],
    )
    assert on == off and rejected_on == rejected_off
    assert none == 0 and remembered > 0
    assert calls_on + remembered == calls_off


def test_fixed_limits_are_chosen_once_per_curves_and_slo(
    wc62_subset: list[TenantCurves],
) -> None:
    """Copies of one workload (another name, the same curves and SLO) share the baseline's
    choice; another SLO gets its own."""
    policy = registry.build("effective-bandwidth", "placement")
    w = wc62_subset[0]
    calls = []
    choose = policy.baseline.choose
    policy.baseline = type(policy.baseline)(
        policy.baseline.name, lambda x: calls.append(x.name) or choose(x)
    )
    a = policy.limits(w.with_slo(0.25, "a"))
    b = policy.limits(w.with_slo(0.25, "b"))
    policy.limits(w.with_slo(1.0, "c"))
    assert calls == ["a", "c"]
    assert a is b


def _names(result: PlacementResult) -> list[list[str]]:
    return [[p.workload.name for p in s.tenants] for s in result.servers]


def test_a_window_wider_than_the_cluster_is_first_fit(wc62_subset: list[TenantCurves]) -> None:
    """A window that always covers every server tries what first-fit tries: the same
    placement, server by server."""
    fleet = resample(wc62_subset, 120, np.random.default_rng(3), slos=FIG54_SLOS)
    plain = place(
        fleet, server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True
    )
    wide = place(
        fleet,
        server_cluster(),
        WorkloadCompactorPolicy(),
        fast_first_fit=True,
        grow=True,
        window=len(fleet) + 1,
    )
    assert _names(wide) == _names(plain)


@pytest.mark.parametrize("window", [1, 4])
def test_a_window_places_only_on_the_last_servers(
    wc62_subset: list[TenantCurves], window: int
) -> None:
    """Bounded first-fit: each tenant lands on one of the last ``window`` servers at its
    arrival (or a new one), every server's limits pass the exact check, and no tenant is
    refused (``grow``)."""
    fleet = resample(wc62_subset, 120, np.random.default_rng(3), slos=FIG54_SLOS)
    placer = Placer(
        server_cluster(), WorkloadCompactorPolicy(), fast_first_fit=True, grow=True, window=window
    )
    for w in fleet:
        before = len(placer.servers)
        i = placer.add(w)
        assert i is not None and i >= before - window
    result = placer.result(0.0)
    assert not result.rejected
    for s in result.servers:
        if s.tenants:
            assert check(s.tenants, s.rate, s.bucket, s.devices), s.config.name


def test_a_window_needs_a_server() -> None:
    with pytest.raises(ValueError, match="window"):
        Placer(server_cluster(), WorkloadCompactorPolicy(), window=0)
