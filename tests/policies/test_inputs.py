from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.errors import ConfigError
from tailbound.policies.inputs import load_cluster, load_events, load_tenants


def test_load_wc62_inputs(wc62_dir: Path) -> None:
    tenants = load_tenants(wc62_dir / "tenants.json")
    cluster = load_cluster(wc62_dir / "cluster.json")
    events = load_events(wc62_dir / "events.csv", len(tenants))
    assert len(tenants) == 62 and tenants[0].trace.is_file()
    assert len(cluster.servers) == 12 and cluster.link_bandwidth_bytes_per_s == 125e6
    assert len(cluster.client_hosts) == 12 and len(cluster.client_hosts[0].vms) == 15
    assert sum(e.kind == "add" for e in events) == 186
    assert sum(e.kind == "del" for e in events) == 124


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({}, "link_bandwidth_bytes_per_s"),
        ({"link_bandwidth_bytes_per_s": 1e8}, "server_hosts"),
        (
            {"link_bandwidth_bytes_per_s": 1e8, "server_hosts": [{"name": "s"}]},
            "server_hosts[0].devices",
        ),
        (
            {"link_bandwidth_bytes_per_s": 1e8, "server_hosts": [{"devices": ["d"]}]},
            "server_hosts[0].name",
        ),
    ],
)
def test_load_cluster_errors_name_the_field(tmp_path: Path, doc: dict, field: str) -> None:
    p = tmp_path / "cluster.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as info:
        load_cluster(p)
    assert info.value.field == field and str(p) in str(info.value)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("0,addClient\n5,addClient\n", "line 2"),
        ("0,addClient\n0,addClient\n", "line 2"),
        ("0,delClient\n", "line 1"),
        ("x,addClient\n", "line 1"),
        ("0,moveClient\n", "line 1"),
    ],
)
def test_load_events_errors_name_the_line(tmp_path: Path, text: str, field: str) -> None:
    p = tmp_path / "events.csv"
    p.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_events(p, 3)
    assert info.value.field == field


def test_load_tenants_duplicate_names(tmp_path: Path) -> None:
    p = tmp_path / "tenants.json"
    item = {"name": "A", "slo_s": 0.1, "trace": "a.txt"}
    p.write_text(json.dumps({"tenants": [item, item]}))
    with pytest.raises(ConfigError, match="duplicate"):
        load_tenants(p)
