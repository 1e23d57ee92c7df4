"""Progress of long verbs on stderr (issue 15): shown only when stderr is a terminal, off with
``--quiet``; it never changes the results on stdout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tailbound.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def results(out: str) -> list[str]:
    """The stdout lines that are results (not the wall-clock timing line)."""
    return [line for line in out.splitlines() if " events in " not in line]


def test_simulate_progress_on_a_terminal_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = str(EXAMPLES / "simulate.toml")
    main(["simulate", scenario, "--no-plot"])  # stderr is not a terminal: silent
    quiet = capsys.readouterr()
    assert quiet.err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main(["simulate", scenario, "--no-plot"])
    shown = capsys.readouterr()
    # a bar over the 30 s of simulated time, ending full
    assert "simulated" in shown.err and "100%" in shown.err and "30/30 s" in shown.err
    # run in steps, the simulator processes the same events: the same table and SLO verdicts
    assert results(shown.out) == results(quiet.out)
    main(["simulate", scenario, "--no-plot", "--quiet"])
    assert capsys.readouterr().err == ""


def test_experiment_progress_on_a_terminal_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An experiment shows a bar over its steps (here pm_fig37's three policies)."""
    args = ["experiment", "pm_fig37", "--duration", "5", "--out", str(tmp_path)]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main(args)
    shown = capsys.readouterr()
    assert "pm_fig37" in shown.err and "3/3" in shown.err
    main([*args, "--quiet"])
    quiet = capsys.readouterr()
    assert "3/3" not in quiet.err
    assert quiet.out == shown.out
