"""``enforce net``'s meter counts the packets a tenant sends beyond its network bucket, the agent
posts them, and the API flags the tenant (issue 27; :mod:`tailbound.enforce.net_meter`).

A real server admits two demo tenants; the agent fetches its host's part; a network Plan naming
those two tenants (one bursting 2,000 UDP datagrams at once, one paced TCP stream well inside its
bucket) is installed with ``tailbound enforce net`` on a veth pair between two network namespaces
(:mod:`tests.enforce.net_meter_bed`), the traffic sent, ``enforce net --meter`` read, and the
agent posts the window (:meth:`~tailbound.service.agent.Agent.measure_net`,
:meth:`~tailbound.service.agent.Agent.post_net`); the report flags the first only. Needs root and
network namespaces (skipped, saying which, without them)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.enforce.net_meter_bed import missing, pair
from tests.enforce.test_net_meter_live import meter_plan, run_meter_traffic
from tests.service.harness import Demo, Server, admitted_on_server00

from tailbound.service.agent import Agent


def test_a_tenant_beyond_its_network_bucket_is_flagged_through_the_api(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    reason = missing()
    if reason:
        pytest.skip(f"network meter test skipped: {reason}")
    operator, token, _one, admitted = admitted_on_server00(server, sqlite_url, small_demo)
    assert len(admitted) >= 2
    over, paced = admitted[:2]
    plan, hosts = meter_plan(tmp_path, over, paced)
    try:
        with pair(f"tba{os.getpid() % 100000}") as bed:
            counts = run_meter_traffic(bed, plan, hosts)
    except RuntimeError as e:
        pytest.skip(f"network meter test skipped: cannot build the namespaces: {e}")
    print(json.dumps(counts))
    with server.client(token) as client:
        agent = Agent(client, "c1", "server00", tmp_path / "state", run=lambda argv: (0, ""))
        agent.step()
        assert agent.measure_net(json.dumps(counts))[over] > 0
        assert agent.post_net(2.0) == {"stored": 2}
    with server.client(operator) as c:
        rows = {r["tenant"]: r for r in c.json("GET", "/clusters/c1/report")["tenants"]}
    assert rows[over]["beyond_buckets"] == counts[f"{over} net_in"]["beyond_packets"] > 0
    assert "beyond_characterisation" in rows[over]["flags"]
    assert rows[paced]["beyond_buckets"] == 0 and rows[paced]["count"] > 0
    assert "beyond_characterisation" not in rows[paced]["flags"]
