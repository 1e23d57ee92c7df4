"""Two agents, live, in network namespaces (issue 27): the agent of ``server00`` in one namespace
and of ``client00`` in another, joined by a veth pair, each applying its host's part of the
current Plan with ``tailbound enforce net`` on its end of the pair, with the hosts' addresses and
tenants' ports the cluster and tenant documents registered (no hosts file of the agents' own:
the part carries them). After an admission, a second
admission and a departure, both apply the new version and ``enforce net --check`` finds no drift;
an agent killed while polling restarts and converges to the current version.

Needs root, ``ip`` and ``tc`` (iproute2), as the network enforcement tests do; the namespaces are
made here and deleted afterwards, and no traffic is sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.service.harness import Demo, Server, make_token, register

TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
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


def agent_argv(server: Server, token: str, host: str, state: Path, ns: str, dev: str) -> list[str]:
    return [
        *TAILBOUND, "agent", "--server", server.url, "--token", token, "--cluster", "c1",
        "--host", host, "--state", str(state), "--net-device", dev, "--netns", ns,
        "--wait", "1", "--retry", "0.5",
    ]  # fmt: skip


def once(argv: list[str]) -> dict[str, Any]:
    done = subprocess.run([*argv, "--once"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return dict(json.loads(done.stdout))


def no_drift(state: Path, host: str, ns: str, dev: str) -> None:
    """``enforce net --check`` of the part the agent applied, with the addresses it came with."""
    hosts = json.loads((state / "hosts.json").read_text())
    assert hosts["hosts"][host] == HOSTS[host][1], hosts
    done = subprocess.run(
        [*TAILBOUND, "enforce", "net", "--plan", str(state / "plan.json"), "--host", host,
         "--hosts", str(state / "hosts.json"), "--device", dev, "--netns", ns, "--check"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_two_agents_follow_the_plan_live(
    server: Server,
    sqlite_url: str,
    small_demo: Demo,
    tmp_path: Path,
    namespaces: dict[str, tuple[str, str]],
) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    tokens = {h: make_token(sqlite_url, f"agent-{h}", "agent", host=h) for h in HOSTS}
    names = [t["name"] for t in small_demo.tenants[:4]]
    every = [s["name"] for s in small_demo.cluster["server_hosts"]] + [
        c["name"] for c in small_demo.cluster["client_hosts"]
    ]
    addresses = {h: HOSTS[h][1] if h in HOSTS else f"198.18.8.{i + 1}" for i, h in enumerate(every)}
    ports = {n: 5000 + i for i, n in enumerate(names)}
    argv = {
        h: agent_argv(server, tokens[h], h, tmp_path / f"state-{h}", *namespaces[h]) for h in HOSTS
    }
    with server.client(operator) as c:
        register(c, small_demo, "c1", names=names, addresses=addresses, ports=ports)
        events = [("admit", names[0]), ("admit", names[1]), ("depart", names[0])]
        for event, name in events:
            answer = c.admit("c1", name) if event == "admit" else c.depart("c1", name)
            assert answer["published"] is not None, answer
            version = answer["published"]
            for h in HOSTS:
                report = once(argv[h])
                assert report["ok"] and report["version"] == version, report
                assert all(s["status"] == 0 for s in report.get("steps", [])), report
                no_drift(tmp_path / f"state-{h}", h, *namespaces[h])
                held = json.loads((tmp_path / f"state-{h}" / "hosts.json").read_text())
                part = json.loads((tmp_path / f"state-{h}" / "plan.json").read_text())
                assert held["ports"] == {t["name"]: ports[t["name"]] for t in part["tenants"]}
            _, plan = c.plan("c1")
            on_server00 = {t["name"] for t in plan["tenants"] if t["server"] == "server00"}
            assert on_server00, "the demo's first tenants go to server00"
        # a killed agent restarts and converges
        looping = subprocess.Popen(
            argv["server00"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            time.sleep(1.0)
            answer = c.admit("c1", names[2])
            time.sleep(0.3)
        finally:
            looping.send_signal(signal.SIGKILL)
            looping.wait(30)
        report = once(argv["server00"])
        current, _ = c.plan("c1")
        state = json.loads((tmp_path / "state-server00" / "state.json").read_text())
        assert state["version"] == current, (report, state)
        no_drift(tmp_path / "state-server00", "server00", *namespaces["server00"])
