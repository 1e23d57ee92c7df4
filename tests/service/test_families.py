"""The admission families beyond SNC and DNC through the service (issue 27): Nested QoS
(``nested-qos``, family ``nested``) decides as ``tailbound admit --policy nested-qos`` does on the
same tenants, PSLO (``pslo``, family ``control``) admits every tenant its controller can
control, with the cluster's controller options, Aequitas (``aequitas``, family ``rpc``) plans
RPC tenants over the cluster's ``rpc_network``; bad input names the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.service.harness import Demo, Server, make_token, register

from tailbound.plan import Plan
from tailbound.service.client import ServiceError


def cli_nested(d: Demo, names: list[str], folder: Path) -> dict[str, object]:
    """``tailbound admit --policy nested-qos`` over ``names``' entries; its Plan document."""
    entries = [t for t in d.tenants if t["name"] in names]
    doc = {
        "link_bandwidth_bytes_per_s": d.cluster["link_bandwidth_bytes_per_s"],
        "ssd_profile": str(d.folder / "profile_ssd.json"),
        "tenants": [{**t, "trace": str(d.folder / t["trace"])} for t in entries],
    }
    (folder / "tenants.json").write_text(json.dumps(doc))
    out = folder / "plan.json"
    done = subprocess.run(
        [sys.executable, "-m", "tailbound.cli.main", "admit", "--policy", "nested-qos",
         "--tenants", str(folder / "tenants.json"), "--out", str(out), "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(out.read_text()))


def test_nested_qos_and_pslo_clusters(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    names = [t["name"] for t in small_demo.tenants[:5]]
    cli = cli_nested(small_demo, names, tmp_path)
    with server.client(operator) as c:
        register(c, small_demo, "nested", "nested-qos", names=names)
        for n in names:
            c.admit("nested", n)
        _, plan = c.plan("nested")
        decisions = c.json("GET", "/clusters/nested/decisions")
        # the same admitted tenants, classes and bounds as the CLI's
        assert [t["name"] for t in plan["tenants"]] == [t["name"] for t in cli["tenants"]]
        strip = ("trace",)
        assert [{k: v for k, v in t.items() if k not in strip} for t in plan["tenants"]] == [
            {k: v for k, v in t.items() if k not in strip} for t in cli["tenants"]
        ]
        assert plan["disciplines"]["storage"]["kind"] == "nested"
        assert {d["tenant"] for d in decisions if not d["admitted"]} == {
            r["name"] for r in cli["rejected"]
        }
        Plan.from_json(plan)
        gone = plan["tenants"][0]["name"]
        assert c.depart("nested", gone)["published"] is not None
        assert gone not in {t["name"] for t in c.plan("nested")[1]["tenants"]}

        # PSLO: the controller's options checked, each tenant's throughput SLO required
        with pytest.raises(ServiceError) as bad:
            c.create_cluster(
                "p", "pslo", small_demo.cluster, small_demo.profile, {"pslo": {"sigma": "x"}}
            )
        assert (bad.value.status, bad.value.field) == (422, "body.options.pslo.sigma")
        c.create_cluster(
            "p", "pslo", small_demo.cluster, small_demo.profile, {"pslo": {"policy": "LS+T"}}
        )
        entry = small_demo.tenants[0]
        stored = c.upload_trace(small_demo.trace(entry["name"]))["sha256"]
        with pytest.raises(ServiceError) as missing:
            c.register_tenant("p", {**entry, "trace": stored})
        assert (missing.value.status, missing.value.field) == (422, "body.throughput_iops")
        for i, e in enumerate(small_demo.tenants[:3]):
            sha = c.upload_trace(small_demo.trace(e["name"]))["sha256"]
            c.register_tenant("p", {**e, "trace": sha, "throughput_iops": 10.0 + i})
            assert c.admit("p", e["name"])["admitted"]
        _, pslo = c.plan("p")
    assert [t["name"] for t in pslo["tenants"]] == [e["name"] for e in small_demo.tenants[:3]]
    assert pslo["control"]["storage"]["policy"] == "LS+T"
    assert [t["throughput_iops"] for t in pslo["tenants"]] == [10.0, 11.0, 12.0]


def test_aequitas_cluster(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    """Aequitas (family ``rpc``): the cluster's ``rpc_network`` option, two RPC tenants admitted
    through the API, the Plan's ``aequitas`` section read back (classes, controller, each
    tenant's traffic, the prediction) as ``admit --policy aequitas`` writes it; a tenant
    without ``rpc`` and a class the network lacks are refused naming the field."""
    example = json.loads((Path("examples") / "aequitas-small.json").read_text())
    network = example["rpc_network"]
    operator = make_token(sqlite_url, "op", "operator")
    with server.client(operator) as c:
        c.create_cluster(
            "rpc", "aequitas", small_demo.cluster, small_demo.profile, {"rpc_network": network}
        )
        stored = c.upload_trace(Path("examples") / "rpc-onoff.parquet")
        hosts = {
            "trace": stored["sha256"],
            "client_host": "client00",
            "client_vm": "0",
            "server_host": "server00",
        }
        mixes = {"search": {"QoS_h": 0.7, "QoS_l": 0.3}, "batch": {"QoS_h": 0.2, "QoS_l": 0.8}}
        for name, mix in mixes.items():
            rpc = {"class_mix": mix, "pattern": "incast", "destination": 2}
            c.register_tenant("rpc", {"name": name, **hosts, "rpc": rpc})
        with pytest.raises(ServiceError) as no_rpc:
            c.register_tenant("rpc", {"name": "plain", **hosts, "slo_s": 0.1})
        assert (no_rpc.value.status, no_rpc.value.field) == (422, "body.rpc")
        with pytest.raises(ServiceError) as unknown:
            bad = {"class_mix": {"QoS_x": 1.0}}
            c.register_tenant("rpc", {"name": "odd", **hosts, "rpc": bad})
        assert unknown.value.status == 422 and "rpc" in str(unknown.value.field)
        answers = [c.admit("rpc", n) for n in mixes]
        assert [a["published"] for a in answers] == [1, 2]
        version, plan = c.plan("rpc")
        assert c.depart("rpc", "batch")["published"] == 3
        _, after = c.plan("rpc")
    assert list(after["aequitas"]["tenants"]) == ["search"]
    assert version == 2 and [t["name"] for t in plan["tenants"]] == list(mixes)
    section = plan["aequitas"]
    assert [k["name"] for k in section["network"]["classes"]] == ["QoS_h", "QoS_l"]
    assert {n: t["class_mix"] for n, t in section["tenants"].items()} == mixes
    assert set(section["prediction"]["admitted_share"]) == {"QoS_h"}
    assert plan["disciplines"]["net_in"]["kind"] == "wfq"
    loaded = Plan.from_json(plan)
    assert loaded.aequitas is not None and loaded.aequitas.network.classes[0].weight == 4
    # the service's prediction, kept per link, is the full one of admit --policy aequitas
    for tenants, doc in ((list(mixes), plan), (["search"], after)):
        assert doc["aequitas"]["prediction"] == cli_aequitas(network, mixes, tenants, tmp_path)


def cli_aequitas(
    network: dict[str, Any], mixes: dict[str, Any], names: list[str], folder: Path
) -> dict[str, Any]:
    """The prediction ``admit --policy aequitas`` computes for ``names`` (incasts to host 2 over
    the example's trace), in the Plan's JSON."""
    from tailbound.model import load_tenants
    from tailbound.policies.aequitas import AequitasPolicy

    trace = str((Path("examples") / "rpc-onoff.parquet").resolve())
    tenants = [
        {"name": n, "trace": trace, "rpc": {"class_mix": mixes[n], "pattern": "incast",
                                             "destination": 2}}
        for n in names
    ]  # fmt: skip
    (folder / "rpc-tenants.json").write_text(
        json.dumps({"rpc_network": network, "tenants": tenants})
    )
    made = AequitasPolicy(load_tenants(folder / "rpc-tenants.json")).plan()
    assert made.aequitas is not None
    return made.aequitas.prediction.to_json()


def test_aequitas_hosts_parts(server: Server, sqlite_url: str, small_demo: Demo) -> None:
    """An Aequitas cluster's hosts' parts (``service.rpc_parts``): ``rpc_hosts`` names the
    network's hosts (bad lists refused naming the element), each host's part carries its
    weighted classes, the channels it sends on with their classes and the controller, its
    addresses by host number with the ``rpc_port``; an ETag held gives 304; a host outside the
    network gets a part without tenants; an agent reads its own part only; class measurements
    are checked naming the field and reach the report."""
    network = json.loads((Path("examples") / "aequitas-small.json").read_text())["rpc_network"]
    operator = make_token(sqlite_url, "op", "operator")
    agent = make_token(sqlite_url, "ag", "agent", host="server01")
    names = ["client00", "server00", "server01"]
    addresses = {"client00": "198.18.0.1", "server00": "198.18.0.2", "server01": "198.18.0.3"}
    with server.client(operator) as c:
        for bad, field in (
            (["client00", "server00"], "body.options.rpc_hosts"),
            (["client00", "nowhere", "server01"], "body.options.rpc_hosts[1]"),
            (["client00", "client00", "server01"], "body.options.rpc_hosts[1]"),
        ):
            with pytest.raises(ServiceError) as refused:
                options = {"rpc_network": network, "rpc_hosts": bad}
                c.create_cluster("r", "aequitas", small_demo.cluster, small_demo.profile, options)
            assert (refused.value.status, refused.value.field) == (422, field)
        with pytest.raises(ServiceError) as refused:
            c.create_cluster("r", "knee", small_demo.cluster, small_demo.profile, {"rpc_port": 9})
        assert refused.value.field == "body.options.rpc_port"
        options = {"rpc_network": network, "rpc_hosts": names, "rpc_port": 7400}
        c.create_cluster(
            "r", "aequitas", small_demo.cluster, small_demo.profile, options, addresses
        )
        stored = c.upload_trace(Path("examples") / "rpc-onoff.parquet")
        hosts = {"client_host": "client00", "server_host": "server00"}
        for name, mix, pattern in (
            ("search", {"QoS_h": 0.7, "QoS_l": 0.3}, {"pattern": "incast", "destination": 2}),
            ("bulk", {"QoS_l": 1.0}, {"pattern": "all_to_all"}),
        ):
            rpc = {"class_mix": mix, **pattern}
            c.register_tenant("r", {"name": name, "trace": stored["sha256"], **hosts, "rpc": rpc})
            c.admit("r", name)
        with pytest.raises(ServiceError) as refused:  # generated arrivals: checked by name
            rpc = {"class_mix": {"QoS_h": 1.0}, "onoff": {"burst_load": 0.5, "load": 0.8}}
            c.register_tenant("r", {"name": "gen", "trace": stored["sha256"], **hosts, "rpc": rpc})
        assert (refused.value.status, refused.value.field) == (422, "body.rpc.onoff.load")
        version, etag, text = c.host_part("r", "client00")
        assert text is not None
        part = json.loads(text)
        rpc = part["meta"]["rpc"]
        assert (rpc["host"], rpc["hosts"], rpc["serves"]) == (0, names, True)
        assert rpc["link"] == {
            "rate_bps": 100e9,
            "classes": [
                {"name": "QoS_h", "weight": 4.0, "dscp": 46},
                {"name": "QoS_l", "weight": 1.0, "dscp": 0},
            ],
        }
        got = [
            (ch["destination"], ch["class"], ch["host"], ch["tenants"]) for ch in rpc["channels"]
        ]
        assert got == [
            (1, "QoS_l", "server00", ["bulk"]),
            (2, "QoS_h", "server01", ["search"]),
            (2, "QoS_l", "server01", ["search", "bulk"]),
        ]
        assert rpc["controller"]["latency_target_s"] == [25e-6]
        assert part["meta"]["addresses"] == {
            "hosts": {"0": "198.18.0.1", "1": "198.18.0.2", "2": "198.18.0.3"},
            "ports": {"0": 7400, "1": 7400, "2": 7400},
        }
        assert Plan.from_json(part).aequitas is not None  # loads as the Plan enforce reads
        assert c.host_part("r", "client00", etag)[2] is None  # 304
        _, _, other = c.host_part("r", "client01")  # not one of the network's hosts
        assert other is not None and json.loads(other)["tenants"] == []
        with server.client(agent) as a:
            _, _, own = a.host_part("r", "server01")
            assert own is not None and json.loads(own)["meta"]["rpc"]["host"] == 2
            with pytest.raises(ServiceError) as refused:
                a.host_part("r", "client00")
            assert refused.value.status == 403
            window = {"host": "server01", "plan_version": version, "window_s": 1.0}
            row = {"tenant": "search", "rpc_class": "QoS_h", "count": 10, "admitted": 11,
                   "percentiles": {"0.999": 2e-5}}  # fmt: skip
            for bad, field in (
                ({**row, "admitted": 11}, "body.tenants[0].admitted"),
                ({k: v for k, v in row.items() if k != "admitted"}, "body.tenants[0].admitted"),
                ({**row, "admitted": 5, "beyond_buckets": 1}, "body.tenants[0].beyond_buckets"),
            ):
                with pytest.raises(ServiceError) as refused:
                    a.json("POST", "/clusters/r/measurements", json={**window, "tenants": [bad]})
                assert (refused.value.status, refused.value.field) == (422, field)
            a.json(
                "POST",
                "/clusters/r/measurements",
                json={
                    **window,
                    "tenants": [{**row, "admitted": 5, "percentiles": {"0.999": 3e-5}}],
                },
            )
        report = c.json("GET", "/clusters/r/report")
    rows = {r["tenant"]: r for r in report["tenants"]}
    (h,) = rows["search"]["classes"]
    predicted = part["aequitas"]["prediction"]["admitted_share"]["QoS_h"]
    assert (h["count"], h["admitted"], h["admitted_share"]) == (10, 5, 0.5)
    assert h["measured_s"] == 3e-5 and h["hosts"] == ["server01"]
    assert "beyond_slo" in h["flags"] and rows["search"]["measured_s"] == 3e-5
    assert ("share_below_prediction" in h["flags"]) == (0.5 < 0.9 * predicted)
    assert rows["bulk"]["classes"] == []  # it asks for the lowest class only: no promise
