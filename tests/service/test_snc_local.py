"""SNC-Meister's decisions re-analysing only what an event can change
(:mod:`tailbound.service.snc_local`) equal the full re-analysis: on randomised sequences of
arrivals and departures — network tenants; more than eight distinct SLOs (levels capped: an
arrival or departure reorders components far away); devices and dependency groups — every
decision, its reasons and every bound in the Plan (its text)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import pytest
from tests.service.harness import Demo, demo

from tailbound.model import cluster_from_json, tenant_from_json
from tailbound.profiles import SsdProfile
from tailbound.service import snc_local
from tailbound.service.engines import AdmissionEngine, Context, check_options, new_engine
from tailbound.service.plans import plan_text
from tailbound.snc.tenants import PRIORITY_LEVELS

HOSTS = 8
#: Events per case (a set with two members of a group is analysed by the general per-flow path,
#: in Python: the full re-analysis of the coupled case costs most of this test's time).
EVENTS = {"network": 40, "slos": 40, "coupled": 24}
SLOS = {
    "network": [0.002, 0.005, 0.02, 0.1],
    "slos": [0.02, 0.03, 0.04, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0],
    "coupled": [0.02, 0.05, 0.1, 0.5],
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """Sixteen workloads of 5 s."""
    return demo(tmp_path_factory.mktemp("demo16"), 16, servers=2, duration_s=5.0)


def tenants_of(fleet: Demo, case: str, rng: random.Random) -> list[Any]:
    """The fleet's tenants pinned mostly to pairs (client i, server i), so that the
    queue-sharing graph has several components, sometimes joined by a tenant across pairs;
    SLOs drawn from the case's list; for ``coupled``, half with a device and some in one of
    two dependency groups."""
    out = []
    for entry in fleet.tenants:
        doc = {k: v for k, v in entry.items() if k != "device"}
        i = rng.randrange(HOSTS)
        j = i if rng.random() < 0.85 else rng.randrange(HOSTS)
        doc.update(client_host=f"client0{i}", client_vm=str(i), server_host=f"server0{j}")
        doc["slo_s"] = rng.choice(SLOS[case])
        if case == "coupled":
            if rng.random() < 0.5:
                doc["device"] = "ssd0"
            if rng.random() < 0.5:
                doc["group"] = rng.choice(["g0", "g1"])
        out.append(tenant_from_json(doc, source="demo", traces=fleet.folder))
    return out


@pytest.mark.parametrize(("case", "seed"), [("network", 3), ("slos", 3), ("coupled", 7)])
def test_local_decisions_equal_full_reanalysis(
    fleet: Demo, case: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    cluster_doc = {
        **fleet.cluster,
        "server_hosts": [{"name": f"server0{j}", "devices": ["ssd0"]} for j in range(HOSTS)],
        "client_hosts": [{"name": f"client0{i}", "vms": [str(i)]} for i in range(HOSTS)],
    }
    cluster = cluster_from_json(cluster_doc, "cluster")
    path = fleet.folder / "profile_ssd.json"
    profile = SsdProfile.from_json(fleet.profile, path=str(path))
    options = check_options("snc-meister", {})
    tenants = tenants_of(fleet, case, rng)

    parts: list[tuple[int, int]] = []  # (tenants analysed, tenants in the whole set)
    moved: list[int] = []  # sizes of the components reordered by the levels
    real_part, real_reordered = snc_local._part, snc_local.reordered

    def part_spy(graph: snc_local.Graph, names: Any, tail: list[Any]) -> Any:
        out = real_part(graph, names, tail)
        parts.append((len(out), out.whole))
        return out

    def reordered_spy(graph: snc_local.Graph, before: Any, after: Any) -> set[str]:
        out = real_reordered(graph, before, after)
        moved.append(len(out))
        return out

    monkeypatch.setattr(snc_local, "_part", part_spy)
    monkeypatch.setattr(snc_local, "reordered", reordered_spy)

    def context() -> Context:
        return Context("c", "snc-meister", cluster, profile, Path(path), options)

    local = new_engine(context())
    full = new_engine(context())
    assert isinstance(local, AdmissionEngine) and isinstance(full, AdmissionEngine)
    decided = departed = admitted = 0
    most_slos = 0
    for _ in range(EVENTS[case]):
        inside = set(local.admitted())
        if inside and rng.random() < 0.3:
            name = rng.choice(sorted(inside))
            a, b = local.depart(name), full.depart(name)
            departed += 1
        else:
            t = rng.choice([t for t in tenants if t.name not in inside] or tenants)
            if t.name in inside:
                continue
            a, b = local.admit(t), full.admit(t)
            decided += 1
            admitted += a.admitted
        assert (a.admitted, a.reasons) == (b.admitted, b.reasons)
        assert (a.plan is None) == (b.plan is None)
        if a.plan is not None and b.plan is not None:
            assert plan_text(a.plan) == plan_text(b.plan)
        local = a.after  # type: ignore[assignment]
        full = dataclasses.replace(b.after, bounds=None)  # type: ignore[type-var]
        assert local.admitted() == full.admitted()
        assert local.bounds is not None and set(local.bounds) == set(local.admitted())
        most_slos = max(most_slos, len({t.slo_s for t in local.tenants}))
    assert decided >= 12 and departed >= 4 and admitted >= 8, (decided, departed, admitted)
    # events re-analysed less than everyone (arrivals and departures)
    assert sum(size < whole for size, whole in parts) >= 5, parts
    if case == "slos":
        assert most_slos > PRIORITY_LEVELS
        assert any(moved), moved  # a component far away reordered by an event


def test_graph_events_keep_the_couplings() -> None:
    """The graph after arrivals and departures is the graph of the tenants left: the same
    couplings, counts and components as built from scratch."""
    from tailbound.model import Slo, Tenant

    def tenant(name: str, c: int, s: int, slo: float, **kw: Any) -> Tenant:
        return Tenant(name, Slo(slo), Path(f"{name}.csv"), f"c{c}", server=f"s{s}", **kw)

    ts = [
        tenant("a", 0, 0, 0.1),
        tenant("b", 0, 1, 0.2, group="g"),
        tenant("c", 1, 1, 0.1, device="ssd0"),
        tenant("d", 2, 2, 0.3, group="g"),
        tenant("e", 3, 3, 0.4),
        tenant("f", 3, 4, 0.4, device="ssd0"),
    ]
    g = snc_local.Graph()
    for t in ts:
        g = g.add(t)
    assert g.component(["a"]) == {"a", "b", "c", "d"}  # a–b by c0, b–c by s1, b–d by group g
    assert g.component(["e"]) == {"e", "f"}
    assert (g.memo, g.dependent) == (False, True)
    left = g.remove("b").remove("f")
    fresh = snc_local.Graph()
    for t in ts:
        if t.name not in ("b", "f"):
            fresh = fresh.add(t)
    assert dict(left.at) == dict(fresh.at)
    assert (dict(left.slos), dict(left.groups)) == (dict(fresh.slos), dict(fresh.groups))
    assert (left.special, left.paired, left.dependent) == (fresh.special, fresh.paired, False)
    assert left.component(["a"]) == {"a"} and left.component(["c"]) == {"c"}
    assert [t.name for t in left.ordered({"e", "a", "d"})] == ["a", "d", "e"]
    with pytest.raises(ValueError, match="admitted already"):
        left.add(ts[0])
