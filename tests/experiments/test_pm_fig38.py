"""Fig. 3.8's harness (``pm_fig38``): traces with offsets in extents of their own, the
constant-seek model that ignores them, and a short run of both models writing the table, CSV and
plot, PriorityMeister's accurate bounds holding in simulation."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from tailbound.experiments import pm_fig38
from tailbound.experiments.pm_common import EXTENT_BYTES, RUN_LENGTH, THESIS_DISK, extent_trace
from tailbound.experiments.pm_fig33 import WORKLOADS, build
from tailbound.experiments.wc_common import find_wc62
from tailbound.profiles.disk import DiskModel, DiskProfile
from tailbound.sim.scenario import DISK_GAP_BYTES


@pytest.fixture(scope="module")
def profile():
    try:
        return find_wc62() / "profile_ssd.json"
    except Exception:
        pytest.skip("shared data not found")


def test_extent_traces_keep_table31_loads_within_their_extents() -> None:
    disk = DiskProfile.from_json(THESIS_DISK)
    shared = DiskModel(disk, shared_gap_bytes=DISK_GAP_BYTES)
    duration = 1000.0
    for i, (name, (load, c2, size, reads)) in enumerate(WORKLOADS.items()):
        base = (i + 1) * EXTENT_BYTES
        t = extent_trace(
            load,
            c2,
            duration,
            seed=3 + i,
            size=size,
            read_fraction=reads,
            disk=disk,
            base_bytes=base,
            name=name,
        )
        assert t.offset is not None
        assert t.offset.min() >= base and (t.offset + t.size).max() <= base + EXTENT_BYTES
        # half the requests continue the previous one (runs of mean length 2)
        sequential = np.mean(t.offset[1:] == t.offset[:-1] + t.size[:-1])
        assert sequential == pytest.approx(1 - 1 / RUN_LENGTH, abs=0.05), name
        assert float(shared.tokens(t).sum()) / duration == pytest.approx(load, rel=0.15), name


def test_constant_seek_prices_every_latency_request_as_a_random_access() -> None:
    setup = build(10.0, 2, None, dict.fromkeys("ABC", 1.0), extents=True)
    flat = pm_fig38.constant_seek(setup)
    disk = DiskProfile.from_json(THESIS_DISK)
    random_access = disk.average_seek_s + disk.rotational_latency_s
    for exact, seen in zip(setup.tenants, flat.tenants, strict=True):
        if exact.slo is None:  # the file copy is left as it is
            assert seen.trace.offset is not None
            continue
        assert seen.trace.offset is None and len(seen.trace) == len(exact.trace)
        constant = DiskModel(disk).tokens(seen.trace)
        expected = random_access + seen.trace.size / disk.transfer_bandwidth
        np.testing.assert_allclose(constant, expected)
        accurate = DiskModel(disk).tokens(exact.trace)
        reads = exact.trace.op == 0
        reads[0] = False  # the first request has no history: a random access in both
        assert np.all(accurate[reads] < constant[reads])  # short seeks, sequential reads


def test_fig38_runs_both_models_and_pm_keeps_its_accurate_bounds(profile, tmp_path) -> None:
    args = ["--out", str(tmp_path), "--duration", "12", "--quiet", "--profile", str(profile)]
    assert pm_fig38.main(args) == 0
    for suffix in ("csv", "md", "png"):
        assert (tmp_path / f"pm_fig38.{suffix}").exists()
    with open(tmp_path / "pm_fig38.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(pm_fig38.MODELS) * len(pm_fig38.POLICIES) * 3
    assert {r["model"] for r in rows} == set(pm_fig38.MODELS)
    # the SLOs are fixed once, the same for both models
    assert len({(r["tenant"], r["slo_ms"]) for r in rows}) == 3
    for r in rows:
        if r["model"] == "accurate" and r["policy"] == "pm":
            assert float(r["worst_ms"]) <= float(r["bound_ms"]) + 1e-9, r
    # bySLO's order does not depend on the model: the tightest SLO (C's) first
    assert {r["order"] for r in rows if r["policy"] == "byslo"} == {"C > A > B"}


def test_fig38_refuses_the_ssd() -> None:
    with pytest.raises(SystemExit):
        pm_fig38.main(["--device", "ssd", "--out", "unused"])
