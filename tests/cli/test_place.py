from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.cli.main import main
from tailbound.plan import Plan


def write_tenants(tmp_path: Path, wc62_dir: Path, indices: list[int]) -> Path:
    doc = json.loads((wc62_dir / "tenants.json").read_text())
    chosen = [
        dict(doc["tenants"][i], trace=str(wc62_dir / doc["tenants"][i]["trace"])) for i in indices
    ]
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": chosen}))
    return path


def place_args(tenants: Path, wc62_dir: Path, *extra: str) -> list[str]:
    """``tailbound place`` on ``tenants`` with the wc62 cluster and SSD profile, plus ``extra``."""
    return [
        "place",
        "--tenants",
        str(tenants),
        "--cluster",
        str(wc62_dir / "cluster.json"),
        "--profile",
        str(wc62_dir / "profile_ssd.json"),
        *extra,
    ]


def test_place_writes_a_plan(tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture) -> None:
    tenants = write_tenants(tmp_path, wc62_dir, [2, 4, 13])
    out = tmp_path / "plan.json"
    code = main(place_args(tenants, wc62_dir, "--fast-first-fit", "--out", str(out), "--quiet"))
    assert code == 0
    plan = Plan.load(out)
    assert len(plan.tenants) == 3 and plan.servers_used >= 1
    assert all(t.latency_bound_s <= t.slo_s for t in plan.tenants)
    printed = capsys.readouterr().out
    assert "servers" in printed and "time:" in printed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "fastest"], "--policy: unknown placement policy 'fastest'"),
        (["--safety-margin", "0"], "argument --safety-margin: expected a finite number > 0"),
    ],
)
def test_place_bad_options_are_one_line_errors(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture, args: list[str], message: str
) -> None:
    tenants = write_tenants(tmp_path, wc62_dir, [2])
    code = main(place_args(tenants, wc62_dir, "--quiet", *args))
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_place_bad_tenants_file_names_file_and_field(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    bad = tmp_path / "tenants.json"
    bad.write_text('{"tenants": [{"name": "A", "slo_s": -1, "trace": "a.txt"}]}')
    code = main(place_args(bad, wc62_dir, "--quiet"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert str(bad) in err and "tenants[0].slo_s" in err


def test_place_bad_events_name_the_line(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    tenants = write_tenants(tmp_path, wc62_dir, [2])
    events = tmp_path / "events.csv"
    events.write_text("0,addClient\n0,delClient\n0,delClient\n")
    code = main(place_args(tenants, wc62_dir, "--events", str(events), "--quiet"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and "line 3" in err and "not present" in err


def test_place_from_half_a_trace_uses_the_safety_margin(tmp_path: Path, wc62_dir: Path) -> None:
    tenants = write_tenants(tmp_path, wc62_dir, [2, 13])
    out = tmp_path / "plan.json"
    code = main(
        place_args(
            tenants, wc62_dir, "--half", "first", "--policy", "knee", "--out", str(out), "--quiet"
        )
    )
    assert code == 0
    plan = Plan.load(out)
    assert plan.safety_margin == 1.1 and plan.policy == "knee" and plan.meta["half"] == "first"


def test_place_serves_a_level_one_request_at_a_time_unless_told(
    tmp_path: Path, wc62_dir: Path
) -> None:
    """The default plan carries the dispatch rule its bounds need (one request per level in
    service); ``--share-levels`` lifts it and the bounds count a level's own rates (larger)."""
    tenants = write_tenants(tmp_path, wc62_dir, [1, 2, 7, 16])  # four tenants of 450 ms
    fifo, shared = tmp_path / "fifo.json", tmp_path / "shared.json"
    assert main(place_args(tenants, wc62_dir, "--out", str(fifo), "--quiet")) == 0
    assert (
        main(place_args(tenants, wc62_dir, "--share-levels", "--out", str(shared), "--quiet")) == 0
    )
    a, b = Plan.load(fifo), Plan.load(shared)
    assert a.dispatch.level_mpl == 1 and b.dispatch.level_mpl is None
    assert a.dispatch.low_priority_mpl == b.dispatch.low_priority_mpl == 0
    assert a.servers_used <= b.servers_used
