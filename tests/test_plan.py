from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.errors import ConfigError
from tailbound.plan import Plan, StageLimit, TenantPlan
from tailbound.stages import STORAGE_PATH, Stage

numbers = st.floats(0.0, 1.0, allow_nan=False)
names = st.text("abcdefgh0123", min_size=1, max_size=6)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    n = draw(st.integers(0, 4))
    tenants = []
    for i in range(n):
        limits = {
            s: StageLimit(
                draw(numbers),
                draw(numbers),
                None if s == Stage.STORAGE else draw(st.floats(1.0, 1e10)),
            )
            for s in STORAGE_PATH
        }
        tenants.append(
            TenantPlan(
                name=f"t{i}",
                slo_s=draw(st.floats(0.001, 5.0)),
                server=draw(names),
                device=draw(names),
                priority={s: draw(st.integers(0, 4)) for s in STORAGE_PATH},
                limits=limits,
                latency_bound_s=draw(numbers),
                client_host=draw(st.none() | names),
                client_vm=draw(st.none() | names),
            )
        )
    return Plan("workloadcompactor", draw(st.integers(0, 20)), tenants, ["x"], 1.1, {"k": 1})


@settings(max_examples=60, deadline=None)
@given(plans())
def test_plan_json_round_trips(plan: Plan) -> None:
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan


def test_plan_save_is_atomic_and_loads(tmp_path: Path) -> None:
    limits = {s: StageLimit(0.1, 0.01, 125e6 if s != Stage.STORAGE else None) for s in STORAGE_PATH}
    plan = Plan(
        "knee",
        1,
        [TenantPlan("a", 0.1, "s0", "ssd0", dict.fromkeys(STORAGE_PATH, 0), limits, 0.05)],
    )
    path = tmp_path / "plan.json"
    plan.save(path)
    assert Plan.load(path) == plan
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]
    doc = json.loads(path.read_text())
    assert doc["tenants"][0]["stages"]["net_in"]["rate_bytes_per_s"] == pytest.approx(12.5e6)
    assert "rate_bytes_per_s" not in doc["tenants"][0]["stages"]["storage"]


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
    ],
)
def test_plan_errors_name_the_field(mutate, field: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    limits = {s: StageLimit(0.1, 0.01) for s in STORAGE_PATH}
    plan = Plan(
        "knee",
        1,
        [TenantPlan("a", 0.1, "s0", "ssd0", dict.fromkeys(STORAGE_PATH, 0), limits, 0.05)],
    )
    doc = plan.to_json()
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
