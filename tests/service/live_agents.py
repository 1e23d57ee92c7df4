"""Agents live in network namespaces: the fixture and helpers the live agent tests share
(``test_agent_live.py``, ``test_aequitas_agent_live.py``).

:func:`namespaces`: the hosts ``server00`` and ``client00`` of the demo's cluster, each in a
network namespace of its own, joined by a veth pair with the addresses of :data:`HOSTS`. Needs
root, ``ip`` and ``tc`` (iproute2); the namespaces are made per test and deleted afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.service.harness import Server

TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
#: Host → (namespace suffix, address) of the two namespaces.
HOSTS = {"server00": ("a", "198.18.7.1"), "client00": ("b", "198.18.7.2")}


def sh(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr}"


@pytest.fixture
def namespaces() -> Iterator[dict[str, tuple[str, str]]]:
    """Host → (namespace, device): two namespaces joined by a veth pair."""
    assert os.geteuid() == 0, "the live agent test needs root (network namespaces, tc)"
    tag = f"tb{os.getpid() % 100000}"
    out = {host: (f"{tag}{end}", f"{tag}{end}0") for host, (end, _) in HOSTS.items()}
    (na, da), (nb, db) = out["server00"], out["client00"]
    sh("ip", "netns", "add", na)
    try:
        sh("ip", "netns", "add", nb)
        sh("ip", "link", "add", da, "netns", na, "type", "veth", "peer", "name", db, "netns", nb)
        for host, (ns, dev) in out.items():
            sh("ip", "-n", ns, "addr", "add", f"{HOSTS[host][1]}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
        yield out
    finally:
        for ns in (na, nb):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def agent_argv(
    server: Server, token: str, host: str, state: Path, ns: str, dev: str, cluster: str = "c1"
) -> list[str]:
    """``tailbound agent`` of ``host`` applying its part on ``dev`` in namespace ``ns``."""
    return [
        *TAILBOUND, "agent", "--server", server.url, "--token", token, "--cluster", cluster,
        "--host", host, "--state", str(state), "--net-device", dev, "--netns", ns,
        "--wait", "1", "--retry", "0.5",
    ]  # fmt: skip


def once(argv: list[str]) -> dict[str, Any]:
    """One step of the agent (``--once``), which must succeed; its JSON report."""
    done = subprocess.run([*argv, "--once"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return dict(json.loads(done.stdout))


def check_argv(state: Path, host: str, ns: str, dev: str) -> list[str]:
    """``enforce net --check`` of the part an agent applied, with the addresses it came with."""
    return [
        *TAILBOUND, "enforce", "net", "--plan", str(state / "plan.json"), "--host", host,
        "--hosts", str(state / "hosts.json"), "--device", dev, "--netns", ns, "--check",
    ]  # fmt: skip


def no_drift(state: Path, host: str, ns: str, dev: str) -> None:
    """``enforce net --check`` exits 0: the device holds the part the agent applied."""
    done = subprocess.run(
        check_argv(state, host, ns, dev), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
