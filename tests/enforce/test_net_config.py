"""The Plan → HTB/u32/nftables mapping, checked without touching a host (no root needed)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from tailbound.enforce import net
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
from tailbound.stages import NETWORK_PATH, Stage

C = 12_500_000
#: A tenant with the same bucket (r, b) in both directions has (W·r, W·b) on the wire: its
#: messages' segment headers (66/1448 of the bytes), the other direction's ACKs (66/1448 of its
#: bytes) and one more header per message each way (2·66 per request of at least 200 bytes each)
W = 1 + 2 * 66 / 1448 + 2 * 66 / 200
HOSTS = net.Addresses({"c": "198.18.0.1", "s": "198.18.0.2"}, {"H": 5001, "L": 5201})


def tenant(
    name: str, level: int | None, rate: float, bucket: float, slo: float = 0.01, **kw
) -> TenantPlan:
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
    return Plan(
        policy="t",
        servers_used=1,
        tenants=list(tenants)
        or [tenant("H", 0, 0.02, 12_000), tenant("L", 2, 0.3, 100_000, slo=0.1)],
        disciplines={s: Discipline("priority", mode) for s in NETWORK_PATH},
    )


def test_shaping_maps_the_bucket_to_ceil_and_cburst_and_the_level_to_prio() -> None:
    cfg = net.host_config(plan(), "c", "c0", HOSTS)
    by = {c.label.split()[0]: c for c in cfg.classes if c.label.startswith(("H", "L"))}
    h_wire, l_wire = (
        (int(W * 250_000), int(W * 12_000) - net.MTU, 0),
        (
            int(W * 3_750_000),
            int(W * 100_000) - net.MTU,
            2,
        ),
    )
    assert (by["H"].ceil, by["H"].cburst, by["H"].prio) == h_wire
    assert (by["L"].ceil, by["L"].cburst, by["L"].prio) == l_wire
    assert all(c.rate == net.ASSURED_RATE and c.parent == net.LINK_CLASS for c in by.values())
    link = next(c for c in cfg.classes if c.classid == net.LINK_CLASS)
    assert link.rate == link.ceil == C
    # H's filter: IPv4 without options, DSCP CS7, TCP, client → server, to H's port
    f = next(f for f in cfg.filters if f.label.startswith("H"))
    assert (1, 56 << 2, 0xFC) in f.match and (22, 5001 >> 8, 0xFF) in f.match
    assert f.keys()[0] == "0x45e00000/0xfffc0000+0"
    assert any("tcp dport 5001 ip dscp set cs7" in r for r in cfg.nft_rules)
    # the server's egress carries net_out, matched by the source port
    srv = net.host_config(plan(), "s", "s0", HOSTS)
    assert any("tcp sport 5201 ip dscp set cs5" in r for r in srv.nft_rules)


def test_demotion_keeps_link_ceil_and_marks_the_excess_best_effort() -> None:
    cfg = net.host_config(plan("demotion"), "c", "c0", HOSTS)
    h = next(c for c in cfg.classes if c.label.startswith("H"))
    assert h.ceil == C
    assert any(
        f"limit rate over {int(W * 250_000)} bytes/second burst {int(W * 12_000)} bytes "
        "ip dscp set cs0" in r
        for r in cfg.nft_rules
    )


def test_extra_buckets_nest_as_parent_classes() -> None:
    t = tenant(
        "H",
        1,
        0.1,
        50_000,
        extra_limits={s: (StageLimit(0.02, 200_000 / C, float(C)),) for s in NETWORK_PATH},
    )
    cfg = net.host_config(plan("shaping", t), "c", "c0", HOSTS)
    mine = [c for c in cfg.classes if c.label.startswith("H")]
    outer, leaf = mine
    # each bucket on the wire: its own bytes with headers, the other direction's primary
    # bucket's ACKs, the per-request headers of the primary bucket with the lower rate
    k, a, per = 1 + 66 / 1448, 66 / 1448, 2 * 66 / 200
    assert outer.ceil == int(k * 250_000 + a * 1_250_000 + per * 1_250_000)
    assert leaf.ceil == int(W * 1_250_000) and leaf.parent == outer.classid


def test_bad_input_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.priority\.net_in"):
        net.host_config(plan("shaping", tenant("H", 7, 0.1, 1e4)), "c", "c0", HOSTS)
    two = plan("shaping", tenant("A", 0, 0.1, 1e4), tenant("B", 1, 0.1, 1e4))
    with pytest.raises(ConfigError, match="ports.B"):
        net.host_config(two, "c", "c0", net.Addresses({"c": "198.18.0.1", "s": "198.18.0.2"}))
    with pytest.raises(ConfigError, match="no address for host 's'"):
        net.host_config(plan(), "c", "c0", net.Addresses({"c": "198.18.0.1"}))
    with pytest.raises(ConfigError, match="hosts.c"):
        net.Addresses.from_json({"hosts": {"c": "300.1.1.1"}})
    with pytest.raises(ConfigError, match="ports.H"):
        net.Addresses.from_json({"hosts": {}, "ports": {"H": 70000}})


def test_cli_dry_run_and_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tailbound.cli.main import main

    p, h = tmp_path / "plan.json", tmp_path / "hosts.json"
    plan().save(p)
    h.write_text(json.dumps({"hosts": HOSTS.hosts, "ports": HOSTS.ports}))
    args = ["enforce", "net", "--plan", str(p), "--host", "c", "--hosts", str(h), "--device", "c0"]
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"ceil {int(W * 250_000)}B/s" in out and "# H net_in level 0" in out
    h.write_text("{")
    assert main([*args, "--dry-run"]) == 2
    assert str(h) in capsys.readouterr().err


def test_bound_of_the_realised_discipline() -> None:
    b = net.htb_bounds(plan(), Stage.NET_IN, C)  # buckets on the wire: W times the plan's
    assert b["H"] == pytest.approx((W * 12_000 + 2 * net.MTU) / C)
    assert b["L"] == pytest.approx((W * 112_000 + 2 * net.MTU) / (C - W * 250_000))
    same = plan("shaping", tenant("A", 0, 0.1, 1e4), tenant("B", 0, 0.2, 2e4))
    # HTB's round robin within a level: the other tenant of the level interferes at its rate
    assert net.htb_bounds(same, Stage.NET_IN, C)["A"] == pytest.approx(
        (W * 3e4 + 2 * net.MTU) / (C - W * 0.2 * C)
    )


def two_clients() -> Plan:
    """A and L on client c, B on client d, all to server s: A and B at level 0, L at level 1."""
    a = tenant("A", 0, 0.1, 10_000, slo=0.025)
    b = dataclasses.replace(tenant("B", 0, 0.2, 20_000, slo=0.03), client_host="d")
    return plan("shaping", a, b, tenant("L", 1, 0.2, 50_000, slo=0.1))


def test_network_bound_over_the_queues_of_several_hosts_by_hand() -> None:
    m2 = 2 * net.MTU  # 3028 bytes of blocking
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
    bounds = net.network_bounds(two_clients(), C)
    assert bounds["A"] == pytest.approx(a1 + a2 + a3 + a4)
    assert bounds["A"] == pytest.approx(0.0202498, rel=1e-4)  # 20.2 ms
    l2 = (ba + ra * a1 + bb + rb * b1 + bl + rl * l1 + m2) / (C - ra - rb)
    l4 = (ba + ra * a3 + bl + rl * l3 + m2) / (C - ra)
    assert bounds["L"] == pytest.approx(l1 + l2 + l3 + l4)
    # a tenant without buckets makes everyone at or below its level unbounded
    free = dataclasses.replace(two_clients().tenants[1], limits={})
    p = dataclasses.replace(two_clients(), tenants=[*two_clients().tenants[::2], free])
    assert math.isinf(net.network_bounds(p, C)["A"]) and math.isinf(net.network_bounds(p, C)["L"])


def test_check_bounds_against_the_slo_and_the_plan() -> None:
    checks = {c.tenant: c for c in net.check_bounds(two_clients(), C)}
    a = checks["A"]  # SLO 25 ms, plan 25 ms, realised 20.2 ms
    assert not a.over_slo and not a.over_plan and "within the plan's bound" in a.line()
    low = dataclasses.replace(two_clients().tenants[0], bound=Bound(0.005, "test"))
    p = dataclasses.replace(two_clients(), tenants=[low, *two_clients().tenants[1:]])
    a = next(c for c in net.check_bounds(p, C) if c.tenant == "A")
    assert a.over_plan and not a.over_slo and "above the plan's bound" in a.line()
    tight = dataclasses.replace(low, slo=Slo(0.019, 0.99))
    p = dataclasses.replace(two_clients(), tenants=[tight, *two_clients().tenants[1:]])
    assert [c.tenant for c in net.check_bounds(p, C) if c.over_slo] == ["A"]
    # a storage tenant: the plan's network parts are replaced by the realised ones
    stor = dataclasses.replace(
        two_clients().tenants[0],
        device="ssd0",
        priority={**two_clients().tenants[0].priority, Stage.STORAGE: 0},
        bound=Bound(
            0.02, "t", stages={Stage.NET_IN: 0.001, Stage.STORAGE: 0.017, Stage.NET_OUT: 0.002}
        ),
        slo=Slo(0.05, 0.99),
    )
    p = dataclasses.replace(two_clients(), tenants=[stor, *two_clients().tenants[1:]])
    a = next(c for c in net.check_bounds(p, C) if c.tenant == "A")
    assert a.realised_s == pytest.approx(0.02 - 0.003 + a.network_s)
    # without the split the network part is added to the whole bound (an upper bound)
    stor = dataclasses.replace(stor, bound=Bound(0.02, "t"))
    p = dataclasses.replace(two_clients(), tenants=[stor, *two_clients().tenants[1:]])
    a = next(c for c in net.check_bounds(p, C) if c.tenant == "A")
    assert a.realised_s == pytest.approx(0.02 + a.network_s)


def test_cli_refuses_a_plan_whose_realised_bound_misses_an_slo(tmp_path: Path, capsys) -> None:
    from tailbound.cli.main import main

    tight = dataclasses.replace(two_clients().tenants[2], slo=Slo(0.02, 0.99))
    p = dataclasses.replace(two_clients(), tenants=[*two_clients().tenants[:2], tight])
    path, hosts = tmp_path / "plan.json", tmp_path / "hosts.json"
    p.save(path)
    hosts.write_text(
        json.dumps(
            {
                "hosts": {"c": "198.18.0.1", "d": "198.18.0.3", "s": "198.18.0.2"},
                "ports": {"A": 5001, "B": 5002, "L": 5003},
            }
        )
    )
    args = ["enforce", "net", "--plan", str(path), "--hosts", str(hosts), "--device", "x0"]
    # client d carries only B (level 0, within its SLO): fine; c carries L (above its SLO)
    assert main([*args, "--host", "d", "--dry-run"]) == 0
    assert main([*args, "--host", "c", "--dry-run"]) == 1
    captured = capsys.readouterr()
    assert "# bound: L: realised bound" in captured.out
    assert "would refuse" in captured.err and "SLO of L" in captured.err
    # applying refuses before touching anything (the device x0 does not even exist here)
    assert main([*args, "--host", "c"]) == 1
    assert "refused, nothing changed" in capsys.readouterr().err
    # a bound above the plan's but within the SLO is a warning
    low = dataclasses.replace(two_clients().tenants[0], bound=Bound(0.005, "test"))
    dataclasses.replace(two_clients(), tenants=[low, *two_clients().tenants[1:]]).save(path)
    assert main([*args, "--host", "c", "--dry-run"]) == 0
    assert "warning: A: realised bound" in capsys.readouterr().err


def _numeric_deviation(own, others, c: float) -> float:
    """The horizontal deviation on a fine grid (1 µs), for checking the exact one."""
    import numpy as np

    t = np.arange(0, 0.2, 1e-6)

    def alpha(buckets, x):
        return np.min([b + r * x for r, b in buckets], axis=0)

    beta = np.maximum(c * t - sum(alpha(o, t) for o in others) - 2 * net.MTU, 0)
    a = alpha(own, t[:50_000])  # the worst is within the first 50 ms here
    return float(np.max(t[np.searchsorted(beta, a)] - t[:50_000]))


def test_several_buckets_bound_by_the_horizontal_deviation() -> None:
    # own: a fast burst then a slow rate; others: one at a higher level with two buckets
    own = ((0.999 * C, 5_000.0), (0.1 * C, 40_000.0))
    others = [((0.999 * C, 2_000.0), (0.3 * C, 30_000.0)), ((0.05 * C, 8_000.0),)]
    exact = net._deviation(own, others, C)
    assert exact == pytest.approx(_numeric_deviation(own, others, C), abs=2e-6)
    # with one bucket each it is the closed form
    one = net._deviation(((0.1 * C, 10_000.0),), [((0.2 * C, 20_000.0),)], C)
    assert one == pytest.approx((30_000 + 2 * net.MTU) / (0.8 * C))
    # the extra buckets of a plan tighten the bound: the primary alone gives more
    a = tenant("A", 0, 0.1, 40_000)
    k = dataclasses.replace(
        a, extra_limits={s: (StageLimit(0.5, 5_000 / C, float(C)),) for s in NETWORK_PATH}
    )
    b = tenant("B", 0, 0.3, 30_000)
    assert (
        net.htb_bounds(plan("shaping", k, b), Stage.NET_IN, C)["B"]
        < net.htb_bounds(plan("shaping", a, b), Stage.NET_IN, C)["B"]
    )
    # unstable: the rates exceed the link
    assert math.isinf(net._deviation(((0.6 * C, 1.0),), [((0.5 * C, 1.0),)], C))


def test_a_plan_without_buckets_and_a_stochastic_bound_is_warned_not_refused() -> None:
    snc = [
        dataclasses.replace(
            tenant(n, lvl, 0.1, 1000, slo=0.05), limits={}, bound=Bound(0.02, "snc", 0.99)
        )
        for n, lvl in (("A", 0), ("L", 1))
    ]
    checks = net.check_bounds(plan("shaping", *snc), C)
    assert all(c.unbounded_stochastic and not c.over_slo and c.over_plan for c in checks)
    assert "the plan's is stochastic (p99)" in checks[0].line()
    # the same without buckets but a worst-case plan bound is refused
    worst = [dataclasses.replace(t, bound=Bound(0.02, "dnc", 1.0)) for t in snc]
    assert all(c.over_slo for c in net.check_bounds(plan("shaping", *worst), C))


def test_a_policed_stochastic_plan_whose_worst_case_misses_the_slo_is_warned_not_refused() -> None:
    # SNC-Meister with conformance policing: buckets (so a finite worst case) but a stochastic
    # bound; a worst case above the SLO is what statistical multiplexing admits, not a refusal
    big = 1_000_000  # bytes: 80 ms of the link
    snc = [
        tenant(n, lvl, 0.3, big, slo=0.02, bound=Bound(0.015, "snc-meister", 0.999))
        for n, lvl in (("A", 0), ("L", 1))
    ]
    a = net.check_bounds(plan("demotion", *snc), C)[0]  # the more important one: bounded
    assert math.isfinite(a.realised_s) and a.realised_s > a.slo_s
    assert a.stochastic and not a.over_slo and not a.unbounded_stochastic
    assert "worst case above the SLO; the plan's bound is stochastic (p99.9)" in a.line()
    # the same buckets under a worst-case plan bound are refused
    worst = [dataclasses.replace(t, bound=Bound(0.015, "dnc", 1.0)) for t in snc]
    assert net.check_bounds(plan("demotion", *worst), C)[0].over_slo


def test_receive_side_config_for_the_ifb(tmp_path: Path, capsys) -> None:
    # the server receives net_in: client → server to each tenant's port, at its level, no bucket
    cfg = net.host_config(plan(), "s", "s0", HOSTS, receive=True)
    assert cfg.device == net.ifb_name("s0") == "tbis0" and cfg.nft_rules == ()
    by = {c.label.split()[0]: c for c in cfg.classes if c.label.startswith(("H", "L"))}
    assert {n: (c.ceil, c.cburst, c.prio) for n, c in by.items()} == {
        "H": (C, net.MTU, 0),
        "L": (C, net.MTU, 2),
    }
    f = next(f for f in cfg.filters if f.label.startswith("L"))
    assert "net_in" in f.label and (1, net.dscp_of(2) << 2, 0xFC) in f.match
    assert (22, 5201 >> 8, 0xFF) in f.match  # to L's port
    # the client receives net_out: from the port
    cli = net.host_config(plan(), "c", "c0", HOSTS, receive=True)
    assert all("net_out" in f.label for f in cli.filters)
    assert net.ifb_name("a-very-long-device") == "tbia-very-long-"
    from tailbound.cli.main import main

    p, h = tmp_path / "plan.json", tmp_path / "hosts.json"
    plan().save(p)
    h.write_text(json.dumps({"hosts": HOSTS.hosts, "ports": HOSTS.ports}))
    args = ["enforce", "net", "--plan", str(p), "--host", "s", "--hosts", str(h), "--device", "s0"]
    assert main([*args, "--ingress", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "qdisc ingress ffff: on s0: u32 any → mirred egress redirect tbis0" in out
    assert "# L net_in level 2" in out and "nft" not in out
    assert main([*args, "--ingress", "--switch", "--link-rate", "1gbit", "--dry-run"]) == 2


def test_ipv6_filters_match_the_ipv6_header() -> None:
    v6 = net.Addresses({"c": "fd00::1", "s": "fd00::2"}, {"H": 5001, "L": 5201})
    cfg = net.host_config(plan(), "c", "c0", v6)
    f = next(f for f in cfg.filters if f.label.startswith("H"))
    assert f.protocol == net.ETH_P_IPV6
    # version 6 and traffic class CS7 << 2 = 0xE0 across bytes 0 and 1; TCP; addresses at 8
    # and 24; the destination port at 42
    assert (0, 0x6E, 0xFF) in f.match and (1, 0x00, 0xC0) in f.match and (6, 6, 0xFF) in f.match
    assert (23, 1, 0xFF) in f.match and (39, 2, 0xFF) in f.match
    assert (42, 5001 >> 8, 0xFF) in f.match and (43, 5001 & 0xFF, 0xFF) in f.match
    assert f.keys()[0] == "0x6e000000/0xffc00000+0"
    assert any(
        "ip6 saddr fd00::1 ip6 daddr fd00::2 tcp dport 5001 ip6 dscp set cs7" in r
        for r in cfg.nft_rules
    )
    assert 'oifname "c0" ip6 dscp set cs0' in cfg.nft_rules
    # CS5 (level 2): 40 << 2 = 0xA0 → byte 0 low nibble 0xA, byte 1 top bits 00
    low = next(f for f in cfg.filters if f.label.startswith("L"))
    assert (0, 0x6A, 0xFF) in low.match
    # the switch takes both families
    sw = net.switch_config("wc", C)
    assert {f.protocol for f in sw.filters} == {net.ETH_P_IP, net.ETH_P_IPV6}
    with pytest.raises(ConfigError, match="IPv4 or IPv6"):
        net.Addresses.from_json({"hosts": {"c": "fd00::zz"}})
