"""``tailbound verify`` of an Aequitas plan: replayed in the packet-level network simulator,
per class and per tenant the 99.9p RNL against the class SLO and the admitted share against the
prediction; seeded and deterministic; exit status 1 when a class misses."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import numpy as np
import pytest
from tests.policies.aequitas_case import NETWORK, TENANT, write_case

from tailbound.cli.main import main
from tailbound.model import load_tenants
from tailbound.plan import Plan
from tailbound.policies.aequitas import AequitasPolicy
from tailbound.sim.aequitas_plan import read_rpc_trace, replay_aequitas
from tailbound.verify_aequitas import (
    ALL,
    COLUMNS,
    SHARE_TOLERANCE,
    ClassCheck,
    check_replay,
    replay_aequitas_saved,
)


def _plan(folder: Path, network: dict | None = None, tenants: list | None = None) -> Path:
    out = folder / "plan.json"
    path = write_case(folder, network, tenants)
    assert (
        main(
            ["admit", "--tenants", str(path), "--policy", "aequitas", "--out", str(out), "--quiet"]
        )
        == 0
    )
    return out


def test_the_plan_is_replayed_and_its_classes_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = {
        **TENANT,
        "name": "batch",
        "rpc": {"class_mix": {"QoS_l": 1.0}, "pattern": "incast", "destination": 1, "load": 0.3},
    }
    plan_path = _plan(tmp_path, tenants=[copy.deepcopy(TENANT), other])
    capsys.readouterr()
    assert main(["verify", "--plan", str(plan_path), "--out", str(tmp_path / "v")]) == 0
    stdout = capsys.readouterr().out
    assert "| all | QoS_h |" in stdout and "| search | QoS_h |" in stdout
    with open(tmp_path / "v" / "verify.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == COLUMNS
    # one network-wide row per class above the lowest, one per tenant asking for it
    assert [(r["tenant"], r["class"]) for r in rows] == [(ALL, "QoS_h"), ("search", "QoS_h")]
    everyone, search = rows
    assert float(everyone["achieved_s"]) <= 25e-6 and everyone["met"] == "True"
    assert everyone["slo_unit"] == "rpc" and float(everyone["slo_s"]) == 25e-6
    share, predicted = float(everyone["admitted_share"]), float(everyone["predicted_share"])
    assert share >= (1 - SHARE_TOLERANCE) * predicted and everyone["share_held"] == "True"
    assert 0.3 < share < 0.95  # the controller downgraded some of the 70% asking QoS_h
    assert int(everyone["admitted"]) == round(share * int(everyone["requests"]))
    assert search["requests"] == everyone["requests"]  # batch asks only the lowest class


def test_the_replay_is_deterministic_and_matches_the_simulator(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path)
    plan = Plan.load(plan_path)
    one = replay_aequitas_saved(plan, plan_path)
    two = replay_aequitas_saved(plan, plan_path)
    assert one.checks == two.checks
    run = one.replay.run
    asked = one.replay.rpcs.rpcs.cls == 0
    (c, _) = one.checks
    assert c.requests == int(asked.sum())
    assert c.admitted == int((run.class_run[asked] == 0).sum())
    assert c.admitted_share == pytest.approx(run.admitted_share(0))
    assert c.achieved_s == pytest.approx(run.rnl_tail(0))  # the middle 80%, whole RPCs
    assert np.all(run.class_run[run.downgraded] == 1)  # downgraded to the lowest class


def test_an_slo_nobody_can_meet_fails_with_exit_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    net = copy.deepcopy(NETWORK)
    net["classes"][0]["slo_s"] = 1e-6  # below a 32 KiB RPC's idle RNL (about 3.3 µs)
    plan_path = _plan(tmp_path, net)
    capsys.readouterr()
    assert main(["verify", "--plan", str(plan_path)]) == 1
    out = capsys.readouterr().out
    assert "1 SLOs missed" in out
    v = replay_aequitas_saved(Plan.load(plan_path), plan_path)
    assert v.violations == ["QoS_h"] and not v.all_held
    # the controller sits near its floor: almost everything downgraded
    assert v.classes[0].admitted_share < 0.25


def test_per_mtu_slos_are_checked_per_mtu(tmp_path: Path) -> None:
    net = copy.deepcopy(NETWORK)
    net["classes"][0].update(slo_s=25e-6 / 7, slo_unit="mtu")  # 7 MTUs a 32 KiB RPC
    plan_path = _plan(tmp_path, net)
    v = replay_aequitas_saved(Plan.load(plan_path), plan_path)
    run = v.replay.run
    assert v.classes[0].slo_unit == "mtu"
    assert v.classes[0].achieved_s == pytest.approx(run.rnl_tail(0, per_mtu=True))


def test_a_class_check_verdicts() -> None:
    c = ClassCheck(ALL, "h", 1e-5, "rpc", 0.999, 1e-5, 2e-5, 100, 50, 0.5, 0.5)
    assert c.met and c.share_held
    low = ClassCheck(ALL, "h", 1e-5, "rpc", 0.999, 1.1e-5, 2e-5, 100, 44, 0.5, 0.44)
    assert not low.met and not low.share_held
    nobody = ClassCheck(
        ALL, "h", 1e-5, "rpc", 0.999, float("nan"), float("nan"), 0, 0, 1.0, float("nan")
    )
    assert nobody.met and nobody.share_held


def test_verify_takes_the_traces_of_a_tenants_file(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path)
    doc = json.loads(plan_path.read_text())
    doc["tenants"][0]["trace"]["sha256"] = "0" * 64  # stale: refused unless overridden
    plan_path.write_text(json.dumps(doc))
    assert main(["verify", "--plan", str(plan_path)]) == 2
    assert (
        main(["verify", "--plan", str(plan_path), "--tenants", str(tmp_path / "tenants.json")]) == 0
    )


def test_a_plan_in_memory_replays_as_its_saved_copy(tmp_path: Path) -> None:
    tset = load_tenants(write_case(tmp_path))
    plan = AequitasPolicy(tset).plan()
    assert plan.aequitas is not None and plan.inputs is None
    traces = {
        t.name: read_rpc_trace(t.trace, None, plan.aequitas.tenants[t.name]) for t in tset.tenants
    }
    in_memory = check_replay(replay_aequitas(plan, traces))
    saved = _plan(tmp_path)
    assert in_memory.checks == replay_aequitas_saved(Plan.load(saved), saved).checks
