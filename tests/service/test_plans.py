"""Published Plans' text (:mod:`tailbound.service.plans`): compact, faithful, and a host's part
that loads as a Plan with its ETag the SHA-256 of its text; the incremental decisions give the
text of a full recomputation."""

from __future__ import annotations

import copy
import json

import pytest
from tests.enforce.net_plans import plan, tenant, two_clients
from tests.service.harness import Demo

from tailbound.model import cluster_from_json, tenant_from_json
from tailbound.plan import Plan
from tailbound.policies.workloadcompactor import to_plan
from tailbound.profiles import SsdProfile
from tailbound.service.engines import Context, check_options, new_engine
from tailbound.service.plans import PlanWriter, host_part, part_text, plan_text, sha256


def test_plan_text_round_trips_compact() -> None:
    p = two_clients()
    text = plan_text(p)
    assert text.endswith("}\n") and text.count("\n") == 1  # compact: one line
    assert json.loads(text) == json.loads(json.dumps(p.to_json()))
    assert [t.name for t in Plan.from_json(json.loads(text)).tenants] == ["A", "B", "L"]


def test_part_text_etag_is_its_sha256_and_loads() -> None:
    document = json.loads(plan_text(two_clients()))
    text, etag = part_text(document, "d")
    assert etag == f'"{sha256(text)}"' and text.count("\n") == 1
    part = Plan.from_json(json.loads(text))
    assert (
        [t.name for t in part.tenants]
        == ["B"]
        == [t["name"] for t in host_part(document, "d")["tenants"]]
    )


def test_plan_text_and_parts_use_the_c_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard library's pure-Python encoder (what ``indent`` selects) is never used: it
    took 190 ms per admission of a 885-tenant Plan (benchmarks/README.md), the C one a tenth."""

    def python_encoder(*args: object, **kw: object) -> None:
        raise AssertionError("the pure-Python JSON encoder was used")

    monkeypatch.setattr(json.encoder, "_make_iterencode", python_encoder)
    with pytest.raises(AssertionError):  # the trap works
        json.dumps({"a": 1}, indent=1)
    big = plan("shaping", *(tenant(f"T{i}", i % 4, 0.001, 1_000) for i in range(200)))
    text = plan_text(big)
    part, _ = part_text(json.loads(text), "c")
    assert len(json.loads(part)["tenants"]) == 200


def test_incremental_decisions_equal_full_recomputation(small_demo: Demo) -> None:
    """The per-decision shortcuts (``Placer.fork`` instead of a deep copy, ``to_plan``'s memo of
    unchanged servers, ``PlanWriter`` reusing unchanged entries' text) give exactly the Plan
    text of a full recomputation, and leave the engine decided on unchanged."""
    cluster = cluster_from_json(small_demo.cluster, "cluster")
    path = small_demo.folder / "profile_ssd.json"
    profile = SsdProfile.from_json(small_demo.profile, path=str(path))
    options = check_options("workloadcompactor", {"mtu_bytes": 9000.0})
    engine = new_engine(Context("c", "workloadcompactor", cluster, profile, path, options))
    writer = PlanWriter()
    tenants = [
        tenant_from_json(t, source="demo", traces=small_demo.folder) for t in small_demo.tenants
    ]
    events = [("admit", t) for t in tenants] + [("depart", tenants[1]), ("admit", tenants[1])]
    for event, who in events:
        before = [list(s.tenants) for s in engine.placer.servers]
        out = engine.admit(who) if event == "admit" else engine.depart(who.name)
        assert [list(s.tenants) for s in engine.placer.servers] == before  # a value
        if out.plan is None:
            continue
        after = out.after
        full = after.context.plan_of(
            to_plan(
                copy.deepcopy(after.placer).result(0.0),
                cluster,
                policy="workloadcompactor",
                safety_margin=1.0,
            ),
            after.tenants,
        )
        assert writer.text(out.plan) == plan_text(full) == plan_text(out.plan), (event, who.name)
        engine = after


def test_plan_store_split_join_edits_and_snapshots() -> None:
    """A Plan text splits into a skeleton and entries that join back byte for byte (a text that
    would not is kept whole); edits between random hash lists apply back to the later list."""
    import random

    from tailbound.service import plan_store

    text = plan_text(two_clients())
    skeleton, entries = plan_store.split(text)
    assert len(entries) == 3 and plan_store.join(skeleton, entries) == text
    assert len(skeleton) < len(text)
    fields = plan_store.skeleton_parts(skeleton)
    assert len(fields) > 5 and "".join(fields) == skeleton
    assert plan_store.skeleton_parts("[1]\n") == ["[1]\n"]
    odd = '{"tenants": [1]}\n'  # not compact: kept whole
    assert plan_store.split(odd) == (odd, []) and plan_store.join(odd, []) == odd
    rng = random.Random(7)
    before = [f"h{i}" for i in range(50)]
    records = [(1, plan_store.record(1, None, before))]
    for v in range(2, 140):
        after = [h for h in before if rng.random() > 0.05]
        for _ in range(rng.randrange(4)):
            after.insert(rng.randrange(len(after) + 1), f"n{v}.{rng.random()}")
        records.append((v, plan_store.record(v, before, after)))
        assert plan_store.apply(before, plan_store.edits(before, after)) == after
        start = plan_store.snapshot_of(v)
        assert plan_store.hashes_from([r for r in records if r[0] >= start], v) == after
        before = after
    assert "full" in records[64][1] and "edits" in records[65][1]
    with pytest.raises(ValueError, match="previous version"):
        plan_store.record(2, None, before)
