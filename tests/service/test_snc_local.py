"""SNC-Meister's decision re-analysing only the newcomer's component of the queue-sharing graph
(:mod:`tailbound.service.snc_local`) equals the full re-analysis: on a randomised sequence of
arrivals and departures, every decision, its reasons and every bound in the Plan (its text)."""

from __future__ import annotations

import dataclasses
import random

import pytest
from tests.service.harness import Demo

from tailbound.model import cluster_from_json, tenant_from_json
from tailbound.profiles import SsdProfile
from tailbound.service import snc_local
from tailbound.service.engines import AdmissionEngine, Context, check_options, new_engine
from tailbound.service.plans import plan_text


def test_component_decisions_equal_full_reanalysis(
    small_demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(3)
    cluster_doc = {
        **small_demo.cluster,
        "server_hosts": [{"name": f"server0{j}", "devices": ["ssd0"]} for j in range(3)],
        "client_hosts": [{"name": f"client0{i}", "vms": [str(i)]} for i in range(3)],
    }
    cluster = cluster_from_json(cluster_doc, "cluster")
    path = small_demo.folder / "profile_ssd.json"
    profile = SsdProfile.from_json(small_demo.profile, path=str(path))
    options = check_options("snc-meister", {})
    tenants = []
    for entry in small_demo.tenants:
        # network tenants (devices go to the full analysis), pinned to random hosts and SLOs
        doc = {k: v for k, v in entry.items() if k != "device"}
        i, j = rng.randrange(3), rng.randrange(3)
        doc.update(client_host=f"client0{i}", client_vm=str(i), server_host=f"server0{j}")
        doc["slo_s"] = rng.choice([0.002, 0.005, 0.02, 0.1])
        tenants.append(tenant_from_json(doc, source="demo", traces=small_demo.folder))
    sizes: list[tuple[int, int]] = []
    real = snc_local.component

    def spy(queues: dict[str, frozenset[str]], start: str) -> set[str]:
        out = real(queues, start)
        sizes.append((len(out), len(queues)))
        return out

    monkeypatch.setattr(snc_local, "component", spy)

    def context() -> Context:
        return Context("c", "snc-meister", cluster, profile, path, options)

    local = new_engine(context())
    full = new_engine(context())
    assert isinstance(local, AdmissionEngine) and isinstance(full, AdmissionEngine)
    decided = 0
    for _ in range(30):
        inside = set(local.admitted())
        if inside and rng.random() < 0.3:
            name = rng.choice(sorted(inside))
            a, b = local.depart(name), full.depart(name)
        else:
            t = rng.choice([t for t in tenants if t.name not in inside] or tenants)
            if t.name in inside:
                continue
            a, b = local.admit(t), full.admit(t)
            decided += 1
        assert (a.admitted, a.reasons) == (b.admitted, b.reasons)
        assert (a.plan is None) == (b.plan is None)
        if a.plan is not None and b.plan is not None:
            assert plan_text(a.plan) == plan_text(b.plan)
        local = a.after  # type: ignore[assignment]
        full = dataclasses.replace(b.after, bounds=None)  # type: ignore[type-var]
        assert local.admitted() == full.admitted()
    assert decided >= 10
    assert any(size < total for size, total in sizes), sizes
