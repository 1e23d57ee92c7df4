"""``tailbound admit --policy pslo``: a Plan carrying PSLO's controller, replayed by ``verify``
with the controller running; a PSLO tenant's bad input refused naming the field (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tailbound.cli.main import main
from tailbound.plan import Plan
from tailbound.profiles.tokens import SsdProfile
from tailbound.stages import Stage
from tailbound.traces.tabular import write_parquet
from tailbound.traces.trace import Trace


def tenants_file(tmp_path: Path, edits: dict[str, Any] | None = None) -> Path:
    """Two tenants on one device, Poisson 4 KiB reads (A 200/s, B 300/s, 10 s), an SSD of 1 ms
    per request; ``edits`` changes tenant A's entry."""
    profile = SsdProfile(
        sizes=np.array([4096.0]),
        read_bandwidth=np.array([4096e3]),
        write_bandwidth=np.array([4096e3]),
    )
    (tmp_path / "ssd.json").write_text(json.dumps(profile.to_json()))
    docs = []
    for i, (name, rate) in enumerate((("A", 200.0), ("B", 300.0))):
        rng = np.random.default_rng(i)
        n = int(10 * rate)
        trace = Trace.from_arrays(
            time=np.cumsum(rng.exponential(1 / rate, n)),
            op=np.zeros(n, dtype=np.uint8),
            size=np.full(n, 4096),
        )
        write_parquet(trace, tmp_path / f"{name}.parquet")
        docs.append(
            {
                "name": name,
                "slo_s": 0.05,
                "percentile": 0.99,
                "throughput_iops": rate * 0.9,
                "trace": f"{name}.parquet",
                "server_host": "s0",
                "device": "ssd0",
            }
        )
    docs[0].update(edits or {})
    docs[0] = {k: v for k, v in docs[0].items() if v is not None}
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"ssd_profile": "ssd.json", "tenants": docs}))
    return path


def test_admit_pslo_writes_the_controller_and_verify_runs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = tenants_file(tmp_path)
    plan_path = tmp_path / "plan.json"
    argv = ["admit", "--tenants", str(tenants), "--policy", "pslo", "--pslo-policy", "LS+U"]
    argv += ["--pslo-interval", "400", "--pslo-threshold", "1.5", "--pslo-enable-s", "0.05"]
    argv += ["--pslo-sigma", "0.2", "--out", str(plan_path)]
    assert main(argv) == 0
    assert "controller LS+U, N = 400, H = 1.5, τ = 0.05 s, σ = 0.2" in capsys.readouterr().out
    plan = Plan.load(plan_path)
    c = plan.control[Stage.STORAGE]
    assert (c.kind, c.policy) == ("pslo", "LS+U")
    assert c.params["interval_completions"] == 400 and c.params["threshold"] == 1.5
    assert c.params["enable_s"] == 0.05 and c.params["sigma"] == 0.2
    assert c.params["max_depth"] == 64  # the core's default, written out
    assert [t.slo.throughput_iops for t in plan.tenants if t.slo] == [180.0, 270.0]
    assert plan.disciplines[Stage.STORAGE].kind == "fifo"
    assert plan.inputs is not None and plan.inputs.profile is not None

    out = tmp_path / "v"
    assert main(["verify", "--plan", str(plan_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "throughput met" in text and "0 throughput SLOs missed" in text
    header = (out / "verify.csv").read_text().splitlines()[0].split(",")
    assert header[-5:] == [
        "bound_held",
        "throughput_slo",
        "throughput_unit",
        "throughput",
        "throughput_met",
    ]

    # a throughput SLO above what the tenant offers is missed: verify's exit status 1
    (tmp_path / "high").mkdir()
    high = tenants_file(tmp_path / "high")
    doc = json.loads(high.read_text())
    doc["tenants"][1]["throughput_iops"] = 400
    high.write_text(json.dumps(doc))
    assert main(["admit", "--tenants", str(high), "--policy", "pslo", "--out", str(plan_path)]) == 0
    capsys.readouterr()
    assert main(["verify", "--plan", str(plan_path)]) == 1
    assert "1 throughput SLOs missed" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("edits", "field"),
    [
        ({"percentile": 1.0}, "tenants[0].percentile"),
        ({"throughput_iops": 0}, "tenants[0].throughput_iops"),
        ({"throughput_iops": -3}, "tenants[0].throughput_iops"),
        ({"throughput_iops": None}, "tenants[0].throughput_iops"),
        (
            {"throughput_iops": None, "throughput_bytes_per_s": 1e6},
            "tenants[0].throughput_bytes_per_s",
        ),
        ({"throughput_bytes_per_s": 1e6}, "tenants[0].throughput_bytes_per_s"),
        ({"device": None}, "tenants[0].device"),
    ],
)
def test_admit_pslo_refuses_a_bad_tenant_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edits: dict[str, Any], field: str
) -> None:
    tenants = tenants_file(tmp_path, edits)
    out = tmp_path / "plan.json"
    assert main(["admit", "--tenants", str(tenants), "--policy", "pslo", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"field {field}" in err and str(tenants) in err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--pslo-interval", "0"], "--pslo-interval"),
        (["--pslo-interval", "-2"], "--pslo-interval"),
        (["--pslo-threshold", "1"], "--pslo-threshold"),
        (["--pslo-threshold", "0.5"], "--pslo-threshold"),
        (["--pslo-sigma", "0"], "--pslo-sigma"),
        (["--pslo-policy", "LS+X"], "--pslo-policy"),
    ],
)
def test_admit_pslo_refuses_a_bad_parameter_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], named: str
) -> None:
    tenants = tenants_file(tmp_path)
    assert main(["admit", "--tenants", str(tenants), "--policy", "pslo", *options]) == 2
    assert named in capsys.readouterr().err


def test_pslo_options_need_the_pslo_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = tenants_file(tmp_path)
    assert (
        main(["admit", "--tenants", str(tenants), "--policy", "dnc", "--pslo-interval", "5"]) == 2
    )
    assert "--pslo-interval" in capsys.readouterr().err


def test_a_plan_with_a_bad_controller_is_refused_by_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = tenants_file(tmp_path)
    plan_path = tmp_path / "plan.json"
    assert (
        main(["admit", "--tenants", str(tenants), "--policy", "pslo", "--out", str(plan_path)]) == 0
    )
    for key, value in (("threshold", 1.0), ("interval_completions", 0)):
        doc = json.loads(plan_path.read_text())
        doc["control"]["storage"][key] = value
        bad = tmp_path / f"bad-{key}.json"
        bad.write_text(json.dumps(doc))
        capsys.readouterr()
        assert main(["verify", "--plan", str(bad)]) == 2
        assert f"field control.storage.{key}" in capsys.readouterr().err
    doc = json.loads(plan_path.read_text())
    doc["tenants"][1]["percentile"] = 1.0
    bad = tmp_path / "bad-percentile.json"
    bad.write_text(json.dumps(doc))
    assert main(["verify", "--plan", str(bad)]) == 2
    assert "field tenants[1].percentile" in capsys.readouterr().err
