"""Hosts' parts cut from the stored entries (:mod:`tailbound.service.host_parts`) are, byte for
byte, the parts cut from the whole Plan (:func:`tailbound.service.plans.part_text`), so their
ETags are unchanged: every version of a random history (past several full lists of entries),
every host and one with no tenant, with and without addresses and ports, from cold and warm
caches."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from sqlalchemy import update
from tests.service.decider_world import World, random_history
from tests.service.harness import Demo, demo

from tailbound.service import host_parts, plan_store
from tailbound.service.db import ClusterRow
from tailbound.service.host_parts import HostParts
from tailbound.service.plans import Addresses, part_text


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return demo(tmp_path_factory.mktemp("parts"), 12, servers=2, duration_s=5.0, seed=3)


def test_parts_from_entries_equal_parts_of_the_whole_plan(
    tmp_path: Path, fleet: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_store, "SNAPSHOT_EVERY", 4)  # edits across several full lists
    monkeypatch.setattr(host_parts, "VERSIONS", 3)  # versions evicted and read again
    names = [t["name"] for t in fleet.tenants]
    ports = {n: 9000 + i for i, n in enumerate(names[::2])}
    world = World(tmp_path, fleet, "workloadcompactor", {"mtu_bytes": 9000.0}, ports=ports)
    hosts = sorted(
        [h["name"] for h in fleet.cluster["server_hosts"]]
        + [h["name"] for h in fleet.cluster["client_hosts"]]
    )
    with world.sessions.begin() as s:
        s.execute(
            update(ClusterRow)
            .where(ClusterRow.id == world.cluster_id)
            .values(addresses={h: f"10.0.0.{i + 1}" for i, h in enumerate(hosts)})
        )
    addresses = Addresses({h: f"10.0.0.{i + 1}" for i, h in enumerate(hosts)}, ports)
    random_history(world, world.decider(), random.Random(3), 16)
    version, _ = world.current(world.decider())
    assert version > 8
    parts = HostParts()
    for _ in range(2):  # cold, then warm
        for v in range(1, version + 1):
            document = json.loads(world.text(v))
            for host in [*hosts, "elsewhere"]:
                for given in (None, addresses):
                    with world.sessions() as s:
                        got = parts.part(s, world.cluster_id, v, host, given)
                    assert got == part_text(document, host, given), (v, host, given)
