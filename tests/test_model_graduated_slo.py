"""Graduated SLOs (Nested QoS, issue 25): ``slo_grades`` in the tenants file, carried by
:class:`tailbound.model.Slo`; bad grades refused naming the tenant and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tailbound.errors import ConfigError
from tailbound.model import Slo, check_grades, load_tenants

SLA = [[0.005, 0.9], [0.05, 0.95], [0.5, 1.0]]


def _load(tmp_path: Path, *tenants: dict[str, Any]) -> Any:
    p = tmp_path / "tenants.json"
    p.write_text(json.dumps({"tenants": list(tenants)}))
    return load_tenants(p)


def test_slo_grades_load_and_the_innermost_grade_is_the_single_pair(tmp_path: Path) -> None:
    tset = _load(
        tmp_path,
        {"name": "A", "slo_grades": SLA, "trace": "a"},
        {"name": "B", "slo_s": 0.05, "percentile": 0.99, "trace": "b"},
    )
    a, b = tset.tenants
    assert a.slo.grades == ((0.005, 0.9), (0.05, 0.95), (0.5, 1.0))
    assert (a.slo_s, a.percentile) == (0.005, 0.9)  # every single-pair caller reads grade 0
    assert a.slo.is_graduated and a.slo.pairs == a.slo.grades
    assert b.slo == Slo(0.05, 0.99) and not b.slo.is_graduated
    assert b.slo.pairs == ((0.05, 0.99),)


def test_one_grade_is_the_single_pair(tmp_path: Path) -> None:
    tset = _load(tmp_path, {"name": "A", "slo_grades": [[0.05, 0.99]], "trace": "a"})
    assert tset.tenants[0].slo == Slo(0.05, 0.99)
    assert repr(tset.tenants[0].slo) == "Slo(latency_s=0.05, percentile=0.99)"


@pytest.mark.parametrize(
    ("grades", "field", "words"),
    [
        ([[0.005, 0.9], [0.05, 0.9]], "slo_grades[1]", "fractions must increase"),
        ([[0.005, 0.95], [0.05, 0.9]], "slo_grades[1]", "fractions must increase"),
        ([[0.005, 0.9], [0.005, 0.95]], "slo_grades[1]", "latencies must increase"),
        ([[0.05, 0.9], [0.005, 0.95]], "slo_grades[1]", "latencies must increase"),
        ([[0.005, 0.0], [0.05, 0.95]], "slo_grades[0]", "fraction must be in (0, 1]"),
        ([[0.005, 0.9], [0.05, 1.5]], "slo_grades[1]", "fraction must be in (0, 1]"),
        ([[-0.005, 0.9]], "slo_grades[0]", "latency_s must be positive"),
        ([[0.005, 0.9, 1.0]], "slo_grades[0]", "expected [latency_s, fraction]"),
        ([[0.005, "x"]], "slo_grades[0]", "expected [latency_s, fraction]"),
        ([[0.005, True]], "slo_grades[0]", "expected [latency_s, fraction]"),
        ([], "slo_grades", "non-empty list"),
        ({"a": 1}, "slo_grades", "non-empty list"),
    ],
)
def test_bad_grades_are_refused_naming_tenant_and_field(
    tmp_path: Path, grades: Any, field: str, words: str
) -> None:
    with pytest.raises(ConfigError) as e:
        _load(
            tmp_path,
            {"name": "A", "slo_s": 0.1, "trace": "a"},
            {"name": "B", "slo_grades": grades, "trace": "b"},
        )
    assert e.value.field == f"tenants[1].{field}", str(e.value)
    assert words in e.value.message, str(e.value)


@pytest.mark.parametrize("key", ["slo_s", "percentile"])
def test_slo_grades_exclude_the_single_pair(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, {"name": "A", "slo_grades": SLA, key: 0.5, "trace": "a"})
    assert e.value.field == f"tenants[0].{key}" and "not both" in e.value.message


def test_a_tenant_without_slo_names_slo_s(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, {"name": "A", "trace": "a"})
    assert e.value.field == "tenants[0].slo_s"


def test_slo_refuses_grades_that_disagree_with_its_pair() -> None:
    with pytest.raises(ValueError, match="first grade"):
        Slo(0.05, 0.9, ((0.005, 0.9), (0.05, 0.95)))
    with pytest.raises(ValueError, match="at least one"):
        check_grades([])
    assert Slo.graduated([(0.005, 0.9), (0.05, 1.0)]) == Slo(
        0.005, 0.9, ((0.005, 0.9), (0.05, 1.0))
    )
