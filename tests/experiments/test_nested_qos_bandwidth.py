"""Nested QoS §4.2, Fig. 4.3 (``nested_qos_bandwidth``) in quick mode (200 s): one CSV with one
row per (policy, workload), and every policy serves each well-behaved workload its offered rate
(the thesis: "both of the workloads' bandwidth ... are guaranteed by all three methods")."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from tailbound.experiments import nested_qos_bandwidth
from tailbound.experiments.nested_qos_common import POLICIES


def test_bandwidth_quick_csv_and_acceptance(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--quiet", "--duration", "200"]
    assert nested_qos_bandwidth.main(args) == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["nested_qos_bandwidth.csv"]
    with open(tmp_path / "nested_qos_bandwidth.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "policy",
        "workload",
        "offered_iops",
        "served_iops",
        "min_window_iops",
        "max_window_iops",
    ]
    assert [(r["policy"], r["workload"]) for r in rows] == [
        (p, w) for p in POLICIES for w in ("W1", "W2")
    ]
    for r in rows:
        assert abs(float(r["served_iops"]) / float(r["offered_iops"]) - 1) < 0.01, r
        assert float(r["min_window_iops"]) <= float(r["served_iops"]) <= float(r["max_window_iops"])
    assert (tmp_path / "nested_qos_bandwidth.png").stat().st_size > 1000


def test_served_counts_completions_per_window() -> None:
    """Completions at 0.2, 0.7 and 2.5 s: two in [0, 1), one in [1, 3) (0.5 per second)."""
    got = nested_qos_bandwidth.served(
        np.array([0.0, 0.5, 1.0]), np.array([0.2, 0.2, 1.5]), np.array([0.0, 1.0, 3.0])
    )
    assert got.tolist() == [2.0, 0.5]
