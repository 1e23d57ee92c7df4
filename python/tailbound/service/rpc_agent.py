"""An agent's Aequitas RPCs (``tailbound agent --rpc-replay``; docs/service.md, "Aequitas through
the service").

The weighted classes of an Aequitas part are applied by the agent's ``enforce net`` step as for
any part (``enforce net --plan`` on an Aequitas Plan installs its classes,
:mod:`tailbound.enforce.weighted`). With ``--rpc-replay`` the agent also runs the host's RPCs,
through the same command an operator runs (``tailbound enforce replay`` on an Aequitas Plan,
:mod:`tailbound.enforce.aequitas_replay`), with the part's addresses (``meta.addresses``, by
host number, written to ``<state>/rpc-hosts.json``):

- a host some tenant sends to (``meta.rpc.serves``) keeps ``enforce replay --serve --host N``
  running while the agent loops (restarted when a new part changes its port or address; stopped
  when no tenant sends to it; it dies with the agent: ``PR_SET_PDEATHSIG``);
- a host with channels (``meta.rpc.channels``) replays its RPCs once per part applied
  (``enforce replay --host N --out <state>/rpc-replay``: the Plan's RPCs from source ``N``,
  the Plan's classes and controller, checked by ``verify_aequitas.check_rpcs``) and posts, per
  tenant and class of its ``verify.csv``, the RPCs that asked the class (``count``), those
  admitted there (``admitted``) and the tail RNL at the class's percentile (seconds, or seconds
  per MTU: the SLO's unit; an infinite tail — an unanswered RPC — is posted as none, its RPCs
  still counted), which the report compares with the Plan's prediction
  (:mod:`tailbound.service.rpc_reports`). The ETag replayed is kept in ``<state>/rpc.json`` once
  posted, so a restarted agent does not replay the same part twice.

The replay reads the tenants' traces where the Plan records them (the server's data folder,
hash-checked): the agent's host must see that folder (the same machine, or a shared mount).
"""

from __future__ import annotations

import csv
import ctypes
import json
import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailbound.atomic import write_text_atomic
from tailbound.service.rpc_parts import sends

#: ``prctl``'s ``PR_SET_PDEATHSIG``: the child gets SIGTERM when the agent dies.
_PR_SET_PDEATHSIG = 1
#: Seconds the RPC server may take to say it is serving.
SERVE_READY_S = 60.0


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, 15)


@dataclass
class RpcReplay:
    """The agent's RPC replay (module documentation): ``netns`` the namespace to run in (the
    agent's ``--netns``), ``drain_s`` the replay's ``--drain``."""

    state: Path
    netns: str | None = None
    drain_s: float = 2.0
    _server: subprocess.Popen[str] | None = field(default=None, repr=False)
    _serving: str | None = field(default=None, repr=False)

    def _argv(self, *args: str) -> list[str]:
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        return [*prefix, sys.executable, "-m", "tailbound.cli.main", "enforce", "replay", *args]

    @property
    def hosts_path(self) -> Path:
        return self.state / "rpc-hosts.json"

    def after(self, agent: Any, *, serve: bool = True) -> dict[str, Any] | None:
        """After a step of ``agent``: serve and replay as its applied part says (module
        documentation); what was done, or None when nothing."""
        applied = agent.applied()
        if not agent.plan_path.exists() or "etag" not in applied:
            return None
        part = json.loads(agent.plan_path.read_text())
        rpc = part.get("meta", {}).get("rpc")
        addresses = part.get("meta", {}).get("addresses", {"hosts": {}, "ports": {}})
        done: dict[str, Any] = {}
        if serve:
            done |= self._serve(agent, rpc, addresses)
        if rpc is not None and sends(part):
            mark = self.state / "rpc.json"
            try:
                replayed = json.loads(mark.read_text()).get("etag")
            except (OSError, ValueError):
                replayed = None
            if replayed != applied["etag"]:
                done |= self._replay(agent, rpc, addresses, applied)
        return done or None

    def _serve(self, agent: Any, rpc: Any, addresses: Any) -> dict[str, Any]:
        want = None
        if rpc is not None and rpc["serves"]:
            me = str(rpc["host"])
            want = json.dumps([me, addresses["hosts"].get(me), addresses["ports"].get(me)])
        if want == self._serving and (self._server is None or self._server.poll() is None):
            return {}
        self.stop()
        if want is None:
            return {"rpc_server": "stopped"}
        write_text_atomic(self.hosts_path, json.dumps(addresses))
        argv = self._argv(
            "--plan", str(agent.plan_path), "--hosts", str(self.hosts_path), "--serve",
            "--host", str(rpc["host"]), "--duration", "1e6",
        )  # fmt: skip
        self._server = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_die_with_parent,
        )
        assert self._server.stdout is not None
        line = self._server.stdout.readline()
        if not line.startswith("serving"):
            self.stop()
            raise OSError(f"the RPC server did not start: {line.strip()}")
        self._serving = want
        return {"rpc_server": line.strip()}

    def _replay(self, agent: Any, rpc: Any, addresses: Any, applied: Any) -> dict[str, Any]:
        write_text_atomic(self.hosts_path, json.dumps(addresses))
        out = self.state / "rpc-replay"
        argv = self._argv(
            "--plan", str(agent.plan_path), "--hosts", str(self.hosts_path),
            "--host", str(rpc["host"]), "--drain", repr(self.drain_s), "--out", str(out),
        )  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode not in (0, 1):  # 1: a class missed its SLO or share: still measured
            raise OSError(f"enforce replay exited {done.returncode}: {done.stderr[-2000:]}")
        rows = class_summaries(out / "verify.csv")
        window = replay_span(out / "rpcs.csv")
        answer = None
        if rows:
            body = {
                "host": agent.host,
                "plan_version": applied.get("version", 0),
                "window_s": window,
                "tenants": rows,
            }
            answer = agent.client.json("POST", f"/clusters/{agent.cluster}/measurements", json=body)
        write_text_atomic(self.state / "rpc.json", json.dumps({"etag": applied["etag"]}))
        return {"rpc_replay": {"status": done.returncode, "posted": answer, "tenants": rows}}

    def stop(self) -> None:
        """Stop the RPC server this agent runs, if any."""
        if self._server is not None:
            if self._server.poll() is None:
                self._server.terminate()
                try:
                    self._server.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._server.kill()
                    self._server.wait()
            if self._server.stdout is not None:
                self._server.stdout.close()
        self._server, self._serving = None, None


def class_summaries(verify_csv: Path) -> list[dict[str, Any]]:
    """The measurement rows of a replay's ``verify.csv`` (``verify_aequitas.COLUMNS``): per
    tenant and class (not the network-wide ``all`` rows), ``tenant``, ``rpc_class``, ``count``
    (RPCs asking it), ``admitted`` (run at it), ``percentiles`` (the tail at the class's
    percentile, when finite) and ``max_s`` (when finite)."""
    from tailbound.verify_aequitas import ALL

    rows = []
    with open(verify_csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["tenant"] == ALL:
                continue
            tail, most = float(r["achieved_s"]), float(r["max_s"])
            row: dict[str, Any] = {
                "tenant": r["tenant"],
                "rpc_class": r["class"],
                "count": int(r["requests"]),
                "admitted": int(r["admitted"]),
                "percentiles": {str(float(r["percentile"])): tail} if math.isfinite(tail) else {},
            }
            if math.isfinite(most):
                row["max_s"] = most
            rows.append(row)
    return rows


def replay_span(rpcs_csv: Path) -> float:
    """The seconds from a replay's first RPC to its last answer (``rpcs.csv``; at least 1 ms)."""
    first, last = math.inf, 0.0
    with open(rpcs_csv, newline="") as f:
        for r in csv.DictReader(f):
            t = float(r["time_s"])
            first = min(first, t)
            last = max(last, t + (float(r["latency_s"]) if r["latency_s"] else 0.0))
    return max(last - first, 1e-3) if math.isfinite(first) else 1e-3
