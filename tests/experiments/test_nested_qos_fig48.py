"""Nested QoS §4.4, Fig. 4.8 (``nested_qos_fig48``) in quick mode: W1 and W3 at δ1 = 5 and
50 ms. One CSV with one row per (workload, δ1); the graduated goal needs less capacity than the
single-level one in every case (the thesis: "for all cases, Graduated QoS saves capacity"), the
simulated capacity is at most Lemma 1's and is the least one that meets the grades."""

from __future__ import annotations

import csv
from pathlib import Path

from tailbound.experiments import nested_qos_fig48
from tailbound.experiments.nested_qos_common import Workload, profile_classes


def test_fig48_quick_csv_and_acceptance(data_dir: Path, tmp_path: Path) -> None:
    args = ["--out", str(tmp_path), "--data", str(data_dir), "--quiet"]
    assert nested_qos_fig48.main([*args, "--workloads", "W1,W3", "--deadlines", "5,50"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["nested_qos_fig48.csv"]
    with open(tmp_path / "nested_qos_fig48.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [
        "workload",
        "delta1_ms",
        "nested_qos_iops",
        "lemma1_iops",
        "single_level_iops",
        "saving",
        "classes",
    ]
    assert [(r["workload"], float(r["delta1_ms"])) for r in rows] == [
        ("W1", 5.0),
        ("W1", 50.0),
        ("W3", 5.0),
        ("W3", 50.0),
    ]
    for r in rows:
        nested, lemma1 = float(r["nested_qos_iops"]), float(r["lemma1_iops"])
        single = float(r["single_level_iops"])
        assert nested < single and float(r["saving"]) > 0, r
        assert nested <= lemma1 * (1 + nested_qos_fig48.RTOL), r
    assert (tmp_path / "nested_qos_fig48.png").stat().st_size > 1000


def test_the_capacity_is_the_least_that_meets_the_grades(data_dir: Path) -> None:
    arrival, rate = nested_qos_fig48.arrivals(data_dir)["W1"]
    grades = [(0.005, 0.9), (0.05, 0.95), (0.5, 1.0)]
    w = Workload("W1", arrival, profile_classes(arrival, grades), rate)
    c = nested_qos_fig48.least_capacity(w, rate, 4 * rate)
    assert nested_qos_fig48.meets(w, c)
    assert not nested_qos_fig48.meets(w, c * (1 - 2 * nested_qos_fig48.RTOL))
