"""The README's service blocks as the tests run them: a block's text under its heading, and an
environment in which ``tailbound`` is this interpreter's (whatever is installed on PATH)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def block(heading: str, what: str) -> str:
    """The first ``sh`` block of the README after ``heading``."""
    section = (REPO / "README.md").read_text().split(heading, 1)[1]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, f"the README's {what} section has no sh block"
    return found.group(1)


def tailbound_env(tmp_path: Path) -> dict[str, str]:
    """The environment with a ``tailbound`` wrapper for this interpreter first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "tailbound"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m tailbound.cli.main "$@"\n')
    wrapper.chmod(0o755)
    source = Path(__import__("tailbound").__file__).resolve().parents[1]
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")]),
    }
