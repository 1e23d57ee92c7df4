"""Every example command of the README's verb table runs as written (issue 15), from the
repository's root, writing into ``out/``; slow (the examples read the wc62 traces)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def examples() -> list[str]:
    """The example column of the verb table: the last back-quoted cell of each row."""
    rows = [
        line for line in (REPO / "README.md").read_text().splitlines() if line.startswith("| `")
    ]
    found = [re.findall(r"`(tailbound [^`]*)`", row) for row in rows]
    return [f[-1] for f in found if f]


def test_readme_table_has_an_example_per_verb() -> None:
    from tailbound.cli.main import COMMANDS

    verbs = {shlex.split(e)[1] for e in examples()}
    assert verbs == set(COMMANDS)


@pytest.mark.slow
@pytest.mark.parametrize("command", examples())
def test_readme_example_runs_as_written(command: str, data_dir: Path) -> None:
    tailbound = Path(sys.executable).parent / "tailbound"
    argv = [str(tailbound), *shlex.split(command)[1:]]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=1800)
    # 0 ran and every check held; 1 ran and a check failed, as the row says (never 2: bad input)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    if done.returncode == 1:
        row = next(
            line for line in (REPO / "README.md").read_text().splitlines() if command in line
        )
        assert "exit status 1" in row, "a README example fails its check without saying so"
    assert "Traceback" not in done.stderr
