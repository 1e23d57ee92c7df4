"""The README's control-plane block runs as written (from the repository's root, writing into
``out/control``) and ends by itself: demo data, tokens, a server started in the background,
a cluster, tenants, admissions, a Plan, an agent, the server stopped."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.service import readme_blocks

REPO = readme_blocks.REPO


def block() -> str:
    return readme_blocks.block("## The control plane", "control-plane")


def test_readme_control_plane_block(tmp_path: Path) -> None:
    env = readme_blocks.tailbound_env(tmp_path)
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
