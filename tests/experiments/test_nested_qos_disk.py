"""Nested QoS §4.5.1 on the disk model (``nested_qos_disk``): one CSV, one row per policy, and
Nested QoS finishes more of prxy within 20 ms than pClock, which for one workload serves in
arrival order exactly as WF2Q+."""

from __future__ import annotations

import csv
from pathlib import Path

from tailbound.experiments import nested_qos_disk
from tailbound.experiments.nested_qos_common import POLICIES


def test_disk_csv_and_shape(data_dir: Path, tmp_path: Path) -> None:
    assert nested_qos_disk.main(["--out", str(tmp_path), "--data", str(data_dir), "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["nested_qos_disk.csv"]
    with open(tmp_path / "nested_qos_disk.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["policy", "workload", "fraction_within_deadline"]
    assert [(r["policy"], r["workload"]) for r in rows] == [(p, "prxy") for p in POLICIES]
    f = {r["policy"]: float(r["fraction_within_deadline"]) for r in rows}
    assert f["nested-qos"] > 2 * f["pclock"], f
    assert f["pclock"] == f["wf2q"], f
    assert (tmp_path / "nested_qos_disk.png").stat().st_size > 1000


def test_disk_is_about_100_random_iops() -> None:
    """The thesis' disk: about 100 IOPS for random 4 KiB requests."""
    p = nested_qos_disk.DISK
    random_4k = p.average_seek_s + p.rotational_latency_s + 4096 / p.transfer_bandwidth
    assert abs(1 / random_4k - nested_qos_disk.NOMINAL_IOPS) < 1
