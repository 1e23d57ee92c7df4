"""The ``nested-qos`` policy (issue 25, :mod:`tailbound.policies.nested_qos`): classes selected
from hand traces by the thesis' decomposition (exact ``σ``, ``ρ``), the plan ``tailbound admit
--policy nested-qos`` writes replayed by ``tailbound verify`` on the second half of the traces
meeting every grade, and a graduated SLO refused by a single-pair policy (exit 2, naming the
tenant's field)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tailbound.characterize.decompose import kept
from tailbound.cli.main import main
from tailbound.plan import Plan
from tailbound.policies.nested_qos import NestedClass, select_classes
from tailbound.profiles.tokens import SsdProfile
from tailbound.stages import Stage
from tailbound.traces.sizes import FixedSize
from tailbound.traces.synthetic import onoff_trace, poisson_trace
from tailbound.traces.tabular import write_parquet

#: A burst of four 1 ms requests at 0 and one alone at 1 s.
TIME = np.array([0.0, 0.0, 0.0, 0.0, 1.0])
WORK = np.full(5, 1e-3)


def test_classes_of_a_hand_trace() -> None:
    """80% within 2 ms: four of five requests, the lone one and three of the burst, whose third
    finishes at 3 ms / κ, so κ_1 = 1.5, σ_1 = 1.5 × 2 ms; all within 4 ms needs κ = 1 (4 ms of
    work in 4 ms), below κ_1: ρ_2 keeps 1.5 (nested), σ_2 = max(3 ms, 1 × 4 ms)."""
    classes = select_classes(TIME, WORK, [(0.002, 0.8), (0.004, 1.0)])
    expected = [NestedClass(0.003, 1.5, 0.002), NestedClass(0.004, 1.5, 0.004)]
    for got, want in zip(classes, expected, strict=True):
        assert got == pytest.approx(want, rel=1e-9)
    # the rate is the smallest: a little less and only three requests are within 2 ms
    assert kept(TIME, WORK, 1.5, 0.002) == 4
    assert kept(TIME, WORK, 1.5 * (1 - 1e-6), 0.002) == 3
    with pytest.raises(ValueError, match="positive"):
        select_classes(TIME, np.zeros(5), [(0.002, 0.8)])


def test_classes_take_the_burst_out() -> None:
    """The decomposition of thesis §3.2.3 (ref. [31]), not a FIFO server of every request: six
    1 ms requests at once and one at each of 4, 5, 6, 7 ms, 60% within 2 ms. At rate 1 two of
    the burst and the four lone ones fit, the rest of the burst is moved out: ``κ_1 = 1`` (a
    FIFO server of all ten is busy with the burst until 6 ms and needs 7/6). All within 20 ms:
    the last request, at 7 ms, finishes at 10 ms / κ: 10/27, below κ_1, so ``ρ_2 = 1`` and
    ``σ_2 = 10/27 × 20`` ms."""
    t = np.array([0.0] * 6 + [0.004, 0.005, 0.006, 0.007])
    classes = select_classes(t, np.full(10, 1e-3), [(0.002, 0.6), (0.02, 1.0)])
    expected = [NestedClass(0.002, 1.0, 0.002), NestedClass(0.02 * 10 / 27, 1.0, 0.02)]
    for got, want in zip(classes, expected, strict=True):
        assert got == pytest.approx(want, rel=1e-9)


X = 4096 / 8e7  # one 4 KiB read: 51.2 µs of device work
PROFILE = SsdProfile(
    sizes=np.array([4096.0]),
    read_bandwidth=np.array([8e7]),
    write_bandwidth=np.array([4e7]),
    read_mpl=1,
    write_mpl=1,
)
GRADES = {"S": [[0.002, 0.9], [0.02, 0.99]], "T": [[0.001, 0.8], [0.01, 0.95], [0.1, 1.0]]}
LOADS = {"S": 0.3, "T": 0.2}


def _fleet(tmp_path: Path) -> None:
    """Two Poisson tenants of 4 KiB reads on one SSD: the full traces (``tenants.json``) and
    their first halves (``first.json``), from which the classes are selected."""
    (tmp_path / "profile.json").write_text(json.dumps(PROFILE.to_json()))
    files: dict[str, list[dict[str, object]]] = {"tenants.json": [], "first.json": []}
    for seed, (name, grades) in enumerate(GRADES.items()):
        trace = poisson_trace(
            LOADS[name] / X, 20.0, seed=seed, sizes=FixedSize(4096), read_fraction=1.0
        )
        write_parquet(trace, tmp_path / f"{name}.parquet")
        write_parquet(trace.first_half(), tmp_path / f"{name}-first.parquet")
        for file, suffix in (("tenants.json", ""), ("first.json", "-first")):
            files[file].append(
                {
                    "name": name,
                    "slo_grades": grades,
                    "trace": f"{name}{suffix}.parquet",
                    "server_host": "s0",
                    "device": "ssd0",
                    "client_host": f"c{seed}",
                }
            )
    for file, entries in files.items():
        doc = {"tenants": entries, "ssd_profile": "profile.json"}
        (tmp_path / file).write_text(json.dumps(doc))


def test_the_plan_meets_the_grades_on_the_second_half(tmp_path: Path) -> None:
    _fleet(tmp_path)
    plan_path = tmp_path / "plan.json"
    args = ["admit", "--tenants", str(tmp_path / "first.json"), "--policy", "nested-qos"]
    assert main([*args, "--out", str(plan_path), "--quiet"]) == 0
    plan = Plan.load(plan_path)
    assert plan.discipline(Stage.STORAGE).kind == "nested" and not plan.rejected
    assert [len(t.nested[Stage.STORAGE]) for t in plan.tenants] == [2, 3]
    for t in plan.tenants:
        classes = t.nested[Stage.STORAGE]
        assert [c.delta_s for c in classes] == [g[0] for g in GRADES[t.name]]
        # at least the tenant's mean load (its outer classes cover its rate)
        assert classes[-1].rho >= LOADS[t.name] * 0.9
    out = tmp_path / "out"
    verify = ["verify", "--plan", str(plan_path), "--tenants", str(tmp_path / "tenants.json")]
    assert main([*verify, "--half", "second", "--out", str(out)]) == 0
    rows = [r.split(",") for r in (out / "verify-grades.csv").read_text().splitlines()[1:]]
    assert [r[:2] for r in rows] == [["S", "1"], ["S", "2"], ["T", "1"], ["T", "2"], ["T", "3"]]
    assert all(r[-1] == "True" for r in rows), rows


def test_bursty_tenants_admitted_to_the_limit_meet_their_grades(tmp_path: Path) -> None:
    """Six on/off tenants (inter-arrival C² 20, 8% of the device each), classes selected on the
    first 10 s of their traces: Lemma 3 admits some and rejects the rest, and the admitted
    ones meet every grade on the second 10 s. The decomposition's smaller envelopes (the burst's
    excess moved out) still hold the fractions the grades ask for on a trace they were not
    chosen on."""
    (tmp_path / "profile.json").write_text(json.dumps(PROFILE.to_json()))
    grades = [[0.001, 0.8], [0.01, 0.95], [0.1, 1.0]]
    files: dict[str, list[dict[str, object]]] = {"tenants.json": [], "first.json": []}
    for k in range(6):
        trace = onoff_trace(0.08 / X, 20.0, 20.0, seed=k, sizes=FixedSize(4096))
        write_parquet(trace, tmp_path / f"B{k}.parquet")
        write_parquet(trace.first_half(), tmp_path / f"B{k}-first.parquet")
        for file, suffix in (("tenants.json", ""), ("first.json", "-first")):
            files[file].append(
                {
                    "name": f"B{k}",
                    "slo_grades": grades,
                    "trace": f"B{k}{suffix}.parquet",
                    "server_host": "s0",
                    "device": "ssd0",
                    "client_host": f"c{k}",
                }
            )
    for file, entries in files.items():
        doc = {"tenants": entries, "ssd_profile": "profile.json"}
        (tmp_path / file).write_text(json.dumps(doc))
    plan_path = tmp_path / "plan.json"
    args = ["admit", "--tenants", str(tmp_path / "first.json"), "--policy", "nested-qos"]
    assert main([*args, "--out", str(plan_path), "--quiet"]) == 0
    plan = Plan.load(plan_path)
    assert len(plan.tenants) >= 2 and plan.rejected, (plan.tenants, plan.rejected)
    out = tmp_path / "out"
    verify = ["verify", "--plan", str(plan_path), "--tenants", str(tmp_path / "tenants.json")]
    assert main([*verify, "--half", "second", "--out", str(out)]) == 0
    rows = [r.split(",") for r in (out / "verify-grades.csv").read_text().splitlines()[1:]]
    assert len(rows) == 3 * len(plan.tenants)
    assert all(r[-1] == "True" for r in rows), rows


def test_a_tenant_beyond_the_device_is_rejected(tmp_path: Path) -> None:
    """Five copies of S's 30% load cannot share one device: the later ones are rejected with the
    capacity they would need, and the plan lists them."""
    _fleet(tmp_path)
    doc = json.loads((tmp_path / "first.json").read_text())
    s = doc["tenants"][0]
    doc["tenants"] = [{**s, "name": f"S{k}"} for k in range(5)]
    (tmp_path / "many.json").write_text(json.dumps(doc))
    plan_path = tmp_path / "plan.json"
    args = ["admit", "--tenants", str(tmp_path / "many.json"), "--policy", "nested-qos"]
    assert main([*args, "--out", str(plan_path), "--quiet"]) == 0
    plan = Plan.load(plan_path)
    assert 1 <= len(plan.tenants) < 5 and plan.rejected
    assert "times its capacity" in plan.rejected[0].reason


def test_a_single_pair_policy_refuses_a_graduated_slo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fleet(tmp_path)
    capsys.readouterr()
    assert main(["admit", "--tenants", str(tmp_path / "tenants.json"), "--policy", "dnc"]) == 2
    err = capsys.readouterr().err
    assert "tenants.json, field tenants[0].slo_grades: tenant S has a graduated SLO" in err, err
    assert "dnc cannot honour" in err
