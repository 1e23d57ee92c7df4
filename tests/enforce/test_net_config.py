"""The Plan → HTB/u32/nftables mapping, checked without touching a host (no root needed)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tailbound.enforce import net
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, StageLimit
from tailbound.stages import NETWORK_PATH

from .net_plans import C, W, plan, tenant, two_clients

HOSTS = net.Addresses({"c": "198.18.0.1", "s": "198.18.0.2"}, {"H": 5001, "L": 5201})


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


@pytest.mark.parametrize("mode", ["shaping", "demotion"])
def test_the_meter_counts_each_tenant_against_its_primary_bucket_before_the_marks(
    mode: str,
) -> None:
    from tailbound.enforce import net_meter

    cfg = net.host_config(plan(mode), "c", "c0", HOSTS)
    meters = [r for r in cfg.nft_rules if "tailbound sent" in r or "tailbound meter" in r]
    assert list(cfg.nft_rules[: len(meters)]) == meters  # first, before any verdict
    assert all("accept" not in r and "dscp set" not in r for r in meters)
    rate, bucket = int(W * 3_750_000), W * 100_000  # L's wire bucket
    assert meters[-2:] == net_meter.meter_rules(
        'oifname "c0" ip saddr 198.18.0.1 ip daddr 198.18.0.2 tcp dport 5201',
        "L",
        "net_in",
        rate,
        bucket,
    )
    # nftables adds a second of the rate to the burst: L's bucket is under a second of it
    assert net_meter.meter_burst(rate, bucket) == 0 and "burst" not in meters[-1]
    # the receive side has no rules at all, the meter's neither
    assert net.host_config(plan(mode), "s", "s0", HOSTS, receive=True).nft_rules == ()
