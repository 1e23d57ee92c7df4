from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound import _core
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import (
    DISCIPLINE_KINDS,
    Bound,
    Discipline,
    DispatchRule,
    Plan,
    Rejection,
    StageLimit,
    TenantPlan,
    enforcer_level,
    stage_queues,
)
from tailbound.stages import NETWORK_PATH, STORAGE_PATH, Stage

numbers = st.floats(0.0, 1.0, allow_nan=False)
names = st.text("abcdefgh0123", min_size=1, max_size=6)


@st.composite
def bounds(draw: st.DrawFn, stages: tuple[Stage, ...]) -> Bound:
    return Bound(
        latency_s=draw(numbers),
        analysis=draw(st.sampled_from(["wc-check", "snc-meister", "dnc"])),
        percentile=draw(st.sampled_from([1.0, 0.999])),
        stages={s: draw(numbers) for s in stages if draw(st.booleans())},
        alone_s=draw(st.none() | numbers),
        joint_s=draw(st.none() | numbers),
    )


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    n = draw(st.integers(0, 4))
    tenants = []
    for i in range(n):
        device = draw(st.none() | names)
        stages = STORAGE_PATH if device is not None else NETWORK_PATH
        limits = {
            s: StageLimit(
                draw(numbers),
                draw(numbers),
                None if s == Stage.STORAGE else draw(st.floats(1.0, 1e10)),
            )
            for s in stages
            if draw(st.booleans())
        }
        extra = {
            s: (StageLimit(draw(numbers), draw(numbers)),) for s in limits if draw(st.booleans())
        }
        tenants.append(
            TenantPlan(
                name=f"t{i}",
                slo=Slo(draw(st.floats(0.001, 5.0)), draw(st.sampled_from([0.99, 0.999, 1.0]))),
                server=draw(names),
                device=device,
                priority={s: draw(st.integers(0, 4)) for s in stages},
                limits=limits,
                extra_limits=extra,
                bound=draw(bounds(stages)),
                client_host=draw(st.none() | names),
                client_vm=draw(st.none() | names),
                service_class={s: draw(names) for s in stages if draw(st.booleans())},
            )
        )
    rejected = [Rejection("x", "fits on no server"), Rejection("y", "misses", ("y", "t0"))]
    disciplines = {
        s: Discipline(
            draw(st.sampled_from(DISCIPLINE_KINDS)),
            "demotion",
            class_weight=draw(st.dictionaries(names, st.floats(0.01, 100.0), max_size=3)),
            quantum_s=draw(st.none() | st.floats(1e-6, 1.0)),
        )
        for s in STORAGE_PATH
    }
    return Plan(
        "workloadcompactor",
        draw(st.integers(0, 20)),
        tenants,
        rejected,
        1.1,
        {"k": 1},
        disciplines,
        DispatchRule(draw(st.none() | st.integers(1, 64)), None, draw(st.none() | st.just(0))),
    )


def tenant(name: str = "a", device: str | None = "ssd0", level: int = 0) -> TenantPlan:
    stages = STORAGE_PATH if device is not None else NETWORK_PATH
    limits = {s: StageLimit(0.1, 0.01, 125e6 if s != Stage.STORAGE else None) for s in stages}
    return TenantPlan(
        name, Slo(0.1), "s0", device, dict.fromkeys(stages, level), limits, Bound(0.05, "wc-check")
    )


@settings(max_examples=60, deadline=None)
@given(plans())
def test_plan_json_round_trips(plan: Plan) -> None:
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_plan_save_is_atomic_and_loads(tmp_path: Path) -> None:
    plan = Plan("knee", 1, [tenant()])
    path = tmp_path / "plan.json"
    plan.save(path)
    assert Plan.load(path) == plan
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]
    doc = json.loads(path.read_text())
    assert doc["tenants"][0]["stages"]["net_in"]["rate_bytes_per_s"] == pytest.approx(12.5e6)
    assert "rate_bytes_per_s" not in doc["tenants"][0]["stages"]["storage"]


def test_infinite_bound_is_null_in_the_file(tmp_path: Path) -> None:
    t = tenant()
    plan = Plan("snc-meister", 1, [TenantPlan(**{**t.__dict__, "bound": Bound(float("inf"), "x")})])
    plan.save(tmp_path / "p.json")
    assert json.loads((tmp_path / "p.json").read_text())["tenants"][0]["latency_bound_s"] is None
    assert Plan.load(tmp_path / "p.json").tenants[0].latency_bound_s == float("inf")


def test_network_only_tenant_crosses_two_stages() -> None:
    t = tenant(device=None)
    assert t.stages == NETWORK_PATH
    assert stage_queues(t) == {
        Stage.NET_IN: ("client-a.egress", "s0.ingress"),
        Stage.NET_OUT: ("s0.egress", "client-a.ingress"),
    }
    assert t.buckets(Stage.STORAGE) == []


def test_version_1_plans_are_read() -> None:
    doc = Plan("knee", 1, [tenant()]).to_json()
    doc["version"] = 1
    doc["rejected"] = ["b"]
    for key in ("priority_levels", "disciplines", "dispatch", "inputs"):
        doc.pop(key)
    for t in doc["tenants"]:
        t.pop("bound")
    plan = Plan.from_json(doc)
    assert plan.rejected == [Rejection("b", "not placed")]
    assert plan.tenants[0].latency_bound_s == 0.05
    assert plan.discipline(Stage.STORAGE) == Discipline("priority", "shaping")


def test_levels_beyond_the_limit_are_refused() -> None:
    doc = Plan("pm", 1, [tenant(level=3)], priority_levels=4).to_json()
    assert Plan.from_json(doc).levels_used() == 1
    doc["priority_levels"] = 3
    with pytest.raises(ConfigError) as info:
        Plan.from_json(doc)
    assert info.value.field == "tenants[0].priority.net_in"


def test_enforcer_levels_keep_the_order_above_best_effort() -> None:
    levels = [enforcer_level(p, 8) for p in range(8)]
    assert levels == sorted(levels, reverse=True) and min(levels) > 0


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("tenants"), "tenants"),
        (lambda d: d["tenants"][0].update(server=3), "tenants[0].server"),
        (
            lambda d: d["tenants"][0]["stages"]["storage"].update(rate="x"),
            "tenants[0].stages.storage.rate",
        ),
        (lambda d: d["tenants"][0]["priority"].pop("net_out"), "tenants[0].priority.net_out"),
        (lambda d: d.update(version=9), "format"),
        (lambda d: d["tenants"][0].update(percentile=1.5), "tenants[0].percentile"),
        (lambda d: d["tenants"][0].update(slo_s=-1), "tenants[0].slo_s"),
        (lambda d: d["tenants"].append(dict(d["tenants"][0])), "tenants[1].name"),
        (lambda d: d["disciplines"].update(storage={"kind": "lottery"}), "disciplines.storage"),
        (
            lambda d: d["disciplines"].update(storage={"kind": "dwrr", "class_weight": {"g": 0}}),
            "disciplines.storage.class_weight.g",
        ),
        (
            lambda d: d["disciplines"].update(storage={"kind": "dwrr", "class_weight": [1]}),
            "disciplines.storage.class_weight",
        ),
        (
            lambda d: d["disciplines"].update(storage={"kind": "dwrr", "quantum_s": "1ms"}),
            "disciplines.storage.quantum_s",
        ),
        (
            lambda d: d["tenants"][0].update(service_class={"storage": 3}),
            "tenants[0].service_class.storage",
        ),
        (
            lambda d: d["tenants"][0].update(service_class={"disk": "g"}),
            "tenants[0].service_class.disk",
        ),
        (lambda d: d["tenants"][0].update(service_class="g"), "tenants[0].service_class"),
        (lambda d: d["dispatch"].update(read_mpl=-1), "dispatch.read_mpl"),
        (lambda d: d["rejected"].append({"name": "z"}), "rejected[0].reason"),
    ],
)
def test_plan_errors_name_the_field(mutate, field: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    doc = Plan("knee", 1, [tenant()]).to_json()
    mutate(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as info:
        Plan.load(path)
    assert info.value.field == field and str(path) in str(info.value)


def test_plan_file_is_world_readable(tmp_path: Path) -> None:
    plan = Plan("knee", 0, [])
    plan.save(tmp_path / "p.json")
    assert (tmp_path / "p.json").stat().st_mode & 0o777 == 0o644


def test_discipline_kinds_are_the_cores() -> None:
    """A kind defined in Rust is a kind a plan may ask for, and an unknown one is refused with
    the core's list."""
    assert DISCIPLINE_KINDS == _core.SCHEDULER_KINDS and "dwrr" in DISCIPLINE_KINDS
    doc = Plan("knee", 1, [tenant()]).to_json()
    doc["disciplines"]["storage"] = {"kind": "lottery"}
    with pytest.raises(ConfigError) as info:
        Plan.from_json(doc)
    assert all(repr(k) in str(info.value) for k in _core.SCHEDULER_KINDS)


def test_class_options_are_optional_and_round_trip() -> None:
    """Service classes and the class options are written only when set (older plans lack them)
    and read back as written."""
    plain = Plan("knee", 1, [tenant()]).to_json()
    assert "service_class" not in plain["tenants"][0]
    assert plain["disciplines"]["storage"] == {"kind": "priority", "mode": "shaping"}
    t = TenantPlan(**{**tenant().__dict__, "service_class": {Stage.STORAGE: "gold"}})
    dwrr = Discipline("dwrr", class_weight={"gold": 3.0, "bronze": 0.5}, quantum_s=0.002)
    plan = Plan(
        "knee",
        1,
        [t],
        disciplines={**dict.fromkeys(STORAGE_PATH, Discipline()), Stage.STORAGE: dwrr},
    )
    doc = json.loads(json.dumps(plan.to_json()))
    assert doc["tenants"][0]["service_class"] == {"storage": "gold"}
    assert doc["disciplines"]["storage"] == {
        "kind": "dwrr",
        "mode": "shaping",
        "class_weight": {"gold": 3.0, "bronze": 0.5},
        "quantum_s": 0.002,
    }
    assert Plan.from_json(doc) == plan
    with pytest.raises(ValueError, match="class weight 'gold'"):
        Discipline("dwrr", class_weight={"gold": 0.0})
    with pytest.raises(ValueError, match="quantum_s"):
        Discipline("dwrr", quantum_s=float("inf"))
