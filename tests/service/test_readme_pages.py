"""The README's web-pages block runs as written (from the repository's root, writing into
``out/web``): while it waits for Enter, the pages it names answer, the token it wrote signs in,
and an admission through the form publishes Plan version 1; Enter stops the server and the
block ends with status 0."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
from tests.service import readme_blocks
from tests.service.ui_harness import hidden, sign_in

REPO = readme_blocks.REPO
URL = "http://127.0.0.1:8751"


def block() -> str:
    return readme_blocks.block("### Web pages", "web-pages")


def test_readme_web_pages_block(tmp_path: Path) -> None:
    env = readme_blocks.tailbound_env(tmp_path)
    log = tmp_path / "block.log"
    with open(log, "w") as out:
        shell = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", block()],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its server too is stopped if the test fails
        )
    try:
        deadline = time.monotonic() + 300
        while "Enter stops the server" not in log.read_text():
            assert shell.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        token = (REPO / "out" / "web" / "me.token").read_text().strip()
        assert f"open {URL}/ui/ and sign in" in log.read_text()
        with sign_in(URL, token) as c:
            page = c.get("/ui/clusters/demo")
            assert page.status_code == 200
            assert 'id="plan-version" class="plan-version">0<' in page.text
            tenant = re.search(r'<option value="([^"]+)"', page.text)
            assert tenant, "no tenant to admit on the page"
            r = c.post(
                "/ui/clusters/demo/admissions",
                data={"tenant": tenant.group(1), "csrf": hidden(page.text, "csrf")},
            )
            assert r.status_code == 200 and "Admitted" in r.text
            assert 'id="plan-version" class="plan-version">1<' in r.text
        assert shell.stdin is not None
        shell.stdin.write("\n")
        shell.stdin.close()
        assert shell.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait(30)
    assert "Traceback" not in log.read_text()
    try:
        httpx.get(URL + "/health", timeout=2)
    except httpx.HTTPError:
        pass
    else:
        raise AssertionError("the block left its server running")
