"""The Plan as ``tailbound enforce net`` realises it: its buckets on the wire, the Plan as
enforced, and each tenant's bound under the realised discipline (by hand, and the numbers the
bound gave when it lived in ``enforce/net.py``)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from tailbound.enforce.realised import (
    BLOCKING,
    htb_bounds,
    message_buckets,
    network_bounds,
    realised_plan,
    wire_buckets,
)
from tailbound.plan import StageLimit, TenantPlan
from tailbound.profiles.wire import MTU
from tailbound.stages import NETWORK_PATH, STORAGE_PATH, Stage

from .net_plans import C, W, plan, tenant, two_clients


def test_message_and_wire_buckets_of_a_tenant() -> None:
    t = tenant(
        "H",
        1,
        0.1,
        50_000,
        extra_limits={s: (StageLimit(0.02, 200_000 / C, float(C)),) for s in NETWORK_PATH},
    )
    assert message_buckets(t, Stage.NET_IN, C) == [
        pytest.approx((1_250_000, 50_000)),
        pytest.approx((250_000, 200_000)),
    ]
    # the primary's own bytes, the other direction's primary's ACKs, the per-request headers
    k, a, per = 1 + 66 / 1448, 66 / 1448, 2 * 66 / 200
    (r0, b0), (r1, b1) = wire_buckets(t, Stage.NET_IN, C)
    assert (r0, b0) == pytest.approx((W * 1_250_000, W * 50_000))
    assert r1 == pytest.approx(k * 250_000 + a * 1_250_000 + per * 1_250_000)
    assert b1 == pytest.approx(k * 200_000 + a * 50_000 + per * 50_000)
    # a Plan limit without its own capacity counts in the link's bytes
    bare = dataclasses.replace(t, limits={s: StageLimit(0.1, 50_000 / C) for s in NETWORK_PATH})
    assert message_buckets(bare, Stage.NET_OUT, C)[0] == pytest.approx((1_250_000, 50_000))
    assert wire_buckets(dataclasses.replace(t, limits={}), Stage.NET_IN, C) == []


def test_realised_plan_carries_the_wire_buckets_as_shares_of_the_link() -> None:
    storage = dataclasses.replace(
        tenant("S", 0, 0.1, 10_000),
        device="ssd0",
        priority=dict.fromkeys(STORAGE_PATH, 0),
        limits={
            **tenant("S", 0, 0.1, 10_000).limits,
            Stage.STORAGE: StageLimit(0.3, 0.002),
        },
        extra_limits={Stage.NET_OUT: (StageLimit(0.9, 1_000 / C, float(C)),)},
    )
    p = plan("shaping", tenant("H", 0, 0.02, 12_000), storage)
    enforced = realised_plan(p, C)
    for before, after in zip(p.tenants, enforced.tenants, strict=True):
        for stage in (Stage.NET_IN, Stage.NET_OUT):
            wire = wire_buckets(before, stage, C)
            lims = [after.limits[stage], *after.extra_limits.get(stage, ())]
            assert [x for lim in lims for x in (lim.rate, lim.bucket_s)] == pytest.approx(
                [x for r, b in wire for x in (min(r / C, 1.0), b / C)]
            )
            assert all(lim.capacity_per_s == C for lim in lims)
    s = enforced.tenant("S")
    assert s.limits[Stage.STORAGE] == storage.limits[Stage.STORAGE]  # not a network stage
    assert s.extra_limits[Stage.NET_OUT][0].rate == 1.0  # capped at the link
    assert enforced.disciplines == p.disciplines


def test_bound_of_the_realised_discipline() -> None:
    b = htb_bounds(plan(), Stage.NET_IN, C)  # buckets on the wire: W times the plan's
    assert BLOCKING == 2 * MTU
    assert b["H"] == pytest.approx((W * 12_000 + 2 * MTU) / C)
    assert b["L"] == pytest.approx((W * 112_000 + 2 * MTU) / (C - W * 250_000))
    same = plan("shaping", tenant("A", 0, 0.1, 1e4), tenant("B", 0, 0.2, 2e4))
    # HTB's round robin within a level: the other tenant of the level interferes at its rate
    assert htb_bounds(same, Stage.NET_IN, C)["A"] == pytest.approx(
        (W * 3e4 + 2 * MTU) / (C - W * 0.2 * C)
    )
    # best effort at the stage: not a member of the queue
    free = plan("shaping", tenant("A", 0, 0.1, 1e4), tenant("E", None, 0.2, 2e4))
    assert set(htb_bounds(free, Stage.NET_IN, C)) == {"A"}


def test_network_bound_over_the_queues_of_several_hosts_by_hand() -> None:
    m2 = 2 * MTU  # 3028 bytes of blocking
    # the buckets on the wire (W times the plan's: same bucket both ways)
    ra, rb, rl = W * 1_250_000, W * 2_500_000, W * 2_500_000
    ba, bb, bl = W * 10_000, W * 20_000, W * 50_000
    # net_in, c's egress (A, L; B is on d): A alone at level 0
    a1 = (ba + m2) / C
    l1 = (ba + bl + m2) / (C - ra)
    b1 = (bb + m2) / C  # d's egress: B alone
    # the server's side: every tenant, bursts grown by r·d at the first queue; A and B share
    # level 0 (round robin: B's rate counts against A)
    a2 = (ba + ra * a1 + bb + rb * b1 + m2) / (C - rb)
    # net_out, s's egress: all three
    a3 = (ba + bb + m2) / (C - rb)
    l3 = (ba + bb + bl + m2) / (C - ra - rb)
    # c's side: A and L, bursts grown by their delay at s
    a4 = (ba + ra * a3 + m2) / C
    bounds = network_bounds(two_clients(), C)
    assert bounds["A"] == pytest.approx(a1 + a2 + a3 + a4)
    assert bounds["A"] == pytest.approx(0.0202498, rel=1e-4)  # 20.2 ms
    l2 = (ba + ra * a1 + bb + rb * b1 + bl + rl * l1 + m2) / (C - ra - rb)
    l4 = (ba + ra * a3 + bl + rl * l3 + m2) / (C - ra)
    assert bounds["L"] == pytest.approx(l1 + l2 + l3 + l4)
    # a tenant without buckets makes everyone at or below its level unbounded
    free = dataclasses.replace(two_clients().tenants[1], limits={})
    p = dataclasses.replace(two_clients(), tenants=[*two_clients().tenants[::2], free])
    assert math.isinf(network_bounds(p, C)["A"]) and math.isinf(network_bounds(p, C)["L"])


def _stored_plan() -> list[TenantPlan]:
    """Three network tenants and a storage one on two clients, with extra buckets and a
    Plan limit without its own capacity."""
    a = tenant(
        "A",
        0,
        0.1,
        10_000,
        extra_limits={s: (StageLimit(0.6, 3_000 / C, float(C)),) for s in NETWORK_PATH},
    )
    b = dataclasses.replace(tenant("B", 0, 0.2, 20_000), client_host="d")
    low = tenant("L", 1, 0.15, 40_000)
    st = dataclasses.replace(
        tenant("S", 2, 0.05, 8_000),
        client_host="d",
        device="ssd0",
        priority={**dict.fromkeys(STORAGE_PATH, 2), Stage.NET_OUT: 1},
        limits={
            Stage.NET_IN: StageLimit(0.05, 8_000 / C),
            Stage.NET_OUT: StageLimit(0.08, 30_000 / C, float(C)),
        },
    )
    return [a, b, low, st]


#: ``enforce.net.network_bounds`` before the bound moved to ``dnc.htb`` (commit 74bf056), on
#: :func:`two_clients` and :func:`_stored_plan` at C (seconds).
OLD_NETWORK_BOUNDS = {
    "two_clients": {"A": 0.02024982176354373, "B": 0.02039411277368315, "L": 0.09149395147576142},
    "stored": {
        "A": 0.018499517810409406,
        "B": 0.020269810705271722,
        "L": 0.09573635180050499,
        "S": 0.1638859178047034,
    },
}


@pytest.mark.parametrize("name", sorted(OLD_NETWORK_BOUNDS))
def test_network_bounds_as_before_the_move(name: str) -> None:
    p = two_clients() if name == "two_clients" else plan("shaping", *_stored_plan())
    assert network_bounds(p, C) == pytest.approx(OLD_NETWORK_BOUNDS[name], rel=1e-12)


def test_a_host_sending_at_both_stages_has_one_egress() -> None:
    """Host ``s`` is the server of A and the client of Z (whose server is ``c``): its egress
    carries A's net_out and Z's net_in, one HTB tree. The bound counts both there (before the
    move each stage was analysed on its own, which left Z out of A's queue)."""
    a = tenant("A", 1, 0.1, 10_000)
    z = dataclasses.replace(tenant("Z", 0, 0.2, 20_000), client_host="s", server="c")
    ra, rz, ba, bz = W * 1_250_000, W * 2_500_000, W * 10_000, W * 20_000
    m2 = 2 * MTU
    bounds = network_bounds(plan("shaping", a, z), C)
    # A: net_in at c's egress with Z's net_out (Z more important), then s's side with Z's
    # net_in; net_out likewise at s's egress and c's side, bursts grown by the first delay
    a1 = (ba + bz + m2) / (C - rz)
    z1 = (bz + m2) / C
    a2 = (ba + ra * a1 + bz + rz * z1 + m2) / (C - rz)
    assert bounds["A"] == pytest.approx(2 * (a1 + a2))
    alone = network_bounds(plan("shaping", a), C)["A"]
    assert bounds["A"] > alone
