from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.cli.main import main


def test_demo_runs_the_pipeline_and_writes_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--workloads", "6", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "## Servers used" in out and "tenants met their SLO on the replayed halves" in out
    plan = json.loads((tmp_path / "plan-workloadcompactor.json").read_text())
    assert plan["format"] == "tailbound-plan" and len(plan["tenants"]) == 6
    assert (tmp_path / "plan-average-rate-2.json").exists()
    assert (tmp_path / "verification.csv").read_text().startswith("tenant,server,slo_s")
    assert (tmp_path / "tail-latency.png").stat().st_size > 1000


def test_demo_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--workloads", "0", "--out", str(tmp_path)]) == 2
    assert "error:" in capsys.readouterr().err
