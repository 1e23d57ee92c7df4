"""The ``bound`` and ``admit`` verbs end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.cli.main import main


@pytest.fixture
def tenants_file(tmp_path: Path, data_dir: Path) -> Path:
    data = data_dir
    traces = tmp_path / "traces"
    traces.mkdir()
    tenants = []
    for i, slo in enumerate([0.02, 0.05, 0.0005]):
        (traces / f"t{i}.txt").symlink_to(data / "wc62" / "traces" / f"trace{i:04d}.txt")
        tenants.append(
            {
                "name": f"T{i}",
                "slo_s": slo,
                "trace": f"traces/t{i}.txt",
                "client_host": "c0",
                "server_host": f"s{i % 2}",
            }
        )
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": tenants}))
    return path


def test_bound_writes_json(tenants_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "bounds.json"
    assert main(["bound", "--tenants", str(tenants_file), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    rows = doc["tenants"]
    assert [r["name"] for r in rows] == ["T0", "T1", "T2"]
    for r in rows:
        assert set(r) >= {
            "name",
            "priority",
            "latency_s",
            "latency_in_s",
            "latency_out_s",
            "meets_slo",
        }
        assert r["latency_s"] == pytest.approx(r["latency_in_s"] + r["latency_out_s"])
    assert [r["priority"] for r in rows] == [1, 2, 0]
    assert rows[2]["meets_slo"] is False
    assert "T2" in capsys.readouterr().out


def test_admit_writes_decisions(tenants_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "decisions.json"
    assert main(["admit", "--tenants", str(tenants_file), "--out", str(out)]) == 0
    decisions = json.loads(out.read_text())["decisions"]
    assert [d["admitted"] for d in decisions] == [True, True, False]
    # by default every prediction is at least the tenant's measured latency alone
    for d in decisions:
        assert 0 < d["latency_alone_s"] <= d["latency_s"]
    plain = tmp_path / "plain.json"
    args = ["admit", "--tenants", str(tenants_file), "--no-alone-floor", "--out", str(plain)]
    assert main(args) == 0
    model = json.loads(plain.read_text())["decisions"]
    assert all("latency_alone_s" not in d for d in model)
    for d, m in zip(decisions, model, strict=True):
        assert d["latency_s"] == pytest.approx(max(m["latency_s"], d["latency_alone_s"]))


def test_admit_with_joint_floor(tenants_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "decisions.json"
    args = ["admit", "--tenants", str(tenants_file), "--joint-floor", "--out", str(out)]
    assert main(args) == 0
    assert "together ms" in capsys.readouterr().out
    decisions = json.loads(out.read_text())["decisions"]
    assert [d["admitted"] for d in decisions] == [True, True, False]
    for d in decisions[:2]:  # admitted: measured together with the tenants admitted before
        assert d["latency_alone_s"] <= d["latency_joint_s"] <= d["latency_s"] <= d["slo_s"]
    assert "latency_joint_s" not in decisions[2]  # rejected by the bound: no replay


def test_bound_with_alone_floor(tenants_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bounds.json"
    args = ["bound", "--tenants", str(tenants_file), "--alone-floor", "--out", str(out)]
    assert main(args) == 0
    for r in json.loads(out.read_text())["tenants"]:
        model = r["latency_in_s"] + r["latency_out_s"]
        assert r["latency_s"] == pytest.approx(max(model, r["latency_alone_s"]))


def test_bad_tenants_file_is_one_line_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "t.json"
    p.write_text('{"tenants": [{"name": "a"}]}')
    assert main(["bound", "--tenants", str(p)]) == 2
    err = capsys.readouterr().err
    assert "tenants[0].slo_s" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("policy", ["dnc", "silo", "qjump"])
def test_admit_with_dnc_baselines(tenants_file: Path, tmp_path: Path, policy: str) -> None:
    out = tmp_path / "decisions.json"
    assert (
        main(["admit", "--tenants", str(tenants_file), "--policy", policy, "--out", str(out)]) == 0
    )
    doc = json.loads(out.read_text())
    assert doc["policy"] == policy
    decisions = doc["decisions"]
    assert [d["name"] for d in decisions] == ["T0", "T1", "T2"]
    # 0.5 ms is below what a 100th-percentile bound of these bursty traces can give
    assert decisions[2]["admitted"] is False
    for d in decisions:
        assert d["admitted"] == (d["meets_slo"] and not d["violated"])


def test_bound_with_dnc_analysis(tenants_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bounds.json"
    args = ["bound", "--tenants", str(tenants_file), "--analysis", "dnc", "--out", str(out)]
    assert main(args) == 0
    rows = json.loads(out.read_text())["tenants"]
    assert [r["priority"] for r in rows] == [1, 2, 0]
    for r in rows:
        assert r["latency_s"] == pytest.approx(r["latency_in_s"] + r["latency_out_s"])
        assert r["latency_s"] > 0


def test_bound_functions_are_the_snc_analyses_and_dnc_policies() -> None:
    from tailbound.cli.bound import BOUND_FUNCTIONS
    from tailbound.snc.dnc_policies import POLICIES
    from tailbound.snc.network import ANALYSES

    assert BOUND_FUNCTIONS == (*ANALYSES, *POLICIES)
