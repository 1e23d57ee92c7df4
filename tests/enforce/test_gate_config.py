"""The gateway runs the queue the simulator replays: for one Plan, the configuration
``tailbound.enforce.storage.gate_config`` writes and the scenario ``tailbound.sim.plan`` builds
agree on every tenant's level and buckets, the limit mode and the device's dispatch limits."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tailbound.enforce.storage import gate_config
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import (
    Bound,
    Discipline,
    DispatchRule,
    Plan,
    StageLimit,
    TenantPlan,
)
from tailbound.profiles.tokens import SsdProfile
from tailbound.sim.plan import scenario_from_plan
from tailbound.sim.scenario import Scenario
from tailbound.stages import STORAGE_PATH, Stage

PROFILE = SsdProfile(
    sizes=np.array([4096.0, 65536.0]),
    read_bandwidth=np.array([8e7, 3e8]),
    write_bandwidth=np.array([4e7, 1.5e8]),
    read_mpl=16,
    write_mpl=32,
)


def _tenant(
    name: str, level: int | None, limits: list[StageLimit], device: str | None = "ssd0"
) -> Any:
    first = {Stage.STORAGE: limits[0]} if limits else {}
    extra = {Stage.STORAGE: tuple(limits[1:])} if len(limits) > 1 else {}
    return TenantPlan(
        name,
        Slo(0.05),
        "s0",
        device,
        dict.fromkeys(STORAGE_PATH, level),
        first,
        Bound(0.04, "test"),
        extra_limits=extra,
    )


def _plan(mode: str) -> Plan:
    return Plan(
        "test",
        1,
        [
            _tenant("A", 0, [StageLimit(0.1, 0.02), StageLimit(0.5, 0.001)]),
            _tenant("B", 2, [StageLimit(0.3, 0.01)]),
            _tenant("C", None, []),
            _tenant("D", 1, [], device="ssd1"),
        ],
        disciplines=dict.fromkeys(STORAGE_PATH, Discipline("priority", mode)),
        dispatch=DispatchRule(
            read_mpl=4, low_priority_mpl=1, low_priority_work_s=0.005, level_mpl=1
        ),
        priority_levels=4,
    )


@pytest.mark.parametrize("mode", ["shaping", "demotion"])
def test_gateway_and_simulator_agree_on_the_storage_queue(mode: str) -> None:
    plan = _plan(mode)
    config = gate_config(plan, PROFILE, backend_dir="/nowhere", device="s0.ssd0")
    sources = {
        t.name: {"synthetic": {"kind": "poisson", "rate": 10, "duration_s": 1}}
        for t in plan.tenants
    }
    doc = scenario_from_plan(
        plan, sources, link_bandwidth_bytes_per_s=125e6, profile=PROFILE.to_json()
    )
    queue = next(q for q in doc["queues"] if q["queue"] == "s0.ssd0")
    assert config["exports"] == ["A", "B", "C"]  # D is on another device
    sched = config["scheduler"]
    assert sched["demotion"] == (queue["mode"] == "demotion")
    for i, name in enumerate(config["exports"]):
        assert sched["priority"][i] == queue["priority"][name]
        assert sched["buckets"][i] == queue["buckets"].get(name, [])
    # the device's limits as the simulator reads them from the same scenario
    scenario = Scenario.from_dict(doc)
    device = next(d for d in scenario.devices if d.name == "s0.ssd0")
    limits = config["limits"]
    assert device.limits["read_mpl"] == limits["read_mpl"] == 4
    assert device.limits["write_mpl"] == limits["write_mpl"] == 32
    assert device.limits["max_read_bytes"] == limits["max_read_bytes"]
    assert device.limits["max_write_bytes"] == limits["max_write_bytes"]
    assert device.limits["low_priority_mpl"] == limits["low_priority_mpl"] == 1
    assert device.limits["low_priority_work"] == limits["low_priority_work"] == 0.005
    assert device.limits["level_mpl"] == limits["level_mpl"] == 1
    # the cost table is the profile's (the gateway's interpolation is tested in Rust)
    assert config["profile"]["sizes"] == [4096.0, 65536.0]
    assert config["profile"]["read_bandwidth"] == [8e7, 3e8]


def test_other_disciplines_and_fifo_baseline() -> None:
    plan = _plan("shaping")
    fifo = gate_config(plan, PROFILE, backend_dir="/x", device="s0.ssd0", fifo=True)
    assert fifo["scheduler"] == {"kind": "fifo"}
    sfq = Plan("t", 1, plan.tenants, disciplines=dict.fromkeys(STORAGE_PATH, Discipline("sfq")))
    assert gate_config(sfq, PROFILE, backend_dir="/x", device="s0.ssd0")["scheduler"] == {
        "kind": "sfq",
        "weight": [1.0, 1.0, 1.0],
    }
    edf = Plan("t", 1, plan.tenants, disciplines=dict.fromkeys(STORAGE_PATH, Discipline("edf")))
    deadline = gate_config(edf, PROFILE, backend_dir="/x", device="s0.ssd0")["scheduler"]
    assert deadline == {"kind": "edf", "deadline": [0.05, 0.05, 0.05]}
    # no rule: the profile's MPLs, no level rule
    bare = Plan("t", 1, plan.tenants[:1])
    limits = gate_config(bare, PROFILE, backend_dir="/x")["limits"]
    assert (limits["read_mpl"], limits["write_mpl"]) == (16, 32)
    assert limits["low_priority_mpl"] is None and limits["low_priority_work"] is None
    assert "level_mpl" not in limits  # no limit on a level's requests in service
    assert not math.isnan(limits["max_read_bytes"])


def test_bad_options_are_config_errors() -> None:
    plan = _plan("shaping")
    with pytest.raises(ConfigError, match="choose one with --device"):
        gate_config(plan, PROFILE, backend_dir="/x")
    with pytest.raises(ConfigError, match="--max-request"):
        gate_config(plan, PROFILE, backend_dir="/x", device="s0.ssd0", max_request_bytes=0)
    with pytest.raises(ConfigError, match="--export-size"):
        gate_config(plan, PROFILE, backend_dir="/x", device="s0.ssd0", export_size=0)
    network_only = Plan("t", 1, [_tenant("N", 0, [], device=None)])
    with pytest.raises(ConfigError, match="no tenant of the plan has a storage device"):
        gate_config(network_only, PROFILE, backend_dir="/x")
