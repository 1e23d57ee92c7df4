"""How an Aequitas tenant and its network are stated in the tenants file (``rpc_network`` and a
tenant's ``rpc``): what is read, the defaults, and every bad field refused by name, from the
loader and as exit status 2 from the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from tests.policies.aequitas_case import NETWORK, TENANT, write_case

from tailbound.cli.main import main
from tailbound.errors import ConfigError
from tailbound.model import Slo, load_tenants
from tailbound.rpc_network import DEFAULT_DSCP, ControllerParams


def test_an_rpc_tenant_and_its_network_are_read(tmp_path: Path) -> None:
    tset = load_tenants(write_case(tmp_path))
    net = tset.rpc_network
    assert net is not None
    assert (net.hosts, net.link_rate_bps, net.buffer_bytes, net.seed) == (3, 100e9, 1 << 20, 1)
    h, low = net.classes
    assert (h.name, h.weight, h.slo_s, h.slo_unit, h.percentile, h.dscp) == (
        "QoS_h",
        4.0,
        25e-6,
        "rpc",
        0.999,
        46,
    )
    assert (low.name, low.weight, low.slo_s, low.dscp) == ("QoS_l", 1.0, None, 0)
    assert net.controller == ControllerParams(rules="artifact", increment_window_s=(0.002,))
    assert (net.mtu_bytes, net.header_bytes, net.propagation_s) == (5120, 40, 0.2e-6)
    t = tset.tenants[0]
    assert t.rpc is not None and dict(t.rpc.class_mix) == {"QoS_h": 0.7, "QoS_l": 0.3}
    assert (t.rpc.pattern, t.rpc.destination, t.rpc.load) == ("incast", 2, None)
    assert t.rpc.mix(net) == (0.7, 0.3)
    # an RPC tenant's SLO is its highest class's
    assert t.slo == Slo(25e-6, 0.999)
    assert t.trace == tmp_path / "rpc.parquet"


def test_defaults_dscp_by_rank_and_units_per_mtu(tmp_path: Path) -> None:
    net = copy.deepcopy(NETWORK)
    net["classes"] = [
        {"name": "h", "weight": 8, "slo_s": 2e-6},
        {"name": "m", "weight": 4, "slo_s": 4e-6, "percentile": 0.99},
        {"name": "l", "weight": 1},
    ]
    net.pop("controller")
    tenant = copy.deepcopy(TENANT)
    tenant["rpc"] = {"class_mix": {"m": 1.0}}
    tset = load_tenants(write_case(tmp_path, net, [tenant]))
    assert tset.rpc_network is not None
    assert [c.dscp for c in tset.rpc_network.classes] == [*DEFAULT_DSCP[:2], 0]
    assert tset.rpc_network.slo_unit == "mtu"
    assert tset.rpc_network.controller == ControllerParams()  # the paper's α, β, floor, rules
    t = tset.tenants[0]
    assert t.rpc is not None and t.rpc.pattern == "all_to_all" and t.rpc.destination is None
    assert t.slo == Slo(4e-6, 0.99)  # it asks for m only


def _network(**changes: Any) -> dict[str, Any]:
    net = copy.deepcopy(NETWORK)
    for path, value in changes.items():
        *head, last = path.split("__")
        node: Any = net
        for key in head:
            node = node[int(key)] if key.isdigit() else node[key]
        if value is _DROP:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value
    return net


_DROP = object()

BAD_NETWORK = [
    # (changes to the network, the field named)
    ({"classes__0__weight": 0}, "rpc_network.classes[0].weight"),
    ({"classes__1__weight": -1.5}, "rpc_network.classes[1].weight"),
    ({"classes__1__weight": _DROP}, "rpc_network.classes[1].weight"),
    ({"classes__0__weight": _DROP}, "rpc_network.classes[0].weight"),
    ({"classes__0__slo_s": 0}, "rpc_network.classes[0].slo_s"),
    ({"classes__0__slo_s": -2e-5}, "rpc_network.classes[0].slo_s"),
    ({"classes__0__slo_s": _DROP}, "rpc_network.classes[0].slo_s"),
    ({"classes__0__percentile": 1.0}, "rpc_network.classes[0].percentile"),
    ({"classes__0__slo_unit": "packet"}, "rpc_network.classes[0].slo_unit"),
    ({"classes__0__dscp": 64}, "rpc_network.classes[0].dscp"),
    ({"classes__1__dscp": 46}, "rpc_network.classes[1].dscp"),
    ({"classes__1__name": "QoS_h"}, "rpc_network.classes[1].name"),
    ({"classes__1__slo_s": 1e-3}, "rpc_network.classes[1].slo_s"),
    ({"classes__1__slo_unit": "rpc"}, "rpc_network.classes[1].slo_unit"),
    ({"classes__0__wieght": 4}, "rpc_network.classes[0].wieght"),
    ({"hosts": 1}, "rpc_network.hosts"),
    ({"link_rate_bps": 0}, "rpc_network.link_rate_bps"),
    ({"burst_load": 0.5}, "rpc_network.burst_load"),
    ({"controller__alpha": 0}, "rpc_network.controller.alpha"),
    ({"controller__beta": -0.1}, "rpc_network.controller.beta"),
    ({"controller__floor": 1.5}, "rpc_network.controller.floor"),
    ({"controller__rules": "mine"}, "rpc_network.controller.rules"),
    ({"controller__increment_window_s": [0.1, 0.2]}, "rpc_network.controller.increment_window_s"),
]


@pytest.mark.parametrize(("changes", "field"), BAD_NETWORK, ids=[f for _, f in BAD_NETWORK])
def test_a_bad_network_field_is_refused_by_name(
    tmp_path: Path, changes: dict[str, Any], field: str
) -> None:
    path = write_case(tmp_path, _network(**changes))
    with pytest.raises(ConfigError) as e:
        load_tenants(path)
    assert e.value.field == field
    assert Path(str(e.value.path)) == path


def test_units_differing_between_classes_are_refused(tmp_path: Path) -> None:
    net = _network()
    net["classes"].insert(1, {"name": "QoS_m", "weight": 2, "slo_s": 4e-6, "slo_unit": "mtu"})
    with pytest.raises(ConfigError, match="one unit") as e:
        load_tenants(write_case(tmp_path, net))
    assert e.value.field == "rpc_network.classes[1].slo_unit"


def test_one_class_is_refused(tmp_path: Path) -> None:
    net = _network()
    net["classes"] = net["classes"][:1]
    with pytest.raises(ConfigError) as e:
        load_tenants(write_case(tmp_path, net))
    assert e.value.field == "rpc_network.classes"


BAD_TENANT = [
    ({"class_mix": {"QoS_h": 1.5, "QoS_l": -0.5}}, "tenants[0].rpc.class_mix.QoS_h"),
    ({"class_mix": {"QoS_h": 0.0, "QoS_l": 1.0}}, "tenants[0].rpc.class_mix.QoS_h"),
    ({"class_mix": {"QoS_h": 0.7, "QoS_l": -0.3}}, "tenants[0].rpc.class_mix.QoS_l"),
    ({"class_mix": {"QoS_h": 0.5, "QoS_l": 0.3}}, "tenants[0].rpc.class_mix"),
    ({"class_mix": {"gold": 1.0}}, "tenants[0].rpc.class_mix.gold"),
    ({"class_mix": {}}, "tenants[0].rpc.class_mix"),
    (
        {"class_mix": {"QoS_h": 1.0}, "pattern": "incast", "destination": 3},
        "tenants[0].rpc.destination",
    ),
    ({"class_mix": {"QoS_h": 1.0}, "pattern": "ring"}, "tenants[0].rpc.pattern"),
    ({"class_mix": {"QoS_h": 1.0}, "load": 1.2}, "tenants[0].rpc.load"),
    ({"class_mix": {"QoS_h": 1.0}, "destination": 1}, "tenants[0].rpc.destination"),
]


@pytest.mark.parametrize(("rpc", "field"), BAD_TENANT, ids=[f for _, f in BAD_TENANT])
def test_a_bad_tenant_field_is_refused_by_name(
    tmp_path: Path, rpc: dict[str, Any], field: str
) -> None:
    tenant = {**TENANT, "rpc": rpc}
    with pytest.raises(ConfigError) as e:
        load_tenants(write_case(tmp_path, tenants=[tenant]))
    assert e.value.field == field


def test_an_rpc_tenant_states_no_slo_of_its_own(tmp_path: Path) -> None:
    tenant = {**TENANT, "slo_s": 0.01}
    with pytest.raises(ConfigError, match="classes'") as e:
        load_tenants(write_case(tmp_path, tenants=[tenant]))
    assert e.value.field == "tenants[0].slo_s"


def test_an_rpc_tenant_needs_the_network(tmp_path: Path) -> None:
    path = write_case(tmp_path)
    doc = json.loads(path.read_text())
    del doc["rpc_network"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as e:
        load_tenants(path)
    assert e.value.field == "tenants[0].rpc"


CLI_CASES = [
    ({"classes__0__weight": 0}, None, "rpc_network.classes[0].weight"),
    ({"classes__1__weight": _DROP}, None, "rpc_network.classes[1].weight"),
    ({"classes__0__slo_s": -1e-6}, None, "rpc_network.classes[0].slo_s"),
    ({}, {"class_mix": {"QoS_h": 1.2}}, "tenants[0].rpc.class_mix.QoS_h"),
]


@pytest.mark.parametrize(("changes", "rpc", "field"), CLI_CASES, ids=[f for *_, f in CLI_CASES])
def test_the_cli_refuses_bad_input_with_exit_status_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    rpc: dict[str, Any] | None,
    field: str,
) -> None:
    tenants = None if rpc is None else [{**TENANT, "rpc": rpc}]
    path = write_case(tmp_path, _network(**changes), tenants)
    out = tmp_path / "plan.json"
    args = ["admit", "--tenants", str(path), "--policy", "aequitas", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert str(path) in err and field in err
    assert not out.exists()


def test_other_policies_refuse_rpc_tenants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_case(tmp_path)
    for argv in (
        ["admit", "--policy", "dnc"],
        ["admit", "--policy", "pslo"],
        ["bound", "--analysis", "dnc"],
    ):
        assert main([*argv, "--tenants", str(path)]) == 2
        assert "tenants[0].rpc" in capsys.readouterr().err
