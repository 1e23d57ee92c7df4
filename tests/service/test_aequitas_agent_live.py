"""Aequitas through the service, live (issues 24 and 27; docs/service.md, "Aequitas through the
service"): two namespaces (``live_agents.namespaces``: ``client00`` and ``server00`` of the
demo's cluster, joined by a veth pair), the real ``tailbound serve`` and real agents.

An Aequitas cluster whose ``rpc_network`` (50 Mbit/s, QoS_h/QoS_m/QoS_l weighted 4:2:1, SLOs of
15 and 30 ms per RPC) numbers ``client00`` host 0 and ``server00`` host 1 (``rpc_hosts``); two
tenants, incasts from host 0 to host 1, ``search`` asking QoS_h and ``batch`` QoS_m, admitted
through the API. ``server00``'s agent loops with ``--rpc-replay`` (it applies its part's
weighted classes and serves the RPCs sent to it); ``client00``'s agent runs ``--once
--rpc-replay``: it applies the classes, ``enforce net --check`` finds no drift, it replays its
RPCs with the Plan's classes and controller and posts per tenant and class what it measured,
which ``GET /report`` compares with the Plan's prediction. A departure then leaves host 0 only
``batch``'s channels, the agents apply it and the device still holds the classes. About 30 s.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.service.harness import Demo, Server, make_token
from tests.service.live_agents import HOSTS, agent_argv, namespaces, no_drift, once

from tailbound.enforce import replay
from tailbound.traces.tabular import write_parquet
from tailbound.traces.trace import Op, Trace

__all__ = ["namespaces"]

try:
    replay.binary()
except replay.ReplayError as e:  # pragma: no cover - make install builds it
    pytest.skip(f"needs the replayer: {e}", allow_module_level=True)

SLO_S = {"QoS_h": 0.015, "QoS_m": 0.030}
NETWORK = {
    "hosts": 2,
    "link_rate_bps": 50e6,
    "classes": [
        {"name": "QoS_h", "weight": 4, "slo_s": SLO_S["QoS_h"], "slo_unit": "rpc"},
        {"name": "QoS_m", "weight": 2, "slo_s": SLO_S["QoS_m"], "slo_unit": "rpc"},
        {"name": "QoS_l", "weight": 1},
    ],
    "controller": {"increment_window_s": [0.5, 0.5]},
    "seed": 3,
}
MIXES = {"search": {"QoS_h": 0.7, "QoS_l": 0.3}, "batch": {"QoS_m": 0.6, "QoS_l": 0.4}}
RATE, SECONDS, SIZE = 150.0, 2.5, 8192  # per tenant: ~10 Mbit/s of 8 KiB RPCs
PORT = 7321


def _trace(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1 / RATE, int(RATE * SECONDS * 1.3)))
    t = t[t < SECONDS]
    op = np.full(len(t), Op.WRITE, dtype=np.uint8)
    write_parquet(Trace(time=t, op=op, size=np.full(len(t), SIZE)), path)
    return path


def _wait_for(proc: subprocess.Popen[str], key: str, timeout_s: float) -> dict[str, Any]:
    """The first JSON report of the looping agent ``proc`` holding ``key``."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if not ready:
            continue
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.strip())
        doc = json.loads(line)
        if key in doc:
            return dict(doc)
    raise AssertionError(f"no {key!r} from the agent: {seen[-5:]}")


def _interruptible() -> None:
    """In the agent's process before it starts: SIGINT back to its default, so Python turns it
    into KeyboardInterrupt. A suite started in the background by a non-interactive shell (``cmd
    &``) inherits SIGINT ignored, and the agent would ignore it too (the agent keeps an
    inherited disposition, as a daemon started under ``nohup`` should); seen in a CI run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _state(folder: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((folder / "state.json").read_text()))
    except (OSError, ValueError):
        return {}


def test_aequitas_through_the_service_live(
    server: Server,
    sqlite_url: str,
    small_demo: Demo,
    tmp_path: Path,
    namespaces: dict[str, tuple[str, str]],
) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    tokens = {h: make_token(sqlite_url, f"agent-{h}", "agent", host=h) for h in HOSTS}
    state = {h: tmp_path / f"state-{h}" for h in HOSTS}
    argv = {
        h: [*agent_argv(server, tokens[h], h, state[h], *namespaces[h]), "--rpc-replay",
            "--rpc-drain", "1"]
        for h in HOSTS
    }  # fmt: skip
    addresses = {h: a for h, (_, a) in HOSTS.items()}
    options = {"rpc_network": NETWORK, "rpc_hosts": ["client00", "server00"], "rpc_port": PORT}
    started = time.monotonic()
    with server.client(operator) as c:
        c.create_cluster(
            "c1", "aequitas", small_demo.cluster, small_demo.profile, options, addresses
        )
        for k, (name, mix) in enumerate(MIXES.items()):
            stored = c.upload_trace(_trace(tmp_path / f"{name}.parquet", 5 + k))
            rpc = {"class_mix": mix, "pattern": "incast", "destination": 1}
            c.register_tenant(
                "c1",
                {"name": name, "trace": stored["sha256"], "client_host": "client00",
                 "server_host": "server00", "rpc": rpc},
            )  # fmt: skip
            assert c.admit("c1", name)["published"] == k + 1
        _, plan = c.plan("c1")
        looping = subprocess.Popen(
            argv["server00"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=_interruptible,
        )
        try:
            serving = _wait_for(looping, "rpc_server", 60)
            assert serving["rpc_server"].startswith("serving host 1"), serving
            assert _state(state["server00"])["version"] == 2
            done = once(argv["client00"])
            assert done["ok"] and done["version"] == 2, done
            assert all(s["status"] == 0 for s in done["steps"]), done
            for h in HOSTS:
                no_drift(state[h], h, *namespaces[h])
            part = json.loads((state["client00"] / "plan.json").read_text())
            rpc = part["meta"]["rpc"]
            assert rpc["host"] == 0 and rpc["hosts"] == ["client00", "server00"]
            assert [k["dscp"] for k in rpc["link"]["classes"]] == [46, 34, 0]
            channels = [(ch["destination"], ch["class"], ch["host"]) for ch in rpc["channels"]]
            assert channels == [(1, k, "server00") for k in ("QoS_h", "QoS_m", "QoS_l")]
            assert part["meta"]["addresses"] == {
                "hosts": {"1": HOSTS["server00"][1]},
                "ports": {"1": PORT},
            }
            replayed = done["rpc"]["rpc_replay"]
            assert replayed["posted"] == {"stored": 2}, replayed
            report = c.json("GET", "/clusters/c1/report")
            rows = {r["tenant"]: r for r in report["tenants"]}
            predicted = plan["aequitas"]["prediction"]["admitted_share"]
            for name, k in (("search", "QoS_h"), ("batch", "QoS_m")):
                (row,) = rows[name]["classes"]
                posted = next(r for r in replayed["tenants"] if r["tenant"] == name)
                assert row["class"] == k and row["slo_s"] == SLO_S[k]
                assert row["predicted_share"] == pytest.approx(predicted[k])
                assert row["count"] == posted["count"] > 0.5 * RATE * SECONDS * MIXES[name][k]
                assert row["admitted_share"] == pytest.approx(posted["admitted"] / posted["count"])
                assert row["measured_s"] == posted["percentiles"]["0.999"] > 0
                assert ("beyond_slo" in row["flags"]) == (row["measured_s"] > SLO_S[k])
                below = row["admitted_share"] < 0.9 * row["predicted_share"]
                assert ("share_below_prediction" in row["flags"]) == below
                assert rows[name]["measured_s"] == row["measured_s"]
                print(
                    f"\n{name} {k}: p99.9 {1e3 * row['measured_s']:.2f} ms against "
                    f"{1e3 * SLO_S[k]:g} ms; admitted {row['admitted_share']:.3f}, predicted "
                    f"{row['predicted_share']:.3f} ({row['count']} RPCs)"
                )
            # a departure: host 0 keeps batch's channels only, the classes stay
            assert c.depart("c1", "search")["published"] == 3
            done = once(argv["client00"][:-3])  # without --rpc-replay: apply and check only
            assert done["ok"] and done["version"] == 3, done
            deadline = time.monotonic() + 30
            while _state(state["server00"]).get("version") != 3:
                assert time.monotonic() < deadline, "server00's agent did not apply version 3"
                time.sleep(0.2)
            for h in HOSTS:
                no_drift(state[h], h, *namespaces[h])
            part = json.loads((state["client00"] / "plan.json").read_text())
            after = [ch["class"] for ch in part["meta"]["rpc"]["channels"]]
            assert after == ["QoS_m", "QoS_l"]
            assert [t["name"] for t in part["tenants"]] == ["batch"]
        finally:
            looping.send_signal(signal.SIGINT)  # the agent stops its RPC server on the way out
            looping.wait(30)
            assert looping.stdout is not None
            looping.stdout.close()
    print(f"{time.monotonic() - started:.1f} s")
