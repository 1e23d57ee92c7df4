"""A tenant given by its characterisation instead of a trace (issue 27): the API checks it
(422 naming the field), a placement cluster admits on it exactly as on the trace it was computed
from, the Plan records it in place of a trace (so it still loads alone), and ``verify`` says it
cannot replay such a tenant, naming the entry."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.service.harness import Demo, Server, make_token, register
from tests.service.ui_harness import sign_in

from tailbound.model import tenant_from_json
from tailbound.plan import Plan
from tailbound.plan_inputs import CHARACTERISED_STAGES
from tailbound.policies.workload import characterize
from tailbound.profiles import SsdProfile
from tailbound.service.client import ServiceError
from tailbound.traces.readers import read_trace


def characterisation_of(d: Demo, entry: dict[str, Any]) -> dict[str, Any]:
    """The characterisation of a demo tenant, computed from its trace as ``place`` does."""
    tenant = tenant_from_json(entry, source="demo", traces=d.folder)
    curves = characterize(
        tenant,
        read_trace(tenant.trace),
        profile=SsdProfile.from_json(d.profile),
        link_bandwidth_bytes_per_s=d.cluster["link_bandwidth_bytes_per_s"],
    )
    return {
        "stages": {
            str(stage): {
                "mean_rate": curve.mean_rate,
                "points": [
                    [float(r), float(b)] for r, b in zip(curve.rates, curve.buckets, strict=True)
                ],
            }
            for stage, curve in curves.curves.items()
        },
        "largest_read_bytes": curves.largest[0],
        "largest_write_bytes": curves.largest[1],
    }


def test_a_characterisation_instead_of_a_trace(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    entries = small_demo.tenants[:2]
    names = [e["name"] for e in entries]
    given = {e["name"]: characterisation_of(small_demo, e) for e in entries}
    with server.client(operator) as c:
        register(c, small_demo, "traced", names=names)
        c.create_cluster("given", "workloadcompactor", small_demo.cluster, small_demo.profile)
        plain = {k: v for k, v in entries[0].items() if k != "trace"}
        # bad characterisations: 422 naming the field, nothing registered
        broken = copy.deepcopy(given[names[0]])
        broken["stages"]["storage"]["points"][1][1] = 1e9  # a bucket growing with the rate
        missing = copy.deepcopy(given[names[0]])
        del missing["stages"]["net_out"]
        stored = c.upload_trace(small_demo.trace(names[0]))["sha256"]
        cases = [
            ({**plain}, "body.trace"),
            ({**plain, "trace": stored, "characterisation": given[names[0]]}, "body.trace"),
            (
                {**plain, "characterisation": broken},
                "body.characterisation.stages.storage.points[1]",
            ),
            ({**plain, "characterisation": missing}, "body.characterisation.stages.net_out"),
            ({**plain, "characterisation": {**given[names[0]], "x": 1}}, "body.characterisation.x"),
        ]
        for body, field in cases:
            with pytest.raises(ServiceError) as bad:
                c.register_tenant("given", body)
            assert (bad.value.status, bad.value.field) == (422, field), body
        assert c.json("GET", "/clusters/given/tenants") == []
        # an SNC cluster analyses traces: refused, naming the field
        c.create_cluster("snc", "snc-meister", small_demo.cluster, small_demo.profile)
        with pytest.raises(ServiceError) as snc:
            c.register_tenant("snc", {**plain, "characterisation": given[names[0]]})
        assert (snc.value.status, snc.value.field) == (422, "body.characterisation")
        # admitted on the characterisation as on the trace it came from
        for e in entries:
            body = {k: v for k, v in e.items() if k != "trace"}
            c.register_tenant("given", {**body, "characterisation": given[e["name"]]})
        for name in names:
            a, b = c.admit("traced", name), c.admit("given", name)
            assert a["admitted"] and b["admitted"], (a, b)
            assert a["reasons"] == b["reasons"], (a, b)
        _, traced = c.plan("traced")
        _, plan = c.plan("given")
    with sign_in(server.url, operator) as ui:  # its page draws the curves it was given
        page = ui.get(f"/ui/clusters/given/tenants/{names[0]}")
        assert page.status_code == 200, page.text
        assert f"r-b curve of {names[0]} at storage" in page.text
    for t in plan["tenants"]:
        assert "trace" not in t and set(t["characterisation"]["stages"]) == set(
            CHARACTERISED_STAGES
        )
    bounds = {t["name"]: t["latency_bound_s"] for t in plan["tenants"]}
    assert bounds == {t["name"]: t["latency_bound_s"] for t in traced["tenants"]}
    loaded = Plan.from_json(plan)  # stands alone: the characterisation is its input
    assert loaded.inputs is not None and set(loaded.inputs.characterisations) == set(names)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    done = subprocess.run(
        [sys.executable, "-m", "tailbound.cli.main", "verify", "--plan", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "tenants[0].characterisation" in done.stderr
    assert "no requests of it to replay" in done.stderr
