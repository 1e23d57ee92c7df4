"""Weighted classes (Aequitas' WFQ classes) → HTB/u32, checked without touching a host; the
live measurements are in ``test_aequitas_live.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.enforce import net
from tailbound.enforce.weighted import (
    FIRST_MINOR,
    WeightedClass,
    check_classes,
    load_classes,
    weighted_config,
)
from tailbound.errors import ConfigError

LINK = 12_500_000  # 100 Mbit/s
THREE = [WeightedClass("h", 8, 46), WeightedClass("m", 4, 26), WeightedClass("l", 1, 0)]


def test_rates_follow_the_weights_ceil_is_the_link_and_quanta_share_the_excess() -> None:
    cfg = weighted_config("c0", THREE, LINK)
    link = next(c for c in cfg.classes if c.classid == net.LINK_CLASS)
    assert link.rate == link.ceil == LINK
    leaves = sorted(c for c in cfg.classes if c.classid != net.LINK_CLASS)
    assert [c.classid for c in leaves] == [net.ROOT | (FIRST_MINOR + k) for k in range(3)]
    # 8:4:1 of 12.5 MB/s, floored: 7692307, 3846153, 961538 bytes/s
    assert [c.rate for c in leaves] == [7_692_307, 3_846_153, 961_538]
    assert sum(c.rate for c in leaves) <= LINK
    assert all(c.ceil == LINK and c.prio == 0 and c.parent == net.LINK_CLASS for c in leaves)
    assert [c.quantum for c in leaves] == [8 * 1514, 4 * 1514, 1514]
    # one pfifo each; unclassified packets go to the last class
    assert sorted(leaf.parent for leaf in cfg.leaves) == [c.classid for c in leaves]
    assert cfg.default_class == leaves[-1].classid
    assert cfg.nft_rules == ()


def test_filters_match_the_dscp_alone_for_ipv4_and_ipv6() -> None:
    cfg = weighted_config("c0", THREE, LINK)
    v4 = {f.classid: f for f in cfg.filters if f.protocol == net.ETH_P_IP}
    v6 = {f.classid: f for f in cfg.filters if f.protocol == net.ETH_P_IPV6}
    h = net.ROOT | FIRST_MINOR
    # IPv4 without options, TOS byte 0xb8 (EF, 46 << 2) under the mask of the DSCP bits
    assert v4[h].match == ((0, 0x45, 0xFF), (1, 0xB8, 0xFC))
    assert v4[h].keys() == ["0x45b80000/0xfffc0000+0"]
    # IPv6: version 6 and the traffic class 0xb8 across bytes 0 and 1
    assert v6[h].match == ((0, 0x6B, 0xFF), (1, 0x80, 0xC0))
    assert v4[net.ROOT | (FIRST_MINOR + 2)].match == ((0, 0x45, 0xFF), (1, 0, 0xFC))
    assert len({f.pref for f in cfg.filters}) == len(cfg.filters) == 6


def test_default_class_and_tuples() -> None:
    cfg = weighted_config("c0", [("a", 1, 10), ("b", 3, 12)], LINK, default="b")
    assert cfg.default_class == net.ROOT | (FIRST_MINOR + 1)
    assert [c.rate for c in sorted(cfg.classes)[1:]] == [3_125_000, 9_375_000]
    with pytest.raises(ConfigError, match="field default"):
        weighted_config("c0", THREE, LINK, default="x")
    with pytest.raises(ConfigError, match="field link_rate"):
        weighted_config("c0", THREE, 1000)


@pytest.mark.parametrize(
    ("classes", "field"),
    [
        ([], "classes"),
        ([("h", 0, 46)], "classes[0].weight"),
        ([("h", -1, 46)], "classes[0].weight"),
        ([("h", float("nan"), 46)], "classes[0].weight"),
        ([("h", True, 46)], "classes[0].weight"),
        ([("h", 1, 64)], "classes[0].dscp"),
        ([("h", 1, 4.0)], "classes[0].dscp"),
        ([("h", 1, 46), ("l", 1, 46)], "classes[1].dscp"),
        ([("h", 1, 46), ("h", 1, 0)], "classes[1].name"),
        ([("", 1, 46)], "classes[0].name"),
    ],
)
def test_bad_classes_are_refused_naming_the_field(classes: list, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        check_classes(classes)
    assert e.value.field == field


def test_classes_file_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tailbound.cli.main import main

    f = tmp_path / "classes.json"
    f.write_text(
        json.dumps(
            {
                "classes": [
                    {"name": "h", "weight": 4, "dscp": 46},
                    {"name": "l", "weight": 1, "dscp": 0},
                ]
            }
        )
    )
    assert load_classes(f) == [WeightedClass("h", 4.0, 46), WeightedClass("l", 1.0, 0)]
    args = ["enforce", "net", "--classes", str(f), "--device", "c0"]
    assert main([*args, "--link-rate", "50mbit", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "class htb 7462:20 parent 7462:1 rate 5000000B/s ceil 6250000B/s" in out
    assert "root default 7462:21" in out
    assert main([*args, "--dry-run"]) == 2  # no --link-rate
    assert "--link-rate" in capsys.readouterr().err
    assert main([*args, "--link-rate", "50mbit", "--switch", "--dry-run"]) == 2
    capsys.readouterr()
    for doc, field in (
        ({"classes": [{"name": "h", "weight": 0, "dscp": 46}]}, "classes[0].weight"),
        ({"classes": [{"name": "h", "weight": 1}]}, "classes[0]"),
        ({"classes": [], "x": 1}, "x"),
        ({"klasses": []}, "classes"),
    ):
        f.write_text(json.dumps(doc))
        assert main([*args, "--link-rate", "50mbit", "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert str(f) in err and f"field {field}" in err, err
    f.write_text("{")
    assert main([*args, "--link-rate", "50mbit", "--dry-run"]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_an_aequitas_plan_is_enforced_as_its_weighted_classes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``enforce net --plan`` on an Aequitas plan installs the plan's WFQ classes by DSCP
    (``plan_aequitas.enforcer_view``), at the plan's link rate unless ``--link-rate`` says."""
    from tailbound.cli.main import main

    examples = Path(__file__).parents[2] / "examples"
    plan = tmp_path / "plan.json"
    admit = ["admit", "--tenants", str(examples / "aequitas-small.json"), "--policy", "aequitas"]
    assert main([*admit, "--out", str(plan)]) == 0
    capsys.readouterr()
    args = ["enforce", "net", "--plan", str(plan), "--device", "c0", "--dry-run"]
    assert main(args) == 0
    out = capsys.readouterr().out
    # 100 Gb/s = 12.5e9 B/s, weights 4:1 → 10e9 and 2.5e9 B/s guaranteed, DSCP 46 and 0
    assert "rate 10000000000B/s ceil 12500000000B/s" in out and "QoS_h: weight 4, DSCP 46" in out
    assert "rate 2500000000B/s ceil 12500000000B/s" in out and "QoS_l: weight 1, DSCP 0" in out
    assert main([*args, "--link-rate", "50mbit"]) == 0
    assert "rate 5000000B/s ceil 6250000B/s" in capsys.readouterr().out
