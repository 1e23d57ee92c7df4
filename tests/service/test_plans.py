"""Published Plans' text (:mod:`tailbound.service.plans`): compact, faithful, and a host's part
that loads as a Plan with its ETag the SHA-256 of its text."""

from __future__ import annotations

import json

import pytest
from tests.enforce.net_plans import plan, tenant, two_clients

from tailbound.plan import Plan
from tailbound.service.plans import host_part, part_text, plan_text, sha256


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
