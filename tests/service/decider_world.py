"""A control-plane database driven in process by :class:`~tailbound.service.admission.Decider`
(no HTTP server): one cluster of a demo fleet's tenants, random admissions and departures, and
new Deciders on it (each a restarted server). Used by ``test_engine_snapshots`` and
``test_host_parts``."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from sqlalchemy import select
from tests.service.harness import Demo

from tailbound.service import plan_store
from tailbound.service.admission import Decider
from tailbound.service.db import ClusterRow, TenantRow, make_engine, sessions
from tailbound.service.engines import Engine
from tailbound.service.metrics import Metrics
from tailbound.service.migrate import upgrade

#: The tenants' SLOs, in turn (s).
SLOS = (0.002, 0.005, 0.05)


class World:
    """A database with one cluster of ``fleet``'s tenants, and Deciders on it (a new one is a
    restarted server)."""

    def __init__(
        self,
        tmp: Path,
        fleet: Demo,
        policy: str,
        options: dict[str, Any],
        ports: dict[str, int] | None = None,
    ) -> None:
        self.url = f"sqlite:///{tmp / 'tb.db'}"
        upgrade(self.url)
        self.engine = make_engine(self.url)
        self.sessions = sessions(self.engine)
        self.fleet, self.tmp = fleet, tmp
        with self.sessions.begin() as s:
            row = ClusterRow(
                name="c",
                policy=policy,
                document=fleet.cluster,
                profile=fleet.profile,
                options=options,
            )
            s.add(row)
            s.flush()
            self.cluster_id = row.id
            for i, entry in enumerate(fleet.tenants):
                doc = {**entry, "slo_s": SLOS[i % len(SLOS)]}  # tight ones do not all fit
                if ports and entry["name"] in ports:
                    doc["port"] = ports[entry["name"]]
                s.add(TenantRow(cluster_id=row.id, name=entry["name"], document=doc))
        self.names = [t["name"] for t in fleet.tenants]

    def decider(self) -> Decider:
        return Decider(self.sessions, self.fleet.folder, self.tmp / "profiles", Metrics())

    def current(self, decider: Decider) -> tuple[int, Engine]:
        with self.sessions() as s:
            row = s.scalar(select(ClusterRow).where(ClusterRow.id == self.cluster_id))
            assert row is not None
            return decider.engine(s, row)

    def admitted(self) -> list[str]:
        with self.sessions() as s:
            return list(
                s.scalars(
                    select(TenantRow.name).where(
                        TenantRow.cluster_id == self.cluster_id, TenantRow.state == "admitted"
                    )
                )
            )

    def text(self, version: int) -> str:
        with self.sessions() as s:
            text = plan_store.version_text(s, self.cluster_id, version)
        assert text is not None
        return text


def random_history(world: World, decider: Decider, rng: random.Random, events: int) -> None:
    for _ in range(events):
        inside = world.admitted()
        if inside and rng.random() < 0.3:
            decider.depart("c", rng.choice(inside))
        else:
            outside = [n for n in world.names if n not in inside]
            decider.admit("c", rng.choice(outside))
