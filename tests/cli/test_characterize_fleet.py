"""Fleet runs of ``tailbound characterize`` (tailbound.cli.characterize_fleet): a folder or a list
of traces, in parallel, each written as it finishes, resumable by content hash."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_characterize import write_wc_trace

from tailbound.cli.main import main


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    folder.mkdir()
    for i in range(4):
        write_wc_trace(folder / f"t{i}.txt", n=400, seed=i)
    return folder


@pytest.fixture
def in_process() -> Iterator[Any]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def curves(out: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(out.glob("*.rb.csv"))}


def test_a_fleet_run_writes_what_a_plain_run_writes(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], in_process: Any
) -> None:
    plain = tmp_path / "plain"
    files = sorted(str(p) for p in traces.iterdir())
    assert main(["characterize", *files, "--rates", "20", "--out", str(plain)]) == 0
    assert not list(plain.glob("*.rb.json"))  # a plain run writes no manifest
    pooled = tmp_path / "pooled"
    args = ["characterize", str(traces), "--rates", "20", "--quiet"]
    assert main([*args, "--jobs", "2", "--out", str(pooled)]) == 0
    assert curves(pooled) == curves(plain) and len(curves(plain)) == 8
    clustered = tmp_path / "clustered"
    address = in_process.scheduler.address
    assert main([*args, "--scheduler", address, "--out", str(clustered)]) == 0
    assert curves(clustered) == curves(plain)
    manifest = json.loads((pooled / "t0.rb.json").read_text())
    assert manifest["curves"] == {"net_in": "t0.net_in.rb.csv", "net_out": "t0.net_out.rb.csv"}
    assert len(manifest["trace_sha256"]) == 64 and len(manifest["rows"]) == 2
    assert "wrote 8 curves" in capsys.readouterr().out


def test_a_rerun_skips_what_is_done_and_redoes_what_changed(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args = ["characterize", str(traces), "--rates", "20", "--out", str(out), "--quiet"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "wrote 0 curves" in text and "4 traces unchanged" in text
    assert text.count(" net_in ") == 4  # the table still lists every trace, from the manifests
    write_wc_trace(traces / "t2.txt", n=400, seed=99)  # changed in place: same name and size
    (out / "t3.net_out.rb.csv").unlink()  # a curve lost
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "wrote 4 curves" in text and "2 traces unchanged" in text
    assert main([*args[:-3], "--rates", "21", "--out", str(out), "--quiet"]) == 0
    assert "wrote 8 curves" in capsys.readouterr().out  # other options: all again


def test_a_bad_trace_fails_alone(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (traces / "bad.txt").write_text("100,0x10,DiskRead\n200,12,DiskRead\n")
    listing = tmp_path / "traces.txt"
    listing.write_text("# the fleet\ntraces/t0.txt\n\ntraces/bad.txt\n")
    out = tmp_path / "out"
    assert main(["characterize", "--list", str(listing), "--out", str(out), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "bad.txt, line 2, field size" in captured.err
    assert sorted(p.name for p in out.iterdir()) == [
        "t0.net_in.rb.csv",
        "t0.net_out.rb.csv",
        "t0.rb.json",
    ]
    assert "1 failed" in captured.out


def test_nothing_to_characterize_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["characterize", "--out", str(tmp_path / "o")]) == 2
    assert "--list" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["characterize", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert "no trace files" in capsys.readouterr().err
