"""The one Plan → scheduler translation (``tailbound.plan_queues``).

The golden outputs in ``tests/data/plan_queues_main.json`` are what the code written before this
translation, with a branch per kind in each of three places, produced for the plans of
:func:`baseline_plans`: the scenarios (``tailbound.sim.plan.scenario_from_plan``), the gateway
configurations (``tailbound.enforce.storage.gate_config``) and the exporters' warnings
(``tailbound.enforce.exporters``), captured from main at 74bf056 with
``PYTHONPATH=<main>/python python tests/test_plan_queues.py --capture``. The translation must
reproduce them: the gateway's documents and the warnings exactly, the scenarios' documents but
their queue tables exactly, and every queue table read by the core into the same scheduler (the
tables now carry every parameter the plan has; a kind ignores the fields it does not read), so the
simulation is the same.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound import _core
from tailbound.enforce.exporters import export_qemu
from tailbound.enforce.storage import find_binary, gate_config
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, DispatchRule, Plan, StageLimit, TenantPlan
from tailbound.plan_queues import queue_tables, scheduler_config
from tailbound.profiles.tokens import SsdProfile
from tailbound.sim.plan import scenario_from_plan
from tailbound.sim.scenario import Scenario
from tailbound.stages import NETWORK_PATH, STORAGE_PATH, Stage

SLO = Slo(0.05)
GOLDEN = Path(__file__).resolve().parent / "data" / "plan_queues_main.json"

PROFILE = SsdProfile(
    sizes=np.array([4096.0, 65536.0]),
    read_bandwidth=np.array([8e7, 3e8]),
    write_bandwidth=np.array([4e7, 1.5e8]),
    read_mpl=16,
    write_mpl=32,
)


def _tenant(
    name: str,
    level: int | dict[Stage, int | None] | None,
    *,
    server: str = "s0",
    device: str | None = "ssd0",
    client: str | None = None,
    slo: Slo | None = SLO,
    limits: dict[Stage, list[StageLimit]] | None = None,
    weight: dict[Stage, float] | None = None,
    deadline_s: dict[Stage, float] | None = None,
) -> TenantPlan:
    stages = STORAGE_PATH if device is not None else NETWORK_PATH
    limits = limits or {}
    return TenantPlan(
        name,
        slo,
        server,
        device,
        level if isinstance(level, dict) else dict.fromkeys(stages, level),
        {s: ls[0] for s, ls in limits.items() if ls},
        Bound(math.inf, "test"),
        client_host=client,
        extra_limits={s: tuple(ls[1:]) for s, ls in limits.items() if len(ls) > 1},
        weight=weight or {},
        deadline_s=deadline_s or {},
    )


def _tenants() -> list[TenantPlan]:
    """Tenants on two servers and three devices, sharing client hosts, with every kind of
    per-stage parameter: several buckets, best effort, weights, deadlines, no SLO."""
    net_in, storage, net_out = STORAGE_PATH
    return [
        _tenant(
            "A",
            0,
            client="c0",
            limits={
                net_in: [StageLimit(0.2, 0.001, 125e6)],
                storage: [StageLimit(0.1, 0.02), StageLimit(0.5, 0.001)],
                net_out: [StageLimit(0.3, 0.002, 125e6)],
            },
            weight={storage: 3.0, net_in: 2.0},
            deadline_s={storage: 0.01},
        ),
        _tenant(
            "B",
            {net_in: 2, storage: 1, net_out: None},
            client="c0",
            limits={storage: [StageLimit(0.3, 0.01)]},
            deadline_s={net_out: 0.2},
        ),
        _tenant("C", None, client="c1", slo=None, weight={net_out: 0.5}),
        _tenant("D", 1, device="ssd1", client="c1", slo=Slo(0.1, 0.99)),
        _tenant(
            "E",
            3,
            server="s1",
            device="ssd0",
            limits={storage: [StageLimit(0.4, 0.004)]},
            weight={storage: 0.25},
        ),
        _tenant(
            "N",
            {net_in: 2, net_out: 0},
            device=None,
            client="c2",
            slo=Slo(0.01),
            limits={net_in: [StageLimit(0.05, 0.0005, 125e6)]},
            weight={net_in: 4.0},
            deadline_s={net_in: 0.004, net_out: 0.006},
        ),
    ]


def baseline_plans() -> dict[str, Plan]:
    """A plan per discipline kind the code knew before the translation, and one mixing them."""
    tenants = _tenants()
    rule = DispatchRule(read_mpl=4, low_priority_mpl=1, low_priority_work_s=0.005)

    def plan(disciplines: dict[Stage, Discipline], levels: int = 8) -> Plan:
        return Plan(
            "test", 2, tenants, disciplines=disciplines, dispatch=rule, priority_levels=levels
        )

    return {
        "priority": plan(dict.fromkeys(STORAGE_PATH, Discipline("priority", "shaping"))),
        "demotion": plan(dict.fromkeys(STORAGE_PATH, Discipline("priority", "demotion")), 4),
        "fifo": plan(dict.fromkeys(STORAGE_PATH, Discipline("fifo"))),
        "sfq": plan(dict.fromkeys(STORAGE_PATH, Discipline("sfq"))),
        "edf": plan(dict.fromkeys(STORAGE_PATH, Discipline("edf"))),
        "mixed": plan(
            {
                Stage.NET_IN: Discipline("priority", "demotion"),
                Stage.STORAGE: Discipline("edf"),
                Stage.NET_OUT: Discipline("sfq"),
            }
        ),
        "default": Plan("test", 2, tenants),  # no disciplines given: priority, shaping
    }


def _sources(plan: Plan) -> dict[str, Any]:
    return {
        t.name: {"synthetic": {"kind": "poisson", "rate": 50, "duration_s": 1, "seed": i}}
        for i, t in enumerate(plan.tenants)
    }


def scenario_cases() -> dict[str, dict[str, Any]]:
    """Scenario documents of every baseline plan, and of two with the limit mode overridden."""
    out = {}
    for name, plan in baseline_plans().items():
        for mode in (None, "demotion", "shaping") if name in ("priority", "mixed") else (None,):
            key = name if mode is None else f"{name}+{mode}"
            out[key] = scenario_from_plan(
                plan,
                _sources(plan),
                link_bandwidth_bytes_per_s=125e6,
                profile=PROFILE.to_json(),
                mode=mode,
            )
    return out


def gate_cases() -> dict[str, dict[str, Any]]:
    """Gateway configurations of every baseline plan's three devices, and the FIFO baseline."""
    out = {}
    for name, plan in baseline_plans().items():
        for device in ("s0.ssd0", "s0.ssd1", "s1.ssd0"):
            out[f"{name}/{device}"] = gate_config(
                plan, PROFILE, backend_dir="/srv/gate", device=device
            )
        out[f"{name}/fifo"] = gate_config(
            plan, PROFILE, backend_dir="/srv/gate", device="s0.ssd0", fifo=True
        )
    return out


# ------------------------------------------------------------------------------ same as before
def _golden() -> dict[str, Any]:
    return dict(json.loads(GOLDEN.read_text()))


def _resolved(doc: dict[str, Any]) -> dict[str, Any]:
    """Each queue of a scenario document as the core reads it (``scheduler_config``)."""
    workloads = [
        (w["name"], w["slo"]["latency_s"] if "slo" in w else None) for w in doc["workloads"]
    ]
    out = {}
    for q in doc["queues"]:
        fields = {k: v for k, v in q.items() if k != "queue"}
        out[q["queue"]] = json.loads(_core.scheduler_config(fields, workloads))
    return out


def _latencies(doc: dict[str, Any]) -> dict[str, list[float]]:
    sim = Scenario.from_dict(doc).simulator()
    sim.run()
    return {w.name: list(map(float, w.latency)) for w in sim.results().workloads}


def test_gateway_configurations_are_the_ones_written_before() -> None:
    golden = _golden()["gates"]
    now = json.loads(json.dumps(gate_cases()))
    assert list(now) == list(golden)
    for case, config in now.items():
        assert json.dumps(config) == json.dumps(golden[case]), case  # key order too


@pytest.mark.parametrize("case", list(json.loads(GOLDEN.read_text())["scenarios"]))
def test_scenarios_replay_the_queues_built_before(case: str) -> None:
    """The same document but the queue tables; every queue read by the core into the same
    scheduler; the same latencies when replayed (requests of every tenant, every stage)."""
    before = _golden()["scenarios"][case]
    now = json.loads(json.dumps(scenario_cases()[case]))
    assert {k: v for k, v in now.items() if k != "queues"} == {
        k: v for k, v in before.items() if k != "queues"
    }
    assert [q["queue"] for q in now["queues"]] == [q["queue"] for q in before["queues"]]
    assert _resolved(now) == _resolved(before)
    assert _latencies(now) == _latencies(before)


def export_cases() -> dict[str, list[str]]:
    """The warnings and notes of ``tailbound export qemu`` for every baseline plan."""
    return {
        name: [str(w) for w in export_qemu(plan, PROFILE).warnings]
        for name, plan in baseline_plans().items()
    }


def test_exporters_warn_as_before() -> None:
    """The exporters read the device's scheduler from the translation now, with no branch per
    kind: for the plans of the kinds known before, the same warnings in the same order."""
    assert export_cases() == _golden()["exports"]


# ------------------------------------------------------------------------------ a class kind
#: The class kinds: DWRR, and WFQ, which reached the Plan, the simulator and the gateway by its
#: Rust module and its registration alone (issue 23), with the serde form each one is read into.
CLASS_KINDS = {
    "dwrr": {"kind": "dwrr", "class": [1, 0], "weight": [1.0, 3.0], "quantum": 0.002},
    "wfq": {"kind": "wfq", "class": [1, 0], "weight": [1.0, 3.0]},  # no quantum: ignored
}


def _dwrr_plan(gold_weight: float, kind: str = "dwrr") -> Plan:
    """Two storage tenants on one device in classes ``gold`` and ``bronze`` under ``kind`` (a
    class kind: DWRR by default), each able to fill the device alone (the device is the
    bottleneck)."""
    tenants = [
        dataclasses.replace(_tenant(name, 0, client=f"c{i}"), service_class={Stage.STORAGE: klass})
        for i, (name, klass) in enumerate([("G", "gold"), ("B", "bronze")])
    ]
    dwrr = Discipline(kind, class_weight={"gold": gold_weight}, quantum_s=0.002)
    disciplines = {**dict.fromkeys(STORAGE_PATH, Discipline("fifo")), Stage.STORAGE: dwrr}
    return Plan("test", 1, tenants, disciplines=disciplines)


@pytest.mark.parametrize("kind", CLASS_KINDS)
def test_a_class_kind_goes_from_plan_to_simulator_and_gateway(tmp_path: Path, kind: str) -> None:
    """DWRR and WFQ, which no Python code spells: read and written by the plan, its queue table,
    the simulator's scheduler and the gateway's are the core's."""
    plan = _dwrr_plan(3.0, kind)
    path = tmp_path / "plan.json"
    plan.save(path)
    assert Plan.load(path) == plan
    tables = queue_tables(plan)
    assert tables["s0.ssd0"]["class"] == {"G": "gold", "B": "bronze"}
    assert tables["s0.ssd0"]["class_weight"] == {"gold": 3.0}
    expected = CLASS_KINDS[kind]
    assert scheduler_config(plan, "s0.ssd0") == expected
    config = gate_config(Plan.load(path), PROFILE, backend_dir="/srv/gate")
    assert config["exports"] == ["G", "B"] and config["scheduler"] == expected
    (tmp_path / "gate.json").write_text(json.dumps(config))
    check = subprocess.run(
        [str(find_binary()), "--check", str(tmp_path / "gate.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0 and "ok: 2 exports" in check.stdout, check.stderr
    doc = scenario_from_plan(
        plan, _sources(plan), link_bandwidth_bytes_per_s=125e6, profile=PROFILE.to_json()
    )
    (queue,) = [q for q in doc["queues"] if q["queue"] == "s0.ssd0"]
    assert queue == {"queue": "s0.ssd0", **tables["s0.ssd0"]}
    sim = Scenario.from_dict(doc).simulator()  # its scheduler is the core's from this table
    sim.run()
    assert all(w.finished.all() for w in sim.results().workloads)


def test_a_setting_the_core_refuses_names_the_plans_field() -> None:
    """A plan built in memory is not checked as a plan file is: the core's refusal names the
    plan's field behind the queue table's."""
    plan = baseline_plans()["sfq"]
    bad = [dataclasses.replace(t, weight={Stage.STORAGE: 0.0}) for t in plan.tenants]
    with pytest.raises(ConfigError) as info:
        gate_config(
            dataclasses.replace(plan, tenants=bad), PROFILE, backend_dir="/x", device="s0.ssd0"
        )
    assert info.value.field == "tenants.weight.storage" and "queue s0.ssd0" in str(info.value)
    levels = [dataclasses.replace(t, priority=dict.fromkeys(t.priority, 0.5)) for t in plan.tenants]
    with pytest.raises(ConfigError) as info:
        scheduler_config(
            dataclasses.replace(plan, tenants=levels, disciplines={}), "c0.egress", path="p.json"
        )
    assert info.value.field == "tenants[0].priority.net_in" and str(info.value).startswith("p.json")
    with pytest.raises(ConfigError, match="no tenant of the plan crosses queue 'nowhere'"):
        scheduler_config(plan, "nowhere")


def _saturated_latency(gold_weight: float, kind: str) -> dict[str, float]:
    """The mean latency (s) of each tenant when both send 64 KiB writes at 1.5 times the
    device's rate each (the device serves 1.5e8 B/s: ~2289 writes/s)."""
    plan = _dwrr_plan(gold_weight, kind)
    trace = {"kind": "poisson", "rate": 3400, "duration_s": 0.5, "size_bytes": 65536}
    sources = {
        t.name: {"synthetic": {**trace, "read_fraction": 0.0, "seed": i}}
        for i, t in enumerate(plan.tenants)
    }
    doc = scenario_from_plan(
        plan, sources, link_bandwidth_bytes_per_s=1e11, profile=PROFILE.to_json()
    )
    sim = Scenario.from_dict(doc).simulator()
    sim.run()
    return {w.name: float(np.mean(w.latency)) for w in sim.results().workloads}


@pytest.mark.parametrize("kind", CLASS_KINDS)
def test_class_weights_of_the_plan_reach_the_simulated_device(kind: str) -> None:
    """Backlogged, the heavier class is served more: gold waits less than bronze with weight 3,
    and the two are alike with equal weights."""
    weighted, equal = _saturated_latency(3.0, kind), _saturated_latency(1.0, kind)
    assert weighted["G"] < 0.6 * weighted["B"]
    assert equal["G"] == pytest.approx(equal["B"], rel=0.2)


def capture(path: Path = GOLDEN) -> None:
    """Write the golden outputs of the code as it is (run once, before a change of the mapping)."""
    doc = {"scenarios": scenario_cases(), "gates": gate_cases(), "exports": export_cases()}
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


if __name__ == "__main__" and sys.argv[1:] == ["--capture"]:
    capture()
