"""The README's control-plane block runs as written (from the repository's root, writing into
``out/control``) and ends by itself: demo data, tokens, a server started in the background,
a cluster, tenants, admissions, a Plan, an agent, the server stopped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def block() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("## The control plane", 1)[1]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, "the README's control-plane section has no sh block"
    return found.group(1)


def test_readme_control_plane_block(tmp_path: Path) -> None:
    # `tailbound` is this interpreter's, whatever is installed on PATH
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "tailbound"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m tailbound.cli.main "$@"\n')
    wrapper.chmod(0o755)
    source = Path(__import__("tailbound").__file__).resolve().parents[1]
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block()],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    out = REPO / "out" / "control"
    assert '"admitted": true' in done.stdout
    assert (out / "plan.json").exists() and (out / "agent-server00" / "plan.json").exists()
    assert '"changed": true' in done.stdout.splitlines()[-1]
