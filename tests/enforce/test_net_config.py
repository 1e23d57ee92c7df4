"""The Plan → HTB/u32/nftables mapping, checked without touching a host (no root needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.enforce import net
from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, Plan, StageLimit, TenantPlan
from tailbound.stages import NETWORK_PATH, Stage

C = 12_500_000
HOSTS = net.Addresses({"c": "198.18.0.1", "s": "198.18.0.2"}, {"H": 5001, "L": 5201})


def tenant(name: str, level: int | None, rate: float, bucket: float, **kw) -> TenantPlan:
    return TenantPlan(
        name=name,
        slo=Slo(0.01, 0.99),
        server="s",
        device=None,
        client_host="c",
        priority=dict.fromkeys(NETWORK_PATH, level),
        limits={s: StageLimit(rate, bucket / C, float(C)) for s in NETWORK_PATH},
        bound=Bound(0.01, "test"),
        **kw,
    )


def plan(mode: str = "shaping", *tenants: TenantPlan) -> Plan:
    return Plan(
        policy="t",
        servers_used=1,
        tenants=list(tenants) or [tenant("H", 0, 0.02, 12_000), tenant("L", 2, 0.3, 100_000)],
        disciplines={s: Discipline("priority", mode) for s in NETWORK_PATH},
    )


def test_shaping_maps_the_bucket_to_ceil_and_cburst_and_the_level_to_prio() -> None:
    cfg = net.host_config(plan(), "c", "c0", HOSTS)
    by = {c.label.split()[0]: c for c in cfg.classes if c.label.startswith(("H", "L"))}
    assert (by["H"].ceil, by["H"].cburst, by["H"].prio) == (250_000, 12_000 - net.MTU, 0)
    assert (by["L"].ceil, by["L"].cburst, by["L"].prio) == (3_750_000, 100_000 - net.MTU, 2)
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
        "limit rate over 250000 bytes/second burst 12000 bytes ip dscp set cs0" in r
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
    assert (outer.ceil, leaf.ceil, leaf.parent) == (250_000, 1_250_000, outer.classid)


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
    assert "ceil 250000B/s" in out and "# H net_in level 0" in out
    h.write_text("{")
    assert main([*args, "--dry-run"]) == 2
    assert str(h) in capsys.readouterr().err


def test_bound_of_the_realised_discipline() -> None:
    b = net.htb_bounds(plan(), Stage.NET_IN, C)
    assert b["H"] == pytest.approx((12_000 + 2 * net.MTU) / C)
    assert b["L"] == pytest.approx((112_000 + 2 * net.MTU) / (C - 250_000))
    same = plan("shaping", tenant("A", 0, 0.1, 1e4), tenant("B", 0, 0.2, 2e4))
    # HTB's round robin within a level: the other tenant of the level interferes at its rate
    assert net.htb_bounds(same, Stage.NET_IN, C)["A"] == pytest.approx(
        (3e4 + 2 * net.MTU) / (C - 0.2 * C)
    )
