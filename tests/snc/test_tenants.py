"""Tenants files, trace reading, work per direction, priorities and network building."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tailbound.errors import ConfigError, TraceFormatError
from tailbound.model import TenantSet
from tailbound.model import load_tenants as load_file
from tailbound.snc.tenants import (
    FitCache,
    Requests,
    build_network,
    check_tenants,
    priorities_by_slo,
    read_requests,
    work,
)


def load_tenants(path: Path) -> TenantSet:
    """A tenants file as the SNC analyses read it: the one loader, then their own checks."""
    return check_tenants(load_file(path))


def test_read_requests_gives_reference_inputs(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("100,0x00001000,DiskRead\n2000000000,0x1F,DiskWrite\n2000000005,0xabc,DiskRead\n")
    r = read_requests(p)
    assert r.arrival_ns.tolist() == [100, 2_000_000_000, 2_000_000_005]
    assert r.size.tolist() == [4096, 31, 0xABC]
    assert r.is_read.tolist() == [True, False, True]


def test_read_requests_names_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_text("1,0x10,DiskRead\n2,0x1g,DiskRead\n")
    with pytest.raises(TraceFormatError) as e:
        read_requests(p)
    assert (e.value.line, e.value.field) == (2, "size")


def test_work_per_direction_uses_message_sizes() -> None:
    req = Requests(np.array([0, 1]), np.array([True, False]), np.array([1000, 1000]))
    assert work(req, "in", TenantSet(())).tolist() == [225.0, 1300.0]
    assert work(req, "out", TenantSet(())).tolist() == [1300.0, 225.0]


def test_priorities_by_slo_are_dense_ranks() -> None:
    assert priorities_by_slo([0.1, 0.01, 0.1, 0.05, 0.5]) == [2, 0, 2, 1, 3]


def test_priorities_by_slo_respect_the_level_limit() -> None:
    slos = [0.01 * (i + 1) for i in range(10)]
    assert priorities_by_slo(slos) == [0, 1, 2, 3, 4, 5, 6, 7, 7, 7]


@pytest.mark.parametrize(
    ("tenant", "field"),
    [
        ({"name": "a", "trace": "t", "client_host": "c", "server_host": "s"}, "tenants[0].slo_s"),
        ({"name": "a", "slo_s": 0.1, "trace": "t", "server_host": "s"}, "tenants[0].client_host"),
        (
            {
                "name": "a",
                "slo_s": 0.1,
                "trace": "t",
                "client_host": "c",
                "server_host": "s",
                "percentile": 1.0,
            },
            "tenants[0].percentile",
        ),
        (
            {"name": "a", "slo_s": -1, "trace": "t", "client_host": "c", "server_host": "s"},
            "tenants[0].slo_s",
        ),
    ],
)
def test_bad_tenants_file_names_the_field(tmp_path: Path, tenant: dict, field: str) -> None:
    p = tmp_path / "tenants.json"
    p.write_text(json.dumps({"tenants": [tenant]}))
    with pytest.raises(ConfigError) as e:
        load_tenants(p)
    assert e.value.field == field


def test_device_without_profile_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "tenants.json"
    t = {
        "name": "a",
        "slo_s": 0.1,
        "trace": "t",
        "client_host": "c",
        "server_host": "s",
        "device": "d0",
    }
    p.write_text(json.dumps({"tenants": [t]}))
    with pytest.raises(ConfigError, match="ssd_profile"):
        load_tenants(p)


def test_wc62_tenants_file_lacks_hosts(data_dir: Path) -> None:
    with pytest.raises(ConfigError) as e:
        load_tenants(data_dir / "wc62" / "tenants.json")
    assert e.value.field == "tenants[0].client_host"


def test_build_network_paths_priorities_and_groups(write_tenants) -> None:  # type: ignore[no-untyped-def]
    path = write_tenants(
        [
            {
                "name": "a",
                "slo_s": 0.05,
                "trace_index": 3,
                "client_host": "c0",
                "server_host": "s0",
                "group": "g",
            },
            {
                "name": "b",
                "slo_s": 0.02,
                "trace_index": 4,
                "client_host": "c1",
                "server_host": "s0",
                "group": "g",
                "percentile": 0.99,
            },
            {
                "name": "c",
                "slo_s": 0.05,
                "trace_index": 5,
                "client_host": "c1",
                "server_host": "s1",
            },
        ]
    )
    tset = load_tenants(path)
    net, flows, prios = build_network(tset, tset.tenants, FitCache())
    assert prios == [1, 0, 1]
    a_in = net.flows[flows[0].flows["in"]]
    b_out = net.flows[flows[1].flows["out"]]
    assert a_in.path == ("c0/egress", "s0/ingress")
    assert b_out.path == ("s0/egress", "c1/ingress")
    assert b_out.eps == pytest.approx(0.01 / 2)
    # a and b are one dependency group, c is independent of both
    assert a_in.arrival.deps & b_out.arrival.deps
    c_in = net.flows[flows[2].flows["in"]]
    assert not (c_in.arrival.deps & a_in.arrival.deps)
    assert net.queues["c0/egress"] == 125_000_000.0


def test_storage_flow_with_device(write_tenants, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    path = write_tenants(
        [
            {
                "name": "a",
                "slo_s": 0.5,
                "trace_index": 3,
                "client_host": "c0",
                "server_host": "s0",
                "device": "ssd0",
            },
            {
                "name": "b",
                "slo_s": 0.5,
                "trace_index": 4,
                "client_host": "c0",
                "server_host": "s1",
                "device": "ssd0",
            },
        ],
        ssd_profile=str(data_dir / "wc62" / "profile_ssd.json"),
    )
    tset = load_tenants(path)
    net, flows, _ = build_network(tset, tset.tenants, FitCache())
    storage = net.flows[flows[0].flows["storage"]]
    assert storage.path == ("s0/ssd0/device",)
    assert net.queues["s0/ssd0/device"] == 1.0
    assert storage.eps == pytest.approx(0.001 / 3)
    # The device of the same name on another server is another queue.
    assert net.flows[flows[1].flows["storage"]].path == ("s1/ssd0/device",)
