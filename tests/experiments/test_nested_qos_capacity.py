"""Nested QoS §4.4 (``nested_qos_capacity``) in quick mode: capacities 3500–4500 IOPS in
steps of 250. The CSV has one row per (policy, capacity), and Nested QoS reaches 90% of the
requests within their deadline at a strictly lower capacity than pClock and WF2Q+."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import numpy as np

from tailbound.experiments import nested_qos_capacity
from tailbound.experiments.nested_qos_common import POLICIES, profile_classes


def test_capacity_quick_csv_and_acceptance(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--quiet"]
    assert nested_qos_capacity.main([*args, "--capacities", "3500:4500:250"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["nested_qos_capacity.csv"]
    with open(tmp_path / "nested_qos_capacity.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["policy", "capacity_iops", "fraction_within_deadline"]
    caps = [3500.0, 3750.0, 4000.0, 4250.0, 4500.0]
    assert [(r["policy"], float(r["capacity_iops"])) for r in rows] == [
        (p, c) for p in POLICIES for c in caps
    ]
    need = nested_qos_capacity.needed(rows)
    assert need["nested-qos"] < need["pclock"], need
    assert need["nested-qos"] < need["wf2q"], need
    # more capacity never loses Nested QoS requests here
    nested = [float(r["fraction_within_deadline"]) for r in rows if r["policy"] == "nested-qos"]
    assert nested == sorted(nested)
    assert (tmp_path / "nested_qos_capacity.png").stat().st_size > 1000


def test_profiled_classes_are_nested(data_dir: Path) -> None:
    for w in nested_qos_capacity.workloads(data_dir):
        k = w.classes
        assert all(a.sigma <= b.sigma and a.rho <= b.rho for a, b in itertools.pairwise(k))
        assert [c.delta_s / k[0].delta_s for c in k] == list(nested_qos_capacity.OUTER)
        assert abs(len(w.arrival) / w.arrival[-1] - 910) < 1


def test_profile_classes_by_hand() -> None:
    """The policy's selection in requests and IOPS: two of a burst of four within 2 ms at
    1000 IOPS, the fifth alone (3 of 5); all four within 4 ms."""
    got = profile_classes(np.array([0.0] * 4 + [1.0]), [(0.002, 0.6), (0.004, 1.0)])
    assert np.allclose([(c.sigma, c.rho) for c in got], [(2, 1000), (4, 1000)], rtol=1e-5)
    assert [c.delta_s for c in got] == [0.002, 0.004]
