"""Every table a verb prints has its columns explained in that verb's ``--help``."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from tailbound.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Columns that need no legend: the row's name and its stage.
SELF_EXPLANATORY = {"tenant", "workload", "trace", "stage", "requests"}


def printed_header(out: str) -> list[str]:
    """The first Markdown table header line in ``out``, as column names."""
    line = next(line for line in out.splitlines() if line.startswith("| "))
    return [cell.strip() for cell in line.strip("|").split("|")]


def explained(verb: str, column: str) -> bool:
    """``column`` is named in ``verb``'s legend (``W`` in a legend entry matches a number)."""
    legend = importlib.import_module(f"tailbound.cli.{verb}").COLUMNS
    for name, _ in legend:
        for part in name.split(", "):
            pattern = re.escape(part).replace("W", r"[0-9.]+").replace("R", r"[0-9.]+")
            if re.fullmatch(pattern, column) or (part in column.split(", ")):
                return True
    return False


@pytest.mark.parametrize(
    ("verb", "args"),
    [
        ("bound", ["--tenants", str(EXAMPLES / "snc-small.json"), "--no-cache"]),
        ("admit", ["--tenants", str(EXAMPLES / "snc-small.json"), "--joint-floor"]),
        ("simulate", [str(EXAMPLES / "simulate.toml"), "--no-plot"]),
    ],
)
def test_every_printed_column_is_in_the_legend(
    verb: str, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    main([verb, *args, "--quiet"])
    header = printed_header(capsys.readouterr().out)
    missing = [c for c in header if c not in SELF_EXPLANATORY and not explained(verb, c)]
    assert not missing, f"{verb} prints columns its --help does not explain: {missing}"


@pytest.mark.parametrize(
    "verb", ["bound", "admit", "prioritize", "simulate", "verify", "characterize", "compare"]
)
def test_help_shows_the_legend(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([verb, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "table columns:" in out
    for name, _ in importlib.import_module(f"tailbound.cli.{verb}").COLUMNS:
        assert f'"{name}"' in out


def test_legend_matching_can_fail() -> None:
    assert not explained("bound", "some new column")
    assert explained("simulate", "worst 180 s window")
