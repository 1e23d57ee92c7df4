"""Graduated SLOs and Nested QoS classes in the Plan (issue 25): read and written with
field-naming errors, translated by :mod:`tailbound.plan_queues` into the core's ``nested`` kind,
replayed in the simulator and written into a gateway configuration ``tailbound-gate --check``
accepts."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.enforce.storage import find_binary, gate_config
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import (
    Bound,
    Discipline,
    DispatchRule,
    NestedClass,
    Plan,
    TenantPlan,
)
from tailbound.plan_queues import queue_tables, scheduler_config
from tailbound.profiles.tokens import SsdProfile
from tailbound.sim.plan import replay
from tailbound.stages import STORAGE_PATH, Stage

#: One 4 KiB read is X = 4096 / 8e7 = 51.2 µs of device work.
PROFILE = SsdProfile(
    sizes=np.array([4096.0, 65536.0]),
    read_bandwidth=np.array([8e7, 3e8]),
    write_bandwidth=np.array([4e7, 1.5e8]),
    read_mpl=16,
    write_mpl=32,
)
X = 4096 / 8e7
#: The steady tenant S at 20% of the device, the bursty B at 120% of it, for SECONDS.
S_LOAD, B_LOAD, SECONDS = 0.2, 1.2, 2.0
#: Inner deadline of both tenants (s).
DELTA_1 = 0.002


def _tenant(name: str, client: str, slo: Slo, classes: list[NestedClass] | None) -> TenantPlan:
    return TenantPlan(
        name,
        slo,
        "s0",
        "ssd0",
        dict.fromkeys(STORAGE_PATH, 0),
        {},
        Bound(math.inf, "test"),
        client_host=client,
        nested={Stage.STORAGE: tuple(classes)} if classes else {},
    )


def nested_plan(kind: str = "nested") -> Plan:
    """S buys classes covering its steady rate (20 requests at 30%, 2 ms; 40 at 40%, 20 ms), B a
    small envelope (10 at 10%, 2 ms; 20 at 20%, 20 ms), the rest of B is best effort; one
    request at the device at a time (the thesis' model); the network stages are FIFO."""
    s = _tenant(
        "S",
        "c0",
        Slo.graduated([(DELTA_1, 0.99), (0.02, 1.0)]),
        [NestedClass(20 * X, 0.3, DELTA_1), NestedClass(40 * X, 0.4, 0.02)],
    )
    b = _tenant(
        "B",
        "c1",
        Slo.graduated([(DELTA_1, 0.5), (0.02, 0.9)]),
        [NestedClass(10 * X, 0.1, DELTA_1), NestedClass(20 * X, 0.2, 0.02)],
    )
    disciplines = {
        **dict.fromkeys(STORAGE_PATH, Discipline("fifo")),
        Stage.STORAGE: Discipline(kind),
    }
    return Plan(
        "test", 1, [s, b], disciplines=disciplines, dispatch=DispatchRule(read_mpl=1, write_mpl=1)
    )


def sources() -> dict[str, Any]:
    def poisson(load: float, seed: int) -> dict[str, Any]:
        trace = {"kind": "poisson", "rate": load / X, "duration_s": SECONDS, "seed": seed}
        return {"synthetic": {**trace, "size_bytes": 4096, "read_fraction": 1.0}}

    return {"S": poisson(S_LOAD, 1), "B": poisson(B_LOAD, 2)}


def test_a_nested_plan_round_trips(tmp_path: Path) -> None:
    plan = nested_plan()
    path = tmp_path / "plan.json"
    plan.save(path)
    doc = json.loads(path.read_text())
    assert doc["tenants"][0]["slo_grades"] == [[DELTA_1, 0.99], [0.02, 1.0]]
    assert doc["tenants"][0]["slo_s"] == DELTA_1 and doc["tenants"][0]["percentile"] == 0.99
    assert doc["tenants"][0]["nested"] == {"storage": [[20 * X, 0.3, DELTA_1], [40 * X, 0.4, 0.02]]}
    loaded = Plan.load(path)
    assert loaded == plan
    assert loaded.tenants[0].slo is not None and loaded.tenants[0].slo.is_graduated
    # a plan without them writes neither field
    plain = dataclasses.replace(
        plan, tenants=[dataclasses.replace(t, slo=Slo(0.05), nested={}) for t in plan.tenants]
    )
    assert not {"slo_grades", "nested"} & set(plain.to_json()["tenants"][0])


def _bad(edit: Any) -> ConfigError:
    doc = nested_plan().to_json()
    edit(doc["tenants"][1])
    with pytest.raises(ConfigError) as e:
        Plan.from_json(doc, path="p.json")
    assert str(e.value).startswith("p.json")
    return e.value


@pytest.mark.parametrize(
    ("classes", "field", "words"),
    [
        ([[0.002, 0.1, 0.002], [0.001, 0.2, 0.02]], "nested.storage", "class 2 has sigma_s"),
        ([[0.001, 0.2, 0.002], [0.002, 0.1, 0.02]], "nested.storage", "class 2 has rho"),
        ([[0.001, 0.1, 0.02], [0.002, 0.2, 0.002]], "nested.storage", "class 2 has delta_s"),
        ([[0.001, 0.0, 0.002]], "nested.storage", "rho must be positive"),
        ([], "nested.storage", "at least one class"),
        ([[0.001, 0.1]], "nested.storage[0]", "[sigma_s, rho, delta_s]"),
        ([[0.001, "x", 0.002]], "nested.storage[0]", "[sigma_s, rho, delta_s]"),
    ],
)
def test_bad_classes_name_the_tenants_field(classes: Any, field: str, words: str) -> None:
    error = _bad(lambda t: t.__setitem__("nested", {"storage": classes}))
    assert error.field == f"tenants[1].{field}" and words in error.message, str(error)


def test_bad_grades_name_the_tenants_field() -> None:
    def grades(g: Any) -> Any:
        return lambda t: t.__setitem__("slo_grades", g)

    error = _bad(grades([[0.002, 0.5], [0.02, 0.4]]))
    assert error.field == "tenants[1].slo_grades[1]" and "fractions must increase" in error.message
    error = _bad(grades([[0.003, 0.5], [0.02, 0.9]]))  # not slo_s and percentile
    assert error.field == "tenants[1].slo_grades[0]"
    error = _bad(lambda t: t.__setitem__("nested", {"disk": [[1, 1, 1]]}))
    assert error.field == "tenants[1].nested.disk"
    # version 2 plans never had them
    doc = nested_plan().to_json()
    doc["version"] = 2
    with pytest.raises(ConfigError, match="unknown key"):
        Plan.from_json(doc)


def test_the_nested_table_reaches_the_core() -> None:
    plan = nested_plan()
    table = queue_tables(plan)["s0.ssd0"]
    assert table["kind"] == "nested"
    assert table["nested"]["B"] == (
        NestedClass(10 * X, 0.1, DELTA_1),
        NestedClass(20 * X, 0.2, 0.02),
    )
    config = scheduler_config(plan, "s0.ssd0")
    assert config == {
        "kind": "nested",
        "classes": [
            [[20 * X, 0.3, DELTA_1], [40 * X, 0.4, 0.02]],
            [[10 * X, 0.1, DELTA_1], [20 * X, 0.2, 0.02]],
        ],
    }


def test_a_nested_queue_without_classes_is_refused() -> None:
    plan = nested_plan()
    bare = dataclasses.replace(
        plan, tenants=[dataclasses.replace(t, nested={}) for t in plan.tenants]
    )
    with pytest.raises(ConfigError) as e:
        queue_tables(bare, path="p.json")
    assert e.value.field == "disciplines.storage" and "best effort" in e.value.message
    assert "queue s0.ssd0" in e.value.message and "(B, S)" in e.value.message
    with pytest.raises(ConfigError, match="none of its tenants"):
        gate_config(bare, PROFILE, backend_dir="/srv/gate")
    # one tenant with classes is enough: the other is best effort
    half = dataclasses.replace(plan, tenants=[plan.tenants[0], bare.tenants[1]])
    assert scheduler_config(half, "s0.ssd0")["classes"][1] == []


def _within(latencies: np.ndarray, deadline: float) -> float:
    return float(np.mean(latencies <= deadline))


def test_a_nested_plan_replays_the_steady_tenant_meets_its_inner_deadline() -> None:
    """B offers 120% of the device for 2 s beside S's steady 20%. Under ``nested`` the classed
    work due within 2 ms is at most S's and B's inner buckets plus one request in service,
    (20 + 10 + 1) X = 1.59 ms < 2 ms, so S's inner-class requests (nearly all of S: its bucket
    refills at 1.5 times its rate) meet 2 ms. The single-class EDF plan (both deadlines the
    innermost SLO latency, 2 ms: FIFO order) lets B's backlog delay S by up to ~0.8 s."""
    nested = replay(
        nested_plan(), sources(), link_bandwidth_bytes_per_s=1e11, profile=PROFILE.to_json()
    )
    edf = replay(
        nested_plan("edf"), sources(), link_bandwidth_bytes_per_s=1e11, profile=PROFILE.to_json()
    )
    assert (31 * X) < DELTA_1
    s_nested, s_edf = _within(nested["S"], DELTA_1), _within(edf["S"], DELTA_1)
    assert s_nested >= 0.999, s_nested  # measured: 1.0
    assert s_edf < 0.5, s_edf  # measured: 0.003
    assert float(np.max(nested["S"])) <= 0.02
    # B's excess is best effort, served after every classed request: B is what waits
    assert _within(nested["B"], DELTA_1) < 0.5


def test_a_nested_plan_writes_a_gateway_configuration_the_gateway_accepts(tmp_path: Path) -> None:
    plan = nested_plan()
    path = tmp_path / "plan.json"
    plan.save(path)
    config = gate_config(Plan.load(path), PROFILE, backend_dir="/srv/gate")
    assert config["exports"] == ["S", "B"]
    assert config["scheduler"] == scheduler_config(plan, "s0.ssd0")
    (tmp_path / "gate.json").write_text(json.dumps(config))
    check = subprocess.run(
        [str(find_binary()), "--check", str(tmp_path / "gate.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0 and "ok: 2 exports" in check.stdout, check.stderr


def test_classes_of_a_plan_built_in_memory_are_checked_by_the_core() -> None:
    """A plan built in code is not read as a file is: the core's refusal of classes not nested
    names the plan's field behind the queue table's ``nested.B``."""
    plan = nested_plan()
    reversed_b = tuple(reversed(plan.tenants[1].nested[Stage.STORAGE]))
    bad = dataclasses.replace(
        plan,
        tenants=[
            plan.tenants[0],
            dataclasses.replace(plan.tenants[1], nested={Stage.STORAGE: reversed_b}),
        ],
    )
    with pytest.raises(ConfigError) as e:
        scheduler_config(bad, "s0.ssd0", path="p.json")
    assert e.value.field == "tenants[1].nested.storage", str(e.value)
    assert "classes must be nested" in e.value.message
