"""Small network Plans shared by the network enforcer's tests (configuration, realised bound,
checks): tenants on client ``c`` (and ``d``) sending to server ``s`` over a 100 Mbit/s link."""

from __future__ import annotations

import dataclasses

from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
from tailbound.stages import NETWORK_PATH

C = 12_500_000
#: A tenant with the same bucket (r, b) in both directions has (W·r, W·b) on the wire: its
#: messages' segment headers (66/1448 of the bytes), the other direction's ACKs (66/1448 of its
#: bytes) and one more header per message each way (2·66 per request of at least 200 bytes each)
W = 1 + 2 * 66 / 1448 + 2 * 66 / 200


def tenant(
    name: str, level: int | None, rate: float, bucket: float, slo: float = 0.01, **kw
) -> TenantPlan:
    """A network tenant on client ``c`` at ``level`` on both stages with the bucket
    ``(rate · C, bucket)`` (bytes/s, message bytes) both ways."""
    return TenantPlan(
        name=name,
        slo=Slo(slo, 0.99),
        server="s",
        device=None,
        client_host="c",
        priority=dict.fromkeys(NETWORK_PATH, level),
        limits={s: StageLimit(rate, bucket / C, float(C)) for s in NETWORK_PATH},
        bound=kw.pop("bound", Bound(slo, "test")),
        **kw,
    )


def plan(mode: str = "shaping", *tenants: TenantPlan) -> Plan:
    """A Plan of ``tenants`` (default: H at level 0, L at level 2) under ``mode``."""
    return Plan(
        policy="t",
        servers_used=1,
        tenants=list(tenants)
        or [tenant("H", 0, 0.02, 12_000), tenant("L", 2, 0.3, 100_000, slo=0.1)],
        disciplines={s: Discipline("priority", mode) for s in NETWORK_PATH},
    )


def two_clients() -> Plan:
    """A and L on client c, B on client d, all to server s: A and B at level 0, L at level 1."""
    a = tenant("A", 0, 0.1, 10_000, slo=0.025)
    b = dataclasses.replace(tenant("B", 0, 0.2, 20_000, slo=0.03), client_host="d")
    return plan("shaping", a, b, tenant("L", 1, 0.2, 50_000, slo=0.1))
