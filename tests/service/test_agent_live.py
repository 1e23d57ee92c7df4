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
import signal
import subprocess
import time
from pathlib import Path

from tests.service.harness import Demo, Server, make_token, register
from tests.service.live_agents import HOSTS, agent_argv, namespaces, once
from tests.service.live_agents import no_drift as _no_drift

__all__ = ["namespaces"]


def no_drift(state: Path, host: str, ns: str, dev: str) -> None:
    """``enforce net --check`` of the part the agent applied, with the addresses it came with."""
    hosts = json.loads((state / "hosts.json").read_text())
    assert hosts["hosts"][host] == HOSTS[host][1], hosts
    _no_drift(state, host, ns, dev)


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
