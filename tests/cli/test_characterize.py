from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tailbound.characterize import RbCurve
from tailbound.cli.main import main


def write_wc_trace(path: Path, n: int = 3000, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    ns = np.cumsum(rng.exponential(2e6, n)).astype(np.int64)
    sizes = rng.choice([512, 4096, 65536], n)
    ops = np.where(rng.random(n) < 0.7, "DiskRead", "DiskWrite")
    path.write_text("".join(f"{t},0x{s:08x},{o}\n" for t, s, o in zip(ns, sizes, ops, strict=True)))
    return path


PROFILE = {
    "bandwidthTable": [
        {"requestSize": 512, "readBandwidth": 5e6, "writeBandwidth": 6e5},
        {"requestSize": 65536, "readBandwidth": 2e8, "writeBandwidth": 8e7},
    ]
}


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--exact", "--prune", "12"],
        ["--exact", "--max-rate", "inf"],
        ["--rates", "50", "--safety-margin", "1.1"],
    ],
)
def test_characterize_writes_sorted_csv_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    trace = write_wc_trace(tmp_path / "t1.txt")
    profile = tmp_path / "ssd.json"
    profile.write_text(json.dumps(PROFILE))
    out = tmp_path / "out"
    code = main(
        [
            "characterize",
            str(trace),
            "--profile",
            str(profile),
            "--out",
            str(out),
            "--plot",
            *options,
        ]
    )
    assert code == 0
    for stage in ["net_in", "storage", "net_out"]:
        csv = out / f"t1.{stage}.rb.csv"
        lines = csv.read_text().splitlines()
        assert lines[0] == "rate,bucket_s"
        rates = [float(line.split(",")[0]) for line in lines[1:]]
        assert rates == sorted(rates) and len(rates) >= 1
        curve = RbCurve.from_csv(csv)
        if "--prune" in options:
            assert len(curve) <= 13
        if "--exact" in options:
            assert (rates[-1] <= 1.0) == ("inf" not in options)
        if "--rates" in options:
            assert len(curve) == 50 and rates[-1] == pytest.approx(1.1)
    assert (out / "t1.rb.png").stat().st_size > 1000  # drawn only when asked (--plot)
    table = capsys.readouterr().out
    assert "peak/mean@1s" in table and "storage" in table and "t1" in table


def test_characterize_stage_option(tmp_path: Path) -> None:
    trace = write_wc_trace(tmp_path / "t2.txt", n=200)
    assert main(["characterize", str(trace), "--stage", "net_out", "--out", str(tmp_path)]) == 0
    assert not list(tmp_path.glob("*.png")), "no plot unless asked"
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["t2.net_out.rb.csv"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("100,0x10,DiskRead\n200,0x10\n", "line 2, field op: missing: expected 3 fields"),
        ("100,0x10,DiskRead\n200,12,DiskRead\n", "line 2, field size"),
        ("100,0x10,DiskRead\nabc,0x10,DiskRead\n", "line 2, field arrival_ns"),
        ("100,0x10,DiskRead\n200,0x10,Delete\n", "line 2, field op"),
        ("", "the file is empty"),
    ],
)
def test_characterize_bad_trace_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(content)
    assert main(["characterize", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(bad) in err and message in err


def test_characterize_storage_without_profile_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_wc_trace(tmp_path / "t3.txt", n=50)
    assert main(["characterize", str(trace), "--stage", "storage", "--out", str(tmp_path)]) == 2
    assert "--profile" in capsys.readouterr().err


def test_characterize_rejects_bad_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["characterize", "x.txt", "--prune", "0"]) == 2
    assert "positive integer" in capsys.readouterr().err
