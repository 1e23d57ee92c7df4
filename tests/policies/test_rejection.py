"""Rejections say why, with numbers: alone on an empty server, or the closest full server."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tailbound.characterize import RbCurve
from tailbound.dnc.device import DeviceLimits
from tailbound.model import Cluster, Server, Slo
from tailbound.policies.placement import place
from tailbound.policies.registry import build
from tailbound.policies.rejection import best_alone, shortfall
from tailbound.policies.server import Placed, ServerModel
from tailbound.policies.workload import TenantCurves
from tailbound.policies.workloadcompactor import to_plan
from tailbound.profiles import SsdProfile
from tailbound.stages import STORAGE_PATH, Stage

PROFILE = SsdProfile.from_spec(
    read_overhead_s=1e-4, read_bytes_per_s=1e8, write_overhead_s=1e-4, write_bytes_per_s=1e8
)
MODEL = ServerModel(DeviceLimits.of(PROFILE, level_mpl=1), packet_s=1e-5)


def _tenant(name: str, slo_s: float, storage: RbCurve) -> TenantCurves:
    net = RbCurve(np.array([0.001, 0.999]), np.array([0.001, 0.0005]), 0.001)
    curves = {s: storage if s == Stage.STORAGE else net for s in STORAGE_PATH}
    return TenantCurves(name, Slo(slo_s), curves, (4096.0, 0.0))


def test_alone_the_best_bound_is_the_curves_smallest_buckets_plus_the_packets() -> None:
    """Hand values: at the storage stage the bucket at the device's full rate (30 ms, nothing
    shares the tenant's level), on each link 0.5 ms plus two 10 µs packets: 31.04 ms."""
    storage = RbCurve(np.array([0.1, 0.5]), np.array([0.05, 0.03]), 0.1)
    w = _tenant("w", 0.02, storage)
    total, parts = best_alone(w, MODEL)
    assert parts[1] == pytest.approx(0.03)
    assert parts[0] == parts[2] == pytest.approx(0.0005 + 2e-5)
    assert total == pytest.approx(0.03104)
    cluster = Cluster(125e6, (Server("s0", ("ssd0",)),))
    result = place([w], cluster, build("workloadcompactor", "placement", MODEL))
    assert result.rejected == ["w"]
    assert result.reasons["w"] == (
        "alone on an empty server its worst-case bound is 31.0 ms against its SLO of 20 ms "
        "(storage: a burst of 30.0 ms of work at the device's full rate; net_in: 0.5 ms; "
        "net_out: 0.5 ms)"
    )
    plan = to_plan(result, cluster, policy="workloadcompactor", safety_margin=1.0)
    assert plan.rejected[0].reason == result.reasons["w"]
    # under a device that lets a level share it, the level's own rate counts:
    # min over the curve of b / (1 − r) = 0.05 / 0.9 at r = 0.1
    shared = dataclasses.replace(MODEL, device=DeviceLimits.of(PROFILE))
    assert best_alone(w, shared)[1][1] == pytest.approx(0.05 / 0.9)


def test_a_full_cluster_names_the_closest_server_and_the_level_short() -> None:
    """Two tenants of 40 ms of burst each share no server with a 50 ms SLO; a third arrives when
    both servers hold one: the closest server is the one whose level is the least short."""
    big = RbCurve(np.array([0.01, 0.5]), np.array([0.05, 0.04]), 0.01)
    smaller = RbCurve(np.array([0.01, 0.5]), np.array([0.05, 0.03]), 0.01)
    a, b = _tenant("a", 0.05, big), _tenant("b", 0.05, smaller)
    c = _tenant("c", 0.05, smaller)
    cluster = Cluster(125e6, (Server("s0", ("ssd0",)), Server("s1", ("ssd0",))))
    result = place([a, b, c], cluster, build("workloadcompactor", "placement", MODEL))
    assert result.rejected == ["c"]
    # s1 (b + c: 60 ms of buckets at the device) is closer than s0 (a + c: 70 ms)
    t0, _, _ = shortfall([Placed(a), Placed(c)], 1, MODEL)
    t1, level1, _ = shortfall([Placed(b), Placed(c)], 1, MODEL)
    assert 0 < t1 < t0
    assert level1 == (0.05, 0)
    # the level's row: Σ b + two packets per link (4 × 10 µs) <= 0.999 × 50 ms + t; every
    # queue's capacity row caps its two rates at 0.999 together, and the buckets are linear in
    # the rates: Σ b = 2 b(ρ) − |slope| (0.999 − 2 ρ) per queue
    device = 0.1 - 0.02 / 0.49 * (0.999 - 0.02)
    link = 0.002 - 0.0005 / 0.998 * (0.999 - 0.002)
    assert t1 == pytest.approx(device + 2 * link + 4e-5 - 0.04995, abs=1e-9)
    reason = result.reasons["c"]
    assert reason.startswith("the cluster is full: on the closest server, s1, the tenants of ")
    assert f"{t1 * 1e3:.1f} ms more" in reason
    # a feasible set is short of nothing
    assert shortfall([Placed(b)], 1, MODEL)[0] == pytest.approx(0.0, abs=1e-9)


def test_a_fixed_baseline_says_its_own_bound(
    wc62_subset: list[TenantCurves], wc62_dir: Path
) -> None:
    from tailbound.policies.workloadcompactor import server_model

    model = server_model(SsdProfile.load(wc62_dir / "profile_ssd.json"), 125e6, 1500)
    tight = wc62_subset[0].with_slo(0.005, "tight")
    cluster = Cluster(125e6, (Server("s0", ("ssd0",)),))
    result = place([*wc62_subset, tight], cluster, build("knee", "placement", model))
    assert "tight" in result.rejected
    assert result.reasons["tight"].startswith(
        "alone on an empty server its knee limits give a worst-case bound of "
    )
    assert result.reasons["tight"].endswith("against its SLO of 5 ms")
    full = [n for n in result.rejected if n != "tight"]
    assert full and all(result.reasons[n].startswith("the cluster is full: ") for n in full)


def test_place_prints_the_reasons(tmp_path: Path, wc62_dir: Path) -> None:
    import json

    from tailbound.cli.main import main

    doc = json.loads((wc62_dir / "tenants.json").read_text())
    doc["tenants"] = doc["tenants"][:2]
    doc["tenants"][0]["slo_s"] = 0.002
    for t in doc["tenants"]:
        t["trace"] = str(wc62_dir / t["trace"])
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(doc))
    out = tmp_path / "plan.json"
    code = main(
        [
            "place",
            "--tenants",
            str(tenants),
            "--cluster",
            str(wc62_dir / "cluster.json"),
            "--profile",
            str(wc62_dir / "profile_ssd.json"),
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 1
    plan = json.loads(out.read_text())
    reason = plan["rejected"][0]["reason"]
    assert reason.startswith("alone on an empty server its worst-case bound is ")
    assert "against its SLO of 2 ms (storage: " in reason or "(net_" in reason
