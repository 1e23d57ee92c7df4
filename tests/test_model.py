"""The domain model and its one loader for tenants and cluster files (and placement's events)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.errors import ConfigError
from tailbound.model import Slo, Tenant, load_cluster, load_tenants
from tailbound.policies.events import load_events


def test_load_wc62_inputs(wc62_dir: Path) -> None:
    tset = load_tenants(wc62_dir / "tenants.json")
    cluster = load_cluster(wc62_dir / "cluster.json")
    events = load_events(wc62_dir / "events.csv", len(tset.tenants))
    assert len(tset.tenants) == 62 and tset.tenants[0].trace.is_file()
    assert tset.tenants[0].slo == Slo(0.2, 0.999) and tset.tenants[0].client_host is None
    assert len(cluster.servers) == 12 and cluster.link_bytes_per_s == 125e6
    assert len(cluster.client_hosts) == 12 and len(cluster.client_hosts[0].vms) == 15
    assert sum(e.kind == "add" for e in events) == 186
    assert sum(e.kind == "del" for e in events) == 124


def test_every_optional_field_reaches_the_tenant(tmp_path: Path) -> None:
    p = tmp_path / "tenants.json"
    item = {
        "name": "A",
        "slo_s": 0.05,
        "percentile": 0.99,
        "trace": "t/a.txt",
        "client_host": "c0",
        "client_vm": "3",
        "server_host": "s1",
        "device": "ssd0",
        "group": "g",
        "class": "gold",
    }
    p.write_text(
        json.dumps({"tenants": [item], "link_bandwidth_bytes_per_s": 1e9, "ssd_profile": "p.json"})
    )
    tset = load_tenants(p)
    assert tset.tenants == (
        Tenant("A", Slo(0.05, 0.99), tmp_path / "t/a.txt", "c0", "3", "s1", "ssd0", "g", "gold"),
    )
    assert (tset.link_bytes_per_s, tset.ssd_profile) == (1e9, tmp_path / "p.json")


def test_slo_values_are_checked() -> None:
    with pytest.raises(ValueError):
        Slo(float("inf"))
    with pytest.raises(ValueError):
        Slo(0.1, 1.5)
    assert Slo(0.1, 1.0).worst_case and Slo(0.1).met_by(0.1) and not Slo(0.1).met_by(0.2)


@pytest.mark.parametrize(
    ("tenant", "field"),
    [
        ({"name": "A", "trace": "a"}, "tenants[0].slo_s"),
        ({"name": "A", "slo_s": "fast", "trace": "a"}, "tenants[0].slo_s"),
        ({"name": "A", "slo_s": None, "trace": "a"}, "tenants[0].slo_s"),
        ({"name": "A", "slo_s": 1e400, "trace": "a"}, "tenants[0].slo_s"),
        ({"name": "A", "slo_s": 0.1, "trace": "a", "percentile": 1.5}, "tenants[0].percentile"),
        ({"name": "A", "slo_s": 0.1, "trace": "a", "percentil": 0.9}, "tenants[0].percentil"),
        ({"name": "", "slo_s": 0.1, "trace": "a"}, "tenants[0].name"),
        ({"name": "A", "slo_s": 0.1}, "tenants[0].trace"),
        ({"name": "A", "slo_s": 0.1, "trace": "a", "client_host": 5}, "tenants[0].client_host"),
        ("A", "tenants[0]"),
    ],
)
def test_load_tenants_errors_name_entry_and_field(
    tmp_path: Path, tenant: object, field: str
) -> None:
    p = tmp_path / "tenants.json"
    p.write_text(json.dumps({"tenants": [tenant]}).replace("Infinity", "1e400"))
    with pytest.raises(ConfigError) as info:
        load_tenants(p)
    assert info.value.field == field and str(p) in str(info.value)


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"tenants": []}, "tenants"),
        ({"tenant": []}, "tenant"),
        (
            {"tenants": [{"name": "A", "slo_s": 1, "trace": "a"}], "link_bandwidth_bytes_per_s": 0},
            "link_bandwidth_bytes_per_s",
        ),
    ],
)
def test_load_tenants_file_errors(tmp_path: Path, doc: dict, field: str) -> None:
    p = tmp_path / "tenants.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as info:
        load_tenants(p)
    assert info.value.field == field


def test_missing_or_broken_files_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the tenants file"):
        load_tenants(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="not JSON"):
        load_cluster(tmp_path / "bad.json")


def test_require_names_the_missing_field(tmp_path: Path) -> None:
    p = tmp_path / "tenants.json"
    p.write_text(json.dumps({"tenants": [{"name": "A", "slo_s": 0.1, "trace": "a"}]}))
    with pytest.raises(ConfigError) as info:
        load_tenants(p).require("server_host", "the SNC analysis")
    assert info.value.field == "tenants[0].server_host" and "SNC" in info.value.message


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
        (
            {
                "link_bandwidth_bytes_per_s": 1e8,
                "server_hosts": [{"name": "s", "devices": ["d"]}, {"name": "s", "devices": ["d"]}],
            },
            "server_hosts[1].name",
        ),
        (
            {
                "link_bandwidth_bytes_per_s": 1e8,
                "server_hosts": [{"name": "s", "devices": ["d"]}],
                "client_hosts": 5,
            },
            "client_hosts",
        ),
        (
            {
                "link_bandwidth_bytes_per_s": 1e8,
                "server_hosts": [{"name": "s", "devices": ["d"], "disks": 1}],
            },
            "server_hosts[0].disks",
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
    with pytest.raises(ConfigError, match="duplicate") as info:
        load_tenants(p)
    assert info.value.field == "tenants[1].name"


def test_throughput_slo_from_the_tenants_file(tmp_path: Path) -> None:
    base = {"name": "A", "slo_s": 0.3, "percentile": 0.999, "trace": "a.txt"}
    path = tmp_path / "tenants.json"
    for extra, expected in (
        ({"throughput_iops": 150}, (150.0, "iops")),
        ({"throughput_bytes_per_s": 2e6}, (2e6, "bytes_per_s")),
        ({}, None),
    ):
        path.write_text(json.dumps({"tenants": [{**base, **extra}]}))
        slo = load_tenants(path).tenants[0].slo
        assert slo.throughput == expected
        assert (slo.latency_s, slo.percentile) == (0.3, 0.999)
    for extra, field in (
        ({"throughput_iops": 1, "throughput_bytes_per_s": 1}, "tenants[0].throughput_bytes_per_s"),
        ({"throughput_iops": 0}, "tenants[0].throughput_iops"),
        ({"throughput_bytes_per_s": -1}, "tenants[0].throughput_bytes_per_s"),
        ({"throughput_iops": "150"}, "tenants[0].throughput_iops"),
    ):
        path.write_text(json.dumps({"tenants": [{**base, **extra}]}))
        with pytest.raises(ConfigError) as e:
            load_tenants(path)
        assert e.value.field == field
    with pytest.raises(ValueError, match="not both"):
        Slo(0.1, 0.9, throughput_iops=1.0, throughput_bytes_per_s=1.0)
    with pytest.raises(ValueError, match="positive"):
        Slo(0.1, 0.9, throughput_iops=float("inf"))
    graded = Slo.graduated([(0.01, 0.9), (0.1, 0.99)]).with_throughput((5.0, "iops"))
    assert graded.grades and graded.throughput_iops == 5.0
    assert repr(Slo(0.3, 0.999, throughput_iops=150.0)).endswith("throughput_iops=150.0)")
