"""The admission families beyond SNC and DNC through the service (issue 27): Nested QoS
(``nested-qos``, family ``nested``) decides as ``tailbound admit --policy nested-qos`` does on the
same tenants, PSLO (``pslo``, family ``control``) admits every tenant its controller can
control, with the cluster's controller options; bad input names the field."""

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
