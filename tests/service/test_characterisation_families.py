"""The admission families take a characterisation instead of a trace (issue 27): the DNC
baselines an arrival curve (r-b curves per stage with the largest request's work), Nested QoS its
nested classes, SNC-Meister (under the thesis' rule) its flows' fitted MMBPs. Each is computed from
a demo tenant's trace as the family computes it, and a cluster admitting the characterisations
decides exactly as one admitting the traces (the same decisions, bounds, capacities); bad ones
are refused naming the field, with nothing registered; the Plans record them and load alone."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from tests.service.harness import Demo, Server, make_token, register

from tailbound.characterisation_forms import mmbp_of
from tailbound.model import TenantSet, tenant_from_json
from tailbound.plan import Plan
from tailbound.policies.dnc_baselines import CurveCache
from tailbound.policies.nested_qos import select_classes
from tailbound.profiles import SsdProfile
from tailbound.profiles.tokens import SsdModel
from tailbound.service.client import Client, ServiceError
from tailbound.snc.tenants import FitCache
from tailbound.traces.readers import read_trace

#: SNC-Meister's thesis rule: the bound alone (what a characterisation can be decided by).
THESIS = {"rule": {"alone_floor": False, "joint_floor": False, "police": False}}


def _tset(d: Demo, tmp: Path, entries: list[dict[str, Any]]) -> TenantSet:
    profile = tmp / "profile.json"
    profile.write_text(json.dumps(d.profile))
    tenants = tuple(tenant_from_json(e, source="demo", traces=d.folder) for e in entries)
    return TenantSet(tenants, d.cluster["link_bandwidth_bytes_per_s"], profile)


def dnc_of(tset: TenantSet) -> dict[str, dict[str, Any]]:
    """Each tenant's arrival curves as the DNC baselines compute them from its trace."""
    cache = CurveCache(tset)
    out = {}
    for t in tset.tenants:
        stages = {}
        for direction, stage in (("in", "net_in"), ("out", "net_out"), ("storage", "storage")):
            c = cache.curve(t, direction)
            stages[stage] = {
                "mean_rate": float(c.mean_rate),
                "points": [[float(r), float(b)] for r, b in zip(c.rates, c.buckets, strict=True)],
            }
        trace = read_trace(t.trace)
        sizes = [float(s) for s in trace.size]
        out[t.name] = {
            "stages": stages,
            "largest_read_bytes": max(sizes),
            "largest_write_bytes": max(sizes),
            "largest_work_s": cache.max_request_s(t),
        }
    return out


def nested_of(tset: TenantSet, d: Demo) -> dict[str, dict[str, Any]]:
    """Each tenant's nested classes as Nested QoS selects them from its trace's work."""
    model = SsdModel(SsdProfile.from_json(d.profile))
    out = {}
    for t in tset.tenants:
        trace = read_trace(t.trace)
        work = model.tokens(trace)
        grades = t.slo.grades or ((t.slo.latency_s, t.slo.percentile),)
        classes = select_classes(trace.time, work, grades)
        out[t.name] = {
            "nested_classes": [[c.sigma_s, c.rho, c.delta_s] for c in classes],
            "largest_work_s": float(work.max()),
        }
    return out


def snc_of(tset: TenantSet) -> dict[str, dict[str, Any]]:
    """Each tenant's flows' MMBPs as SNC-Meister fits them to its trace."""
    fits = FitCache()
    return {
        t.name: mmbp_of(
            {f: fits.model(t, f, tset) for f in ("in", "out", *(["storage"] if t.device else []))}
        )
        for t in tset.tenants
    }


def _both(
    c: Client,
    d: Demo,
    policy: str,
    options: dict[str, Any],
    entries: list[dict[str, Any]],
    given: dict[str, dict[str, Any]],
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Admit ``entries`` in order on a cluster of traces and one of characterisations; the
    decisions side by side."""
    names = [e["name"] for e in entries]
    register(c, d, f"{policy}-traced", policy=policy, options=options, names=names)
    c.create_cluster(f"{policy}-given", policy, d.cluster, d.profile, options)
    for e in entries:
        plain = {k: v for k, v in e.items() if k != "trace"}
        c.register_tenant(f"{policy}-given", {**plain, "characterisation": given[e["name"]]})
    return [(c.admit(f"{policy}-traced", n), c.admit(f"{policy}-given", n)) for n in names]


def _same(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    for traced, given in pairs:
        assert traced["admitted"] == given["admitted"]
        assert traced["reasons"] == given["reasons"]
        assert traced["published"] == given["published"]


def _refused(c: Client, cluster: str, body: dict[str, Any], field: str) -> None:
    with pytest.raises(ServiceError) as bad:
        c.register_tenant(cluster, body)
    assert bad.value.status == 422 and bad.value.field == field, bad.value
    assert body["name"] not in {t["name"] for t in c.json("GET", f"/clusters/{cluster}/tenants")}


def test_dnc_nested_and_snc_decide_on_a_characterisation_as_on_its_trace(
    server: Server, sqlite_url: str, small_demo: Demo, tmp_path: Path
) -> None:
    operator = make_token(sqlite_url, "op", "operator")
    entries = small_demo.tenants[:4]
    tset = _tset(small_demo, tmp_path, entries)
    dnc, nested, snc = dnc_of(tset), nested_of(tset, small_demo), snc_of(tset)
    with server.client(operator) as c:
        for policy, options, given in (
            ("dnc", {}, dnc),
            ("nested-qos", {}, nested),
            ("snc-meister", THESIS, snc),
        ):
            pairs = _both(c, small_demo, policy, options, entries, given)
            _same(pairs)
            print(policy, [(t["admitted"], t["reasons"].get("bound_s")) for t, _ in pairs])
            assert any(traced["admitted"] for traced, _ in pairs), policy
            plan = c.json("GET", f"/clusters/{policy}-given/plans/current")
            path = tmp_path / f"{policy}.json"
            path.write_text(json.dumps(plan))
            loaded = Plan.load(path)  # stands alone: the characterisations, no trace
            assert loaded.inputs is not None
            assert set(loaded.inputs.characterisations) == {t.name for t in loaded.tenants}, policy
            if policy == "dnc":
                assert "largest_work_s" in next(iter(loaded.inputs.characterisations.values()))

        # bad characterisations: 422 naming the field, nothing registered
        first = {k: v for k, v in entries[0].items() if k != "trace"}
        first["name"] = "late"
        c.create_cluster("snc-rule", "snc-meister", small_demo.cluster, small_demo.profile, {})
        wrong_rows = copy.deepcopy(snc[entries[0]["name"]])
        wrong_rows["mmbp"]["in"]["transition"][0][0] += 0.5
        no_work = {k: v for k, v in dnc[entries[0]["name"]].items() if k != "largest_work_s"}
        classes = nested[entries[0]["name"]]
        two = {**classes, "nested_classes": classes["nested_classes"] * 2}
        shifted = copy.deepcopy(classes)
        shifted["nested_classes"][0][2] *= 2
        for cluster, doc, field in (
            ("snc-rule", snc[entries[0]["name"]], "body.characterisation"),
            ("snc-meister-given", wrong_rows, "body.characterisation.mmbp.in.transition[0]"),
            ("snc-meister-given", dnc[entries[0]["name"]], "body.characterisation"),
            ("dnc-given", no_work, "body.characterisation.largest_work_s"),
            ("dnc-given", classes, "body.characterisation"),
            ("nested-qos-given", two, "body.characterisation.nested_classes"),
            ("nested-qos-given", shifted, "body.characterisation.nested_classes[0]"),
            ("nested-qos-given", {**classes, "x": 1}, "body.characterisation.x"),
        ):
            _refused(c, cluster, {**first, "characterisation": doc}, field)
