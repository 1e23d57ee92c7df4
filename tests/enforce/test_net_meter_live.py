"""The network meter measured for real (:mod:`tailbound.enforce.net_meter`): two network
namespaces joined by a veth pair (:mod:`tests.enforce.net_meter_bed`).

1. The arithmetic: the meter's rules for two buckets, UDP bursts of 300 packets of 1,000 IP
   bytes at one instant. A bucket of two seconds of its rate counts exactly the packets beyond it
   (100); a bucket smaller than one second of its rate is metered as one second of the rate (the
   nftables byte limiter's bucket), so it counts 200 where the exact count is 290: never more.
2. Through ``tailbound enforce net``: a Plan of two tenants on the client's egress
   (``demotion`` mode: in ``shaping`` mode the class holds a local sender back through its
   socket buffer, so its packets reach the meter at about the shaped rate; docs/enforcement.md),
   one sending 2,000 UDP datagrams of 1,400 bytes at once (more than its bucket of one second of
   its rate), the other a TCP stream paced well inside its bucket;
   ``enforce net --meter`` counts the first's packets beyond its bucket and none of the other's,
   ``--check`` still finds the device holding the Plan (counters are not configuration), and the
   agent turns the reading into the rows it posts (the API's flag from them: ``tests/service/
   test_agent_net_meter_live.py``).

Needs root, network namespaces, veth, HTB, u32 and nftables; skipped, saying which, without them.
About 10 s.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.enforce.net_meter_bed import LINK, SERVER2_IP, SERVER_IP, Pair, missing, pair, sh

from tailbound.enforce import net, net_meter
from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
from tailbound.service.agent import Agent, beyond_bucket
from tailbound.stages import NETWORK_PATH, Stage

#: ``udp HOST PORT COUNT PAYLOAD``: COUNT datagrams at once.
UDP = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[3])):
    s.sendto(b"x" * int(sys.argv[4]), (sys.argv[1], int(sys.argv[2])))
"""
B_PORT, P_PORT = 5401, 5402


@pytest.fixture(scope="module")
def bed() -> Iterator[Pair]:
    reason = missing()
    if reason:
        pytest.skip(f"network meter tests skipped: {reason}")
    try:
        with pair(f"tbm{os.getpid() % 100000}") as p:
            yield p
    except RuntimeError as e:
        pytest.skip(f"network meter tests skipped: cannot build the namespaces: {e}")


def test_the_meter_counts_a_burst_beyond_its_bucket_and_never_more(bed: Pair) -> None:
    rate, count, size = 100_000, 300, 1000  # bytes/s; packets of 1,000 IP bytes
    buckets = {9001: 2 * rate, 9002: rate // 10}  # two seconds of the rate; a tenth of one
    rules = []
    for port, bucket in buckets.items():
        match = f'oifname "c0" ip daddr {SERVER_IP} udp dport {port}'
        rules += net_meter.meter_rules(match, f"U{port}", "net_in", rate, bucket)
    table = net.nft_table("c0")
    body = "\n".join(f"    {r}" for r in rules)
    script = (
        f"table inet {table} {{\n  chain tb_marks {{\n    type filter hook postrouting "
        f"priority 0; policy accept;\n{body}\n  }}\n}}\n"
    )
    sh("nft", "-f", "-", ns=bed.client, stdin=script)
    try:
        for port in buckets:
            sh(sys.executable, "-c", UDP, SERVER_IP, str(port), str(count), str(size - 28),
               ns=bed.client)  # fmt: skip
        with net.Host(bed.client) as host:
            counts = net_meter.read(host, table)
    finally:
        sh("nft", "delete", "table", "inet", table, ns=bed.client)
    exact = {p: beyond_bucket([0.0] * count, [size] * count, rate, b) for p, b in buckets.items()}
    got = {p: counts[f"U{p} net_in"] for p in buckets}
    print(
        "\nbeyond (exact for the Plan's bucket / metered): "
        + ", ".join(f"b={buckets[p]} B: {exact[p]} / {got[p].beyond_packets}" for p in buckets)
    )
    assert all(c.packets == count and c.bytes == count * size for c in got.values())
    assert exact == {9001: 100, 9002: 290}
    # the burst takes a few ms to send: the bucket leaks 100 B/ms meanwhile
    assert 90 <= got[9001].beyond_packets <= 100
    assert got[9001].beyond_bytes == got[9001].beyond_packets * size
    assert 190 <= got[9002].beyond_packets <= 200 < exact[9002]


def _tenant(name: str, server: str, level: int, rate: float, bucket_bytes: float) -> TenantPlan:
    return TenantPlan(
        name=name,
        slo=Slo(1.0, 0.99),
        server=server,
        device=None,
        client_host="c",
        priority=dict.fromkeys(NETWORK_PATH, level),
        limits={
            Stage.NET_IN: StageLimit(rate, bucket_bytes / LINK, float(LINK)),
            Stage.NET_OUT: StageLimit(0.01, 12_000 / LINK, float(LINK)),
        },
        bound=Bound(1.0, "test", 0.99),
    )


def meter_plan(tmp: Path, burst: str, paced: str, mode: str = "demotion") -> tuple[Path, Path]:
    """A Plan of ``burst`` (5 % of the link, a 12 kB bucket, to server ``s``) and ``paced`` (2 %,
    12 kB, to server ``s2``) sending from client host ``c``, and its hosts file (one address
    pair per tenant: no ports, so a tenant is every packet of its pair); their paths."""
    plan = Plan(
        policy="test",
        servers_used=2,
        tenants=[_tenant(paced, "s2", 0, 0.02, 12_000), _tenant(burst, "s", 1, 0.05, 12_000)],
        disciplines={s: Discipline("priority", mode) for s in NETWORK_PATH},
    )
    path, hosts = tmp / f"meter-plan-{mode}.json", tmp / "meter-hosts.json"
    plan.save(path)
    hosts.write_text(json.dumps({"hosts": {"c": "198.18.9.1", "s": SERVER_IP, "s2": SERVER2_IP}}))
    return path, hosts


def run_meter_traffic(bed: Pair, plan: Path, hosts: Path) -> dict[str, Any]:
    """Install ``plan`` on the client's egress, send the burst (2,000 UDP datagrams of 1,400
    bytes at once to the first server) and the paced tenant (40 TCP writes of 1,000 bytes, 50
    ms apart, to the second) together, and return ``enforce net --meter``'s JSON."""
    args = ("enforce", "net", "--plan", str(plan), "--host", "c", "--hosts", str(hosts))
    args += ("--device", "c0", "--netns", bed.client)
    done = bed.tailbound(*args)
    assert done.returncode == 0, done.stderr
    burst = [sys.executable, "-c", UDP, SERVER_IP, str(B_PORT), "2000", "1400"]
    bed.traffic({P_PORT: (SERVER2_IP, 1000, 0.05, 40)}, 3.0, burst)
    assert bed.tailbound(*args, "--check").returncode == 0  # counters are not configuration
    meter = bed.tailbound("enforce", "net", "--device", "c0", "--netns", bed.client, "--meter")
    assert meter.returncode == 0, meter.stderr
    return dict(json.loads(meter.stdout))


class _Posts:
    """A stand-in for the server's client: records the bodies posted."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def json(self, method: str, path: str, json: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(json)
        return {"stored": len(json["tenants"])}


def test_enforce_net_meters_a_tenant_beyond_its_bucket_and_not_a_paced_one(
    bed: Pair, tmp_path: Path
) -> None:
    plan, hosts = meter_plan(tmp_path, "B", "P")
    try:
        counts = run_meter_traffic(bed, plan, hosts)
        rules = sh("nft", "list", "table", "inet", "tailbound_c0", ns=bed.client)
    finally:
        bed.tailbound("enforce", "net", "--device", "c0", "--netns", bed.client, "--remove")
    b, p = counts["B net_in"], counts["P net_in"]
    print(f"\nmeter: B {b}\n       P {p}")
    assert 'comment "tailbound meter B net_in"' in rules
    # 2,000 × 1,428 IP bytes at once against about one second of 5 % of the link on the wire
    assert b["packets"] == 2000 and 1000 < b["beyond_packets"] < 2000
    assert p["packets"] >= 40 and p["beyond_packets"] == 0
    # the agent's rows: the window's packets and those beyond, per tenant of its part
    posts = _Posts()
    agent = Agent(posts, "c1", "c", tmp_path / "state", run=lambda argv: (0, ""))  # type: ignore[arg-type]
    agent.plan_path.write_text(plan.read_text())
    assert agent.measure_net(json.dumps(counts)) == {"B": b["beyond_packets"], "P": 0}
    agent.post_net(2.0)
    rows = {r["tenant"]: r for r in posts.bodies[0]["tenants"]}
    assert rows["B"]["beyond_buckets"] == b["beyond_packets"] and rows["P"]["beyond_buckets"] == 0
    assert rows["B"]["count"] == b["packets"] and rows["P"]["percentiles"] == {}
    # the next window holds nothing new: nothing is posted
    agent.measure_net(json.dumps(counts))
    assert agent.post_net(1.0) is None and len(posts.bodies) == 1
