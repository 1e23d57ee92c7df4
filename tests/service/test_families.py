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


def test_aequitas_cluster(server: Server, sqlite_url: str, small_demo: Demo) -> None:
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
