"""A wc62-derived scenario live on several client hosts against the simulator's prediction.

Four network namespaces: two client hosts (``c0``, ``c1``), one server (``s``) and the switch (a
bridge whose three ports order packets by DSCP, ``tailbound enforce net --switch``), every
egress held to 100 Mbit/s by the link-rate root of its HTB tree. Four tenants whose traces are a
few seconds of wc62 traces (``../shared/data/wc62``, read from there, never copied), two on each
client, all to the server. The Plan is the project's own, from those windows, once per
admission policy: ``tailbound admit --policy dnc`` (the worst-case DNC admission of thesis
§4.3.1, which gives every tenant a level and token buckets on both network stages) and
``tailbound admit`` (SNC-Meister under its default rule: split levels and each tenant's load
bucket per network stage, traffic beyond it demoted). It is applied on the four hosts
with ``tailbound enforce net`` (which prints each tenant's realised bound against the Plan's),
the server runs ``tailbound enforce replay --serve`` and both clients run ``tailbound enforce
replay`` at once, sharing a wall-clock start (``--start-at``), ``RUNS`` times.

Compared per tenant and percentile with :func:`tailbound.verify.replay_plan` on the Plan as
enforced (``realised.realised_plan``: every network bucket the one HTB and nftables hold on the
wire), the same traces and 100 Mbit/s links, its messages the bytes they put on the wire
(``profiles.wire.wire_messages``: headers, delayed ACKs), within the live tests' tolerance
(``live_tolerance.tolerance``: ``2 · spread + floor + 3 %`` of the prediction, floor the p99 of a
lone 4 KiB read on the idle path, plus the percentile's sampling error over ``p ± 3·sqrt(p(1 −
p)/n)``: a p99 of a few hundred requests rests on a handful of them). Every SLO must be met in
every run, every request answered. Needs root, namespaces, HTB, nftables and the wc62 traces
(skipped saying which otherwise).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tailbound.enforce import replay
from tailbound.enforce.net import Addresses
from tailbound.enforce.realised import realised_plan
from tailbound.plan import Plan
from tailbound.profiles.wire import wire_messages
from tailbound.sim.results import percentile
from tailbound.traces import Trace, read_trace
from tailbound.traces.trace import Op
from tailbound.verify import replay_plan

from .live_tolerance import tolerance

_spec = importlib.util.spec_from_file_location(
    "_tailbound_net_live_wc62", Path(__file__).with_name("test_net_live.py")
)
assert _spec is not None and _spec.loader is not None
_live = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _live
_spec.loader.exec_module(_live)
sh, RT, LINK, TAILBOUND = _live.sh, _live.RT, _live.LINK, _live.TAILBOUND

try:
    replay.binary()
except replay.ReplayError as e:  # pragma: no cover - make install builds it
    pytest.skip(f"live replay tests skipped: {e}", allow_module_level=True)

WC62 = Path(__file__).resolve().parents[3] / "shared" / "data" / "wc62" / "traces"
if not WC62.is_dir():
    WC62 = Path("/work/shared/data/wc62/traces")
HOSTS = {"c0": "198.18.0.1", "c1": "198.18.0.3", "s": "198.18.0.2"}
#: name: (wc62 trace, client host, SLO s at p99). The SLOs are above each tenant's bound under
#: the discipline tc realises (``tailbound enforce net`` refuses a Plan it cannot guarantee):
#: bursty 10-minute block traces sent over 100 Mbit/s links queue for a second at worst. They
#: differ, so the policy puts every tenant at a level of its own: within a level HTB serves the
#: tenants round robin while the simulator's priority queue serves them FIFO (with three tenants
#: at level 0 a first version measured T13's p99 at 7 ms where the simulator predicts 123 ms).
#: Not here: wc62 trace 44 (a writer at 33 % of the link) at the lowest level, whose live p90
#: and p99 came out 20 % above the simulator's in every run (docs/enforcement.md).
TENANTS = {
    "T36": (36, "c0", 2.5),
    "T12": (12, "c0", 1.6),
    "T19": (19, "c1", 1.8),
    "T13": (13, "c1", 1.4),
}
WINDOW = (100.0, 106.0)  # seconds of each trace: 1394 requests
RUNS = 3
PCTS = (0.5, 0.9, 0.99)
PAYLOAD_LINK = LINK * 1448 / 1514


@dataclass
class Bed:
    ns: dict[str, str]  # host (c0, c1, s, switch) → namespace
    tmp: Path

    def run(self, host: str, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns[host], *RT, *cmd]


DEVICES = {"c0": "a0", "c1": "b0", "s": "s0"}  # each host's device; its switch port is "w" + it


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    reason = _live._missing()
    if reason:
        pytest.skip(f"wc62 live test skipped: {reason}")
    if not WC62.is_dir():
        pytest.skip(f"wc62 live test skipped: no wc62 traces at {WC62}")
    tag = f"tw{os.getpid() % 100000}"
    b = Bed({h: tag + h for h in (*DEVICES, "w")}, tmp_path_factory.mktemp("wc62live"))
    try:
        for ns in b.ns.values():
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            # a storage client's connection is long-lived: no slow start again after each
            # idle gap (a large write after a pause would otherwise wait several RTTs inflated
            # by the queues for its window to open, which the simulator does not model)
            sh("sysctl", "-qw", "net.ipv4.tcp_slow_start_after_idle=0", ns=ns)
        sh("ip", "link", "add", "br0", "type", "bridge", ns=b.ns["w"])
        for host, dev in DEVICES.items():
            port = "w" + dev
            sh(
                "ip", "link", "add", dev, "netns", b.ns[host], "type", "veth",
                "peer", "name", port, "netns", b.ns["w"],
            )  # fmt: skip
            for ns, d in ((b.ns[host], dev), (b.ns["w"], port)):
                # one MSS per packet: no 64 KB GSO packets in the queues
                sh(
                    "ip",
                    "link",
                    "set",
                    "dev",
                    d,
                    "gso_max_size",
                    "1514",
                    "gso_max_segs",
                    "1",
                    ns=ns,
                )
                sh("ip", "link", "set", d, "up", ns=ns)
            sh("ip", "link", "set", port, "master", "br0", ns=b.ns["w"])
            sh("ip", "addr", "add", f"{HOSTS[host]}/24", "dev", dev, ns=b.ns[host])
        sh("ip", "link", "set", "br0", "up", ns=b.ns["w"])
        time.sleep(1.5)  # the bridge's ports leave the listening state
        for c in ("c0", "c1") if shutil.which("ping") else ():
            sh("ping", "-c", "1", "-W", "3", HOSTS["s"], ns=b.ns[c])
        yield b
    except RuntimeError as e:
        pytest.skip(f"wc62 live test skipped: cannot build the namespaces: {e}")
    finally:
        for ns in b.ns.values():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def _window(i: int) -> Trace:
    return read_trace(WC62 / f"trace{i:04d}.txt").slice_time(*WINDOW)


def _write_wc(trace: Trace, path: Path) -> None:
    """A trace in wc62's own format (``arrival_ns,0xSIZE,DiskRead|DiskWrite``)."""
    ops = np.where(trace.op == Op.READ, "DiskRead", "DiskWrite").tolist()
    path.write_text(
        "".join(
            f"{round(t * 1e9)},{int(s):#x},{o}\n"
            for t, s, o in zip(trace.time.tolist(), trace.size.tolist(), ops, strict=True)
        )
    )


def _tailbound(*args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), *TAILBOUND, *args], capture_output=True, text=True, timeout=120
    )


#: The admission policies whose Plans are applied live (``tailbound admit --policy``).
POLICIES = ("dnc", "snc-meister")


def _scenario(bed: Bed, policy: str) -> tuple[Path, Path, Path, dict[str, Trace]]:
    traces = {name: _window(i) for name, (i, _, _) in TENANTS.items()}
    tenants = []
    for name, (_, client, slo) in TENANTS.items():
        _write_wc(traces[name], bed.tmp / f"{name}.txt")
        tenants.append(
            {"name": name, "slo_s": slo, "percentile": 0.99, "trace": f"{name}.txt",
             "client_host": client, "server_host": "s"}
        )  # fmt: skip
    tfile, plan, hosts = (
        bed.tmp / "tenants.json",
        bed.tmp / f"plan-{policy}.json",
        bed.tmp / "hosts.json",
    )
    tfile.write_text(json.dumps({"link_bandwidth_bytes_per_s": LINK, "tenants": tenants}))
    ports = {name: 7100 + k for k, name in enumerate(TENANTS)}
    hosts.write_text(json.dumps({"hosts": HOSTS, "ports": ports}))
    p = _tailbound("admit", "--tenants", str(tfile), "--policy", policy, "--out", str(plan))
    assert p.returncode == 0, p.stderr
    return tfile, plan, hosts, traces


@pytest.mark.parametrize("policy", POLICIES)
def test_wc62_tenants_on_two_clients_match_the_simulator(bed: Bed, policy: str) -> None:
    tfile, plan_path, hosts, traces = _scenario(bed, policy)
    plan = Plan.load(plan_path)
    assert sorted(t.name for t in plan.tenants) == sorted(TENANTS), f"{policy} rejected a tenant"
    assert {d.mode for d in plan.disciplines.values()} == {"demotion"}
    levels = {t.name: t.priority[s] for t in plan.tenants for s in t.priority}
    assert len(set(levels.values())) == len(TENANTS), f"one tenant a level: {levels}"
    for host, dev in DEVICES.items():
        args = ["--plan", str(plan_path), "--host", host, "--hosts", str(hosts)]
        p = _tailbound("enforce", "net", *args, "--device", dev, "--netns", bed.ns[host])
        assert p.returncode == 0, p.stderr
        print(p.stderr.strip())  # the realised bounds above the Plan's, if any
        port = _tailbound(
            "enforce", "net", "--switch", "--link-rate", "100mbit", "--device", "w" + dev,
            "--netns", bed.ns["w"],
        )  # fmt: skip
        assert port.returncode == 0, port.stderr
    span = WINDOW[1] - WINDOW[0]
    serve = subprocess.Popen(
        bed.run("s", *TAILBOUND, "enforce", "replay", "--plan", str(plan_path), "--hosts",
                str(hosts), "--serve", "--host", "s", "--duration", str(RUNS * (span + 12) + 20)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None and serve.stdout.readline().startswith("serving")
        lone = Trace.from_arrays(time=np.arange(200) * 0.01, op=[0] * 200, size=[4096] * 200)
        first = next(iter(TENANTS))
        dest = replay.destinations(plan, [first], _addresses(hosts))
        idle = replay.replay(plan, {first: lone}, dest, drain_s=2, prefix=bed.run("c0"))
        floor = percentile(idle.measured[first].latency, 0.99)
        runs = [_run(bed, plan_path, hosts, tfile, f"{policy}-{k}") for k in range(RUNS)]
    finally:
        serve.terminate()
        serve.communicate(timeout=10)
    # the Plan as enforced: every network bucket the one HTB and nftables hold on the wire, and
    # the messages as the bytes they put on the wire (headers, delayed ACKs)
    enforced = realised_plan(plan, LINK)
    sim = replay_plan(
        enforced, traces, link_bandwidth_bytes_per_s=LINK, mtu_bytes=1514, messages=wire_messages()
    )
    planned = replay_plan(plan, traces, link_bandwidth_bytes_per_s=PAYLOAD_LINK, mtu_bytes=1500)
    print(f"\nfloor (lone 4 KiB read, p99): {1e3 * floor:.3f} ms")
    print(
        "| tenant | client | level | pct | simulated, plan's buckets | simulated, as enforced "
        "| live runs | live median | tolerance |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    failures = []
    for name, (_, client, _) in TENANTS.items():
        level = plan.tenant(name).priority[next(iter(plan.tenant(name).priority))]
        for p in PCTS:
            predicted = sim.results[name].percentile(p)
            live = [percentile(r[name].latency, p) for r in runs]
            median, _, tol = tolerance(sim.results[name], p, live, floor)
            print(
                f"| {name} | {client} | {level} | p{100 * p:g} | "
                f"{1e3 * planned.results[name].percentile(p):.2f} ms | {1e3 * predicted:.2f} ms | "
                f"{', '.join(f'{1e3 * x:.2f}' for x in live)} | {1e3 * median:.2f} ms | "
                f"{1e3 * tol:.2f} ms |"
            )
            if abs(median - predicted) > tol:
                failures.append(f"{name} p{100 * p:g}: live {median:.5f} s, sim {predicted:.5f} s")
    for r in runs:
        for name, m in r.items():
            assert m.lost == 0, f"{name}: {m.lost} requests unanswered"
            assert percentile(m.latency, 0.99) <= TENANTS[name][2], f"{name} missed its SLO"
    assert not failures, failures


def _addresses(hosts: Path) -> Addresses:
    return Addresses.load(hosts)


def _run(
    bed: Bed, plan: Path, hosts: Path, tenants: Path, label: str
) -> dict[str, replay.Measured]:
    """Both clients replay their tenants at once from one wall-clock start."""
    start = time.time() + 4.0  # both CLIs start, read their traces and connect before it
    procs = {}
    for client in ("c0", "c1"):
        out = bed.tmp / f"run-{label}-{client}.csv"
        cmd = bed.run(
            client, *TAILBOUND, "enforce", "replay", "--plan", str(plan), "--hosts", str(hosts),
            "--tenants", str(tenants), "--host", client, "--start-at", repr(start),
            "--drain", "3", "--out", str(out),
        )  # fmt: skip
        procs[client] = (
            out,
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        )
    measured: dict[str, replay.Measured] = {}
    for client, (out, proc) in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode in (0, 1), stderr
        if label.endswith("-0"):  # the first run of a policy
            print(f"\n{client}:\n{stdout}")
        measured.update(replay.read_latencies(out))
    return measured
