"""Scenario files: loading, the routes they build, clear errors naming file and field, the plan
hand-off and the ``simulate`` command."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.cli.main import main
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, DispatchRule, Plan, StageLimit, TenantPlan
from tailbound.sim import Scenario, scenario_from_plan
from tailbound.stages import STORAGE_PATH, Stage

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "simulate.toml"


def small_doc() -> dict[str, Any]:
    return {
        "duration_s": 5.0,
        "hosts": [{"name": "c0"}, {"name": "c1"}, {"name": "s0"}],
        "devices": [{"name": "mem", "host": "s0", "kind": "memory"}],
        "workloads": [
            {
                "name": "A",
                "client": "c0",
                "device": "mem",
                "slo": {"latency_s": 0.01, "percentile": 0.99},
                "trace": {
                    "synthetic": {"kind": "poisson", "rate": 100, "duration_s": 5, "seed": 1}
                },
            },
            {
                "name": "B",
                "client": "c1",
                "server": "s0",
                "trace": {
                    "synthetic": {
                        "kind": "poisson",
                        "rate": 50,
                        "duration_s": 5,
                        "seed": 2,
                        "size_bytes": 65536,
                        "read_fraction": 0.0,
                    }
                },
            },
        ],
    }


def test_scenario_routes_and_stage_times() -> None:
    """A read of 4096 B on an idle 1 Gb/s network: request 200 + 0.025·4096 = 302.4 B one packet,
    response 200 + 1.1·4096 = 4705.6 B in 4 packets; two hops each way, memory device."""
    doc = small_doc()
    doc["workloads"] = doc["workloads"][:1]
    doc["workloads"][0]["trace"] = {"synthetic": {"kind": "poisson", "rate": 1, "duration_s": 2}}
    sim = Scenario.from_dict(doc).simulator()
    sim.run()
    a = sim.results()["A"]
    assert a.stages == ("net_in", "storage", "net_out")
    c = 125e6
    expected = [2 * 302.4 / c, 0.0, 4705.6 / c + 1500 / c]
    assert a.stage_time[0].tolist() == pytest.approx(expected, rel=1e-9)


def test_scenario_key_value_workload_has_no_device_stage() -> None:
    sim = Scenario.from_dict(small_doc()).simulator()
    sim.run()
    res = sim.results()
    assert res["B"].stages == ("net_in", "net_out")
    assert res["A"].finished.all() and res["B"].finished.all()
    assert res["A"].slo_met is True and res["B"].slo_met is None


def test_scenario_is_deterministic() -> None:
    runs = []
    for _ in range(2):
        sim = Scenario.from_dict(small_doc()).simulator()
        sim.run()
        runs.append(np.concatenate([w.exit.ravel() for w in sim.results().workloads]))
    np.testing.assert_array_equal(runs[0], runs[1])


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    node: Any = doc
    for k in keys[:-1]:
        node = node[int(k)] if k.isdigit() else node[k]
    last = keys[-1]
    node[int(last) if last.isdigit() else last] = value


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        ("workloads.0.client", "nowhere", "workloads[0].client"),
        ("workloads.0.device", "ssd9", "workloads[0].device"),
        ("workloads.0.slo.percentile", 1.5, "workloads[0].slo.percentile"),
        ("workloads.0.slo.latency_s", -1, "workloads[0].slo.latency_s"),
        ("workloads.0.trace", {"synthetic": {"kind": "zipf"}}, "workloads[0].trace.synthetic.kind"),
        (
            "workloads.0.issue",
            {"closed": {"outstanding": 0}},
            "workloads[0].issue.closed.outstanding",
        ),
        ("workloads.0.colour", "red", "workloads[0].colour"),
        ("devices.0.host", "c9", "devices[0].host"),
        ("network", {"mtu_bytes": 0}, "network.mtu_bytes"),
        ("queues", [{"queue": "s0.sideways", "kind": "fifo"}], "queues[0].queue"),
        ("queues", [{"queue": "mem", "kind": "lottery"}], "queues[0].kind"),
        (
            "queues",
            [{"queue": "mem", "kind": "priority", "priority": {"Z": 1}}],
            "queues[0].priority.Z",
        ),
        (
            "queues",
            [{"queue": "mem", "kind": "priority", "buckets": {"A": [[0.5]]}}],
            "queues[0].buckets.A",
        ),
        ("queues", [{"queue": "mem", "kind": "sfq", "weight": {"A": 0}}], "queues[0].weight"),
    ],
)
def test_scenario_errors_name_file_and_field(tmp_path: Path, path: str, value: Any, field: str):
    doc = copy.deepcopy(small_doc())
    _set(doc, path, value)
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as e:
        Scenario.load(file).simulator()
    assert e.value.field == field
    assert str(file) in str(e.value)


def test_scenario_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        Scenario.load(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("hosts = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Scenario.load(bad)


def _tenant(name: str, priority: int, **kwargs: Any) -> TenantPlan:
    limit = StageLimit(0.5, 0.001)
    return TenantPlan(
        name,
        Slo(0.01),
        "s0",
        "mem",
        {s: priority for s in STORAGE_PATH},
        {s: limit for s in STORAGE_PATH},
        Bound(0.005, "test"),
        **kwargs,
    )


MEMORY_PROFILE = {
    "bandwidthTable": [{"requestSize": 4096, "readBandwidth": 1e9, "writeBandwidth": 1e9}]
}


def test_scenario_from_plan_configures_every_queue_on_the_route() -> None:
    extra = {Stage.NET_OUT: (StageLimit(0.9, 0.0001),)}
    plan = Plan(
        "test",
        1,
        [_tenant("A", 0, client_host="c0", extra_limits=extra), _tenant("B", 1, client_host="c1")],
    )
    traces = {w["name"]: w["trace"] for w in small_doc()["workloads"]}
    doc = scenario_from_plan(plan, traces, profile=MEMORY_PROFILE, link_bandwidth_bytes_per_s=1e8)
    queues = {q["queue"]: q for q in doc["queues"]}
    assert set(queues) == {
        "c0.egress",
        "c0.ingress",
        "c1.egress",
        "c1.ingress",
        "s0.ingress",
        "s0.egress",
        "s0.mem",
    }
    assert queues["c0.egress"]["buckets"] == {"A": [[0.5, 0.001]]}
    assert queues["s0.egress"]["buckets"]["A"] == [[0.5, 0.001], [0.9, 0.0001]]
    assert "buckets" not in queues["s0.ingress"]  # the sender shapes, not the receiver
    # plan level 0 is the most important: the simulator's larger number, above best effort (0)
    assert queues["s0.ingress"]["priority"] == {"A": 8, "B": 7}
    sim = Scenario.from_dict(doc).simulator()
    sim.run()
    assert sim.results()["B"].stages == ("net_in", "storage", "net_out")
    with pytest.raises(ConfigError, match="no trace given"):
        scenario_from_plan(plan, {}, profile=MEMORY_PROFILE, link_bandwidth_bytes_per_s=1e8)


def test_scenario_from_plan_network_only_disciplines_and_dispatch() -> None:
    """A network-only tenant talks to its server (no device); a stage's discipline reaches every
    queue of the stage; the plan's dispatch rule reaches every device."""
    net = TenantPlan(
        "N",
        Slo(0.01),
        "s0",
        None,
        {Stage.NET_IN: 2, Stage.NET_OUT: None},
        {},
        Bound(math.inf, "test"),
        client_host="c0",
    )
    disk = dataclasses.replace(_tenant("D", 0, client_host="c1"), weight={Stage.STORAGE: 3.0})
    plan = Plan(
        "test",
        1,
        [net, disk],
        disciplines={
            Stage.NET_IN: Discipline("priority", "demotion"),
            Stage.STORAGE: Discipline("sfq"),
            Stage.NET_OUT: Discipline("fifo"),
        },
        dispatch=DispatchRule(read_mpl=2, write_mpl=None, low_priority_mpl=0),
    )
    traces = {w["name"]: w["trace"] for w in small_doc()["workloads"]}
    doc = scenario_from_plan(
        plan,
        {"N": traces["A"], "D": traces["B"]},
        profile=MEMORY_PROFILE,
        link_bandwidth_bytes_per_s=1e8,
    )
    (n,) = [w for w in doc["workloads"] if w["name"] == "N"]
    assert n["server"] == "s0" and "device" not in n
    queues = {q["queue"]: q for q in doc["queues"]}
    assert queues["c0.egress"]["mode"] == "demotion" and queues["c0.egress"]["priority"]["N"] == 6
    # every parameter the plan has reaches the table; the SFQ reads its weights only
    assert queues["s0.mem"]["kind"] == "sfq" and queues["s0.mem"]["weight"] == {"D": 3.0}
    assert queues["s0.mem"]["priority"] == {"D": 8}
    assert queues["s0.egress"]["kind"] == queues["c0.ingress"]["kind"] == "fifo"
    (device,) = doc["devices"]
    assert (device["read_mpl"], device["low_priority_mpl"]) == (2, 0)
    assert "write_mpl" not in device  # the profile's own limit
    sim = Scenario.from_dict(doc).simulator()
    sim.run()
    assert sim.results()["N"].stages == ("net_in", "net_out")


def test_simulate_cli_prints_table_and_writes_plot(tmp_path: Path, capsys: Any) -> None:
    doc = small_doc()
    file = tmp_path / "s.json"
    file.write_text(json.dumps(doc))
    assert main(["simulate", str(file), "--plot", str(tmp_path / "tail.png")]) == 0
    out = capsys.readouterr().out
    assert "| A | 10 ms @ 99% |" in out and "| yes |" in out
    assert (tmp_path / "tail.png").stat().st_size > 1000
    doc["workloads"][0]["slo"]["latency_s"] = 1e-6
    file.write_text(json.dumps(doc))
    assert main(["simulate", str(file), "--no-plot"]) == 1  # an SLO missed
    assert "| NO |" in capsys.readouterr().out


def test_simulate_cli_reports_config_errors_without_traceback(tmp_path: Path, capsys: Any):
    file = tmp_path / "s.json"
    file.write_text(json.dumps({"hosts": []}))
    assert main(["simulate", str(file)]) == 2
    err = capsys.readouterr().err
    assert "field workloads" in err and "Traceback" not in err


@pytest.mark.skipif(not EXAMPLE.exists(), reason="example scenario absent")
def test_simulate_example_scenario_loads() -> None:
    scenario = Scenario.load(EXAMPLE)
    assert [w.name for w in scenario.workloads] == ["A", "B", "L"]
    sim = scenario.simulator()
    sim.run(1.0)
    assert sim.results()["A"].finished.sum() > 1000


def test_scenario_disk_device_serves_model_tokens(tmp_path: Path) -> None:
    """A closed-loop sequential copy on a disk: one request at a time, so each request's storage
    time is exactly its disk-model work — transfer only once the access is sequential."""
    profile = {
        "type": "storageDisk",
        "rpm": 7200,
        "trackToTrackSeekTime": 0.001,
        "averageSeekTime": 0.0085,
        "fullStrokeSeekTime": 0.018,
        "capacityBytes": 10**12,
        "transferBandwidth": 150_000_000,
        "sequentialHistory": 4,
    }
    (tmp_path / "disk.json").write_text(json.dumps(profile))
    doc = {
        "hosts": [{"name": "c"}, {"name": "s"}],
        "devices": [{"name": "hdd", "host": "s", "kind": "disk", "profile": "disk.json"}],
        "workloads": [
            {
                "name": "L",
                "client": "c",
                "device": "hdd",
                "issue": {"closed": {"outstanding": 1}},
                "trace": {
                    "synthetic": {"kind": "sequential", "requests": 50, "size_bytes": 150_000}
                },
            }
        ],
    }
    sim = Scenario.from_dict(doc, base=tmp_path).simulator()
    sim.run()
    storage = sim.results()["L"].stage_time[:, 1]
    assert storage[0] == pytest.approx(0.0085 + 30 / 7200 + 0.001)  # random first access
    assert storage[1:] == pytest.approx(np.full(49, 0.001))  # sequential: transfer only


def test_scenario_onoff_source_is_bursty() -> None:
    doc = small_doc()
    doc["workloads"][0]["trace"] = {
        "synthetic": {"kind": "onoff", "rate": 200, "c2": 20, "duration_s": 5, "seed": 3}
    }
    scenario = Scenario.from_dict(doc)
    gaps = np.diff(scenario.workloads[0].trace.time)
    assert gaps.var() / gaps.mean() ** 2 > 5
