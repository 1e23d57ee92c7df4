"""A Plan's controller (``control.storage``) and throughput SLOs: read, written, and translated
once (``plan_control``) into the simulator's ``control`` table and the gateway's ``control``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.enforce.storage import gate_config
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, Plan, StageControl, TenantPlan
from tailbound.plan_control import control_config, control_table
from tailbound.profiles.tokens import SsdProfile
from tailbound.sim.plan import scenario_from_plan
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.trace import Trace
from tailbound.verify import replay_plan

PROFILE = SsdProfile(
    sizes=np.array([4096.0]), read_bandwidth=np.array([4096e3]), write_bandwidth=np.array([4096e3])
)  # 1 ms per 4 KiB request


def tenant(name: str, slo: Slo | None, device: str = "ssd0") -> TenantPlan:
    return TenantPlan(
        name, slo, "s0", device, dict.fromkeys(STORAGE_PATH, 0), {}, Bound(0.05, "pslo", 0.99)
    )


def pslo_plan(*tenants: TenantPlan, **params: Any) -> Plan:
    return Plan("pslo", 1, list(tenants), control={Stage.STORAGE: StageControl.pslo(**params)})


A = Slo(0.05, 0.99, throughput_iops=100.0)
B = Slo(0.2, 0.999, throughput_iops=50.0)


def test_plan_round_trips_its_controller_and_throughput_slos() -> None:
    plan = pslo_plan(
        tenant("A", A),
        tenant("B", Slo(0.2, 0.9, throughput_bytes_per_s=1e6)),
        tenant("C", None),
        policy="TS+L",
        interval_completions=200,
    )
    doc = json.loads(json.dumps(plan.to_json()))
    assert doc["control"] == {
        "storage": {
            "kind": "pslo",
            "policy": "TS+L",
            "interval_completions": 200,
            "threshold": 2.0,
            "window_s": 0.02,
            "enable_s": 0.1,
            "sigma": 0.1,
            "eta": 0.95,
            "raise_at": 5.0,
            "max_depth": 64,
        }
    }
    assert doc["tenants"][0]["throughput_iops"] == 100.0
    assert doc["tenants"][1]["throughput_bytes_per_s"] == 1e6
    assert "throughput_iops" not in doc["tenants"][2]
    back = Plan.from_json(doc)
    assert back == plan
    assert back.tenants[0].slo == A
    # a plan without a controller or throughput SLOs writes neither key (earlier plans unchanged)
    plain = Plan("x", 1, [tenant("A", Slo(0.05, 0.99))]).to_json()
    assert "control" not in plain and "throughput_iops" not in plain["tenants"][0]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["control"].update(net_in=d["control"]["storage"]), "control.net_in"),
        (lambda d: d["control"]["storage"].update(kind="cake"), "control.storage.kind"),
        (lambda d: d["control"]["storage"].update(policy="LS+X"), "control.storage.policy"),
        (lambda d: d["control"]["storage"].update(threshold=1.0), "control.storage.threshold"),
        (
            lambda d: d["control"]["storage"].update(interval_completions=0),
            "control.storage.interval_completions",
        ),
        (lambda d: d["control"]["storage"].update(sigma=float("nan")), "control.storage.sigma"),
        (lambda d: d["control"]["storage"].update(tenants=[]), "control.storage.tenants"),
        (lambda d: d["control"]["storage"].update(bogus=1), "control.storage"),
        (lambda d: d["tenants"][0].update(throughput_iops=0), "tenants[0].throughput_iops"),
        (lambda d: d["tenants"][0].update(throughput_iops=-5), "tenants[0].throughput_iops"),
        (
            lambda d: d["tenants"][0].update(throughput_bytes_per_s=1e6),
            "tenants[0].throughput_bytes_per_s",
        ),
        (
            lambda d: d["tenants"][0].update(slo_s=None, percentile=None),
            "tenants[0].throughput_iops",
        ),
    ],
)
def test_plan_reader_refuses_a_bad_controller_or_throughput_naming_the_field(
    edit: Any, field: str
) -> None:
    doc = json.loads(json.dumps(pslo_plan(tenant("A", A), policy="LS+T").to_json()))
    edit(doc)
    with pytest.raises(ConfigError) as e:
        Plan.from_json(doc, path="plan.json")
    assert e.value.field == field and "plan.json" in str(e.value)


def test_version_2_plans_have_no_controller() -> None:
    doc = pslo_plan(tenant("A", A), policy="L").to_json()
    doc["version"] = 2
    for key in ("inputs",):
        doc.pop(key)
    with pytest.raises(ConfigError, match="unknown key"):
        Plan.from_json(doc)
    del doc["control"]
    with pytest.raises(ConfigError, match="unknown key") as e:
        Plan.from_json(doc)
    assert e.value.field == "tenants[0].throughput_iops"


def test_control_table_and_config_are_one_translation() -> None:
    plan = pslo_plan(
        tenant("BE", None),
        tenant("A", A),
        tenant("X", Slo(0.05, 0.99, throughput_iops=9.0), device="ssd1"),
        tenant("B", B),
        policy="LS+T",
        sigma=0.2,
    )
    table = control_table(plan, "s0.ssd0")
    assert table is not None
    assert table["slo"] == {
        "A": {"latency_s": 0.05, "percentile": 0.99, "throughput_iops": 100.0},
        "B": {"latency_s": 0.2, "percentile": 0.999, "throughput_iops": 50.0},
    }
    assert table["sigma"] == 0.2 and table["kind"] == "pslo"
    config = control_config(plan, "s0.ssd0")  # workloads: the device's tenants in plan order
    assert config is not None
    assert [t["workload"] for t in config["tenants"]] == [1, 2]
    assert {k: v for k, v in config.items() if k != "tenants"} == {
        k: v for k, v in table.items() if k != "slo"
    }
    assert control_table(Plan("x", 1, [tenant("A", A)]), "s0.ssd0") is None


@pytest.mark.parametrize(
    ("slo", "field"),
    [
        (Slo(0.05, 0.99), "tenants[0].throughput_iops"),
        (Slo(0.05, 0.99, throughput_bytes_per_s=1e6), "tenants[0].throughput_bytes_per_s"),
        (Slo(0.05, 1.0, throughput_iops=10.0), "tenants[0].percentile"),
        (Slo.graduated([(0.01, 0.9), (0.1, 0.99)]), "tenants[0].slo_grades"),
    ],
)
def test_translation_refuses_a_tenant_the_controller_cannot_take(slo: Slo, field: str) -> None:
    plan = pslo_plan(tenant("A", slo), policy="LS+T")
    for translate in (control_table, control_config):
        with pytest.raises(ConfigError) as e:
            translate(plan, "s0.ssd0", path="p.json")
        assert e.value.field == field


def test_gateway_config_carries_the_core_spec_in_export_order() -> None:
    plan = pslo_plan(tenant("BE", None), tenant("A", A), tenant("B", B), policy="T")
    c = gate_config(plan, PROFILE, backend_dir="/srv")
    assert c["exports"] == ["BE", "A", "B"]
    assert c["control"] == control_config(plan, "s0.ssd0")
    assert [t["workload"] for t in c["control"]["tenants"]] == [1, 2]
    assert "control" not in gate_config(plan, PROFILE, backend_dir="/srv", fifo=True)
    assert "control" not in gate_config(Plan("x", 1, [tenant("A", A)]), PROFILE, backend_dir="/s")


def poisson(rate: float, n: int, seed: int) -> Trace:
    rng = np.random.default_rng(seed)
    return Trace.from_arrays(
        time=np.cumsum(rng.exponential(1 / rate, n)),
        op=np.zeros(n, dtype=np.uint8),
        size=np.full(n, 4096),
    )


def test_verify_runs_the_controller_and_reports_throughput(tmp_path: Path) -> None:
    """A PSLO plan replayed: the device runs the controller (its log has decisions) and every
    tenant's throughput is checked against its SLO, in requests and in bytes per second."""
    traces = {"A": poisson(200, 3000, 1), "B": poisson(300, 4500, 2)}
    plan = pslo_plan(
        tenant("A", Slo(0.05, 0.99, throughput_iops=150.0)),
        tenant("B", Slo(0.05, 0.99, throughput_iops=400.0)),  # more than B offers
        policy="LS+U",
        interval_completions=500,
    )
    doc = scenario_from_plan(
        plan, traces, profile=PROFILE.to_json(), link_bandwidth_bytes_per_s=1e9
    )
    assert doc["devices"][0]["control"] == control_table(plan, "s0.ssd0")
    v = replay_plan(plan, traces, profile=PROFILE.to_json(), link_bandwidth_bytes_per_s=1e9)
    log = v.results.control["s0.ssd0"]
    decisions = np.unique(log.time_s)
    assert len(decisions) >= 7500 // 500 - 1  # the initial limits and one per N completions
    a, b = (c.throughput for c in v.checks)
    assert a is not None and b is not None
    assert a.unit == "iops" and a.met and a.achieved == pytest.approx(200, rel=0.05)
    assert not b.met and b.achieved == pytest.approx(300, rel=0.05)
    assert v.throughput_missed == ["B"] and not v.all_held
    v.to_csv(tmp_path / "v.csv")
    rows = [r.split(",") for r in (tmp_path / "v.csv").read_text().splitlines()]
    assert rows[0][-5:] == [
        "bound_held",
        *("throughput_slo", "throughput_unit", "throughput", "throughput_met"),
    ]
    assert rows[2][-4:-2] == ["400.0", "iops"] and rows[2][-1] == "False"
    assert "/ 400 IOPS | NO |" in v.table().splitlines()[3]

    bytes_plan = Plan(
        "x", 1, [tenant("A", Slo(0.05, 0.99, throughput_bytes_per_s=700e3))]
    )  # 200 IOPS × 4096 B ≈ 819 kB/s
    w = replay_plan(
        bytes_plan, {"A": traces["A"]}, profile=PROFILE.to_json(), link_bandwidth_bytes_per_s=1e9
    )
    t = w.checks[0].throughput
    assert t is not None and t.unit == "bytes_per_s" and t.met
    assert t.achieved == pytest.approx(200 * 4096, rel=0.05)
    assert "MB/s" in w.table()
