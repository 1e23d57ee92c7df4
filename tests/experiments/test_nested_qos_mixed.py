"""Nested QoS §4.4, Fig. 4.9(b) (``nested_qos_mixed``) in quick mode: capacities 4250–5000 IOPS
in steps of 250. The CSV has one row per (policy, capacity), and Nested QoS reaches 90% of the
requests within their deadline at a strictly lower capacity than pClock and WF2Q+, as with
similar workloads (Fig. 4.9(a))."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

from tailbound.experiments import nested_qos_capacity, nested_qos_mixed
from tailbound.experiments.nested_qos_common import POLICIES


def test_mixed_quick_csv_and_acceptance(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--quiet"]
    assert nested_qos_mixed.main([*args, "--capacities", "4250:5000:250"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["nested_qos_mixed.csv"]
    with open(tmp_path / "nested_qos_mixed.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["policy", "capacity_iops", "fraction_within_deadline"]
    caps = [4250.0, 4500.0, 4750.0, 5000.0]
    assert [(r["policy"], float(r["capacity_iops"])) for r in rows] == [
        (p, c) for p in POLICIES for c in caps
    ]
    need = nested_qos_capacity.needed(rows)
    assert need["nested-qos"] < need["pclock"], need
    assert need["nested-qos"] < need["wf2q"], need
    assert (tmp_path / "nested_qos_mixed.png").stat().st_size > 1000


def test_the_five_workloads_at_their_rates(data_dir: Path) -> None:
    """E1, E2 at 910 IOPS, S1, S2 at 330, F at 100, over one length, deadlines 50/100/200 ms,
    classes nested."""
    ws = nested_qos_mixed.workloads(data_dir)
    assert [w.name for w in ws] == ["E1", "E2", "S1", "S2", "F"]
    end = ws[0].arrival[-1]
    for w, rate, d1 in zip(ws, [910, 910, 330, 330, 100], [0.05, 0.05, 0.1, 0.1, 0.2], strict=True):
        assert abs(len(w.arrival) / end / rate - 1) < 0.03, (w.name, len(w.arrival) / end)
        assert w.arrival[-1] <= end * 1.001 and w.deadline_s == d1
        k = w.classes
        assert all(a.sigma <= b.sigma and a.rho <= b.rho for a, b in itertools.pairwise(k))
