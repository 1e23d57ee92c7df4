from __future__ import annotations

import numpy as np
import pytest

from tailbound.experiments.wc_common import FIG54_SLOS, resample, server_cluster
from tailbound.policies import cluster_screen, wc_lp
from tailbound.policies.cluster_screen import ClusterScreen
from tailbound.policies.placement import WorkloadCompactorPolicy, place
from tailbound.policies.server import Placed
from tailbound.policies.workload import TenantCurves


def random_servers(
    pool: list[TenantCurves], rng: np.random.Generator, count: int
) -> list[tuple[list[Placed], Placed]]:
    """``count`` servers with two devices: existing tenants and a newcomer."""
    slo_choices = [0.05, 0.1, 0.25, 1.0]
    out = []
    for m in range(count):
        k = int(rng.integers(1, 7))
        chosen = rng.choice(len(pool), k, replace=False)
        tenants = [
            Placed(pool[i].with_slo(float(rng.choice(slo_choices)), f"s{m}t{n}"), int(n % 2))
            for n, i in enumerate(chosen)
        ]
        out.append((tenants[:-1], tenants[-1]))
    return out


def test_cluster_screen_never_rejects_a_feasible_lp(wc62_subset: list[TenantCurves]) -> None:
    # a proof of infeasibility: whenever the screen says so, the LP must agree; and it finds at
    # least every server the per-server screen finds (its grid contains that screen's grid)
    servers = random_servers(wc62_subset, np.random.default_rng(11), 150)
    screen = ClusterScreen(max_devices=2)
    for i, (tenants, _) in enumerate(servers):
        screen.add_server(2)
        screen.set_server(i, tenants, 2)
    said, agreed = 0, 0
    for device in (0, 1):
        at = [i for i, (_, new) in enumerate(servers) if new.device == device]
        for i in at:
            tenants, new = servers[i]
            proof = screen.infeasible(new.workload, device, np.array([i]))[0]
            if wc_lp.certainly_infeasible([*tenants, new], len(tenants)):
                assert proof
            if proof:
                said += 1
                agreed += wc_lp.solve([*tenants, new], devices=2) is None
    assert said == agreed and said > 0


def test_cluster_screen_vectorised_equals_one_by_one(wc62_subset: list[TenantCurves]) -> None:
    rng = np.random.default_rng(5)
    servers = random_servers(wc62_subset, rng, 40)
    screen = ClusterScreen(max_devices=2)
    for i, (tenants, _) in enumerate(servers):
        screen.add_server(2)
        screen.set_server(i, tenants, 2)
    new = servers[0][1]
    everyone = screen.infeasible(new.workload, new.device, np.arange(len(servers)))
    one_by_one = [
        bool(screen.infeasible(new.workload, new.device, np.array([i]))[0])
        for i in range(len(servers))
    ]
    assert everyone.tolist() == one_by_one


def test_cluster_screen_turns_off_beyond_max_levels(
    wc62_subset: list[TenantCurves], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_screen, "MAX_LEVELS", 2)
    screen = ClusterScreen(max_devices=1)
    screen.add_server(1)
    tenants = [
        Placed(w.with_slo(s, f"t{s}"))
        for w, s in zip(wc62_subset[:3], (0.1, 0.25, 1.0), strict=True)
    ]
    screen.set_server(0, tenants, 1)
    assert not screen.active
    assert not screen.infeasible(tenants[0].workload, 0, np.array([0])).any()


@pytest.mark.parametrize("fff", [False, True])
def test_placements_identical_with_and_without_cluster_screen(
    wc62_subset: list[TenantCurves], fff: bool
) -> None:
    rng = np.random.default_rng(3)
    tenants = resample(wc62_subset, 200 if fff else 80, rng, slos=FIG54_SLOS, scale=(0.8, 1.2))
    results = []
    for cs in (True, False):
        r = place(
            tenants,
            server_cluster(),
            WorkloadCompactorPolicy(),
            fast_first_fit=fff,
            grow=True,
            cluster_screen=cs,
        )
        results.append(r)
    with_screen, without = results
    assert with_screen.cluster_screened > 0 and without.cluster_screened == 0
    assert {k: v[0] for k, v in with_screen.placed().items()} == {
        k: v[0] for k, v in without.placed().items()
    }
    assert with_screen.rejected == without.rejected
