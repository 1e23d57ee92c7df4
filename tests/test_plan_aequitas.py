"""A Plan's ``aequitas`` section: written and read back unchanged, the enforcer's view and the
controller's configuration, and bad fields of a plan refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.policies.aequitas_case import write_case

from tailbound import _core
from tailbound.cli.main import main
from tailbound.errors import ConfigError
from tailbound.plan import Plan
from tailbound.plan_aequitas import EnforcedClass, enforcer_view
from tailbound.stages import Stage


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    out = tmp_path / "plan.json"
    assert (
        main(
            [
                "admit",
                "--tenants",
                str(write_case(tmp_path)),
                "--policy",
                "aequitas",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    return out


def test_the_section_round_trips(saved: Path) -> None:
    plan = Plan.load(saved)
    assert plan.aequitas is not None
    again = Plan.from_json(json.loads(json.dumps(plan.to_json(base=saved.parent))))
    assert again.aequitas == plan.aequitas
    doc = json.loads(saved.read_text())["aequitas"]
    assert doc["network"]["classes"][0] == {
        "name": "QoS_h",
        "weight": 4.0,
        "slo_s": 25e-6,
        "slo_unit": "rpc",
        "percentile": 0.999,
        "dscp": 46,
    }
    assert doc["network"]["controller"] == {
        "alpha": 0.01,
        "beta": 0.01,
        "floor": 0.1,
        "rules": "artifact",
        "increment_window_s": [0.002],
    }
    assert doc["tenants"]["search"]["class_mix"] == {"QoS_h": 0.7, "QoS_l": 0.3}
    # the network stages are WFQ with the classes' weights
    for stage in (Stage.NET_IN, Stage.NET_OUT):
        d = plan.discipline(stage)
        assert d.kind == "wfq" and dict(d.class_weight) == {"QoS_h": 4.0, "QoS_l": 1.0}


def test_the_enforcers_view_and_the_controllers_configuration(saved: Path) -> None:
    plan = Plan.load(saved)
    view = enforcer_view(plan)
    assert view.link_rate_bps == 100e9
    assert view.classes == (EnforcedClass("QoS_h", 4.0, 46), EnforcedClass("QoS_l", 1.0, 0))
    assert plan.aequitas is not None
    config = plan.aequitas.admission_config()
    assert config == {
        "latency_target_s": [25e-6],
        "target_percentile": [0.999],
        "alpha": 0.01,
        "beta": 0.01,
        "floor": 0.1,
        "per_mtu": False,
        "rules": "artifact",
        "increment_window_s": [0.002],
    }
    # exactly what the core's controller takes
    targets = config.pop("latency_target_s")
    _core.AequitasAdmission(targets, **config)


def test_a_plan_without_the_section_has_no_enforcer_view(tmp_path: Path) -> None:
    plan = Plan("dnc", 0, [])
    with pytest.raises(ConfigError) as e:
        enforcer_view(plan)
    assert e.value.field == "aequitas"


def _edit(doc: dict[str, Any], path: str, value: Any) -> None:
    *head, last = path.split(".")
    node: Any = doc
    for key in head:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is None:
        del node[int(last) if last.isdigit() else last]
    else:
        node[int(last) if last.isdigit() else last] = value


BAD = [
    ("aequitas.network.classes.0.weight", 0, "aequitas.network.classes[0].weight"),
    ("aequitas.network.classes.1.weight", None, "aequitas.network.classes[1].weight"),
    ("aequitas.network.classes.0.slo_s", -1.0, "aequitas.network.classes[0].slo_s"),
    ("aequitas.tenants.search.class_mix.QoS_h", 1.7, "aequitas.tenants.search.class_mix.QoS_h"),
    ("aequitas.tenants.nobody", {"class_mix": {"QoS_h": 1}}, "aequitas.tenants.nobody"),
    ("aequitas.prediction.admitted_share.QoS_h", 0, "aequitas.prediction.admitted_share.QoS_h"),
    ("aequitas.prediction.burst_load", 0.5, "aequitas.prediction.burst_load"),
    ("aequitas.extra", 1, "aequitas.extra"),
]


@pytest.mark.parametrize(("where", "value", "field"), BAD, ids=[f for *_, f in BAD])
def test_a_bad_plan_field_is_refused_by_name(
    saved: Path, capsys: pytest.CaptureFixture[str], where: str, value: Any, field: str
) -> None:
    doc = json.loads(saved.read_text())
    _edit(doc, where, value)
    saved.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as e:
        Plan.load(saved)
    assert e.value.field == field
    assert main(["verify", "--plan", str(saved)]) == 2
    assert field in capsys.readouterr().err
