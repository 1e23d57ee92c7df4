"""Property tests of the document loaders (issue 15): invalid tenants, cluster, scenario and plan
documents are generated from a small schema of each (which keys are required, which numbers must
be positive, which lists hold unique entries, where ``null`` means "none") by mutating a valid
document, and go through the real loaders (:func:`tailbound.model.load_tenants`,
:func:`tailbound.model.load_cluster`, :meth:`tailbound.sim.scenario.Scenario.load`,
:meth:`tailbound.plan.Plan.load`).

- a mutation the schema forbids (a wrong type, ``null`` where a value is needed, ``NaN`` or
  ``±Infinity``, zero or a negative number where a positive one is needed, an unknown key, a
  missing required key, a duplicated entry) is a :class:`~tailbound.errors.ConfigError` naming
  the file and the field (or the line, for a number JSON cannot hold);
- any stack of mutations ends in a loaded document or a :class:`~tailbound.errors.TailboundError`
  naming the file, never another exception;
- generated valid documents load.

CI runs ``EXAMPLES`` examples of each (derandomized under ``CI=1``); ``TAILBOUND_FUZZ_EXAMPLES``
sets more for a longer run (``docs/architecture.md``, "Note: bad input", records one).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tailbound.errors import ConfigError, TailboundError
from tailbound.model import load_cluster, load_tenants
from tailbound.plan import Plan
from tailbound.sim.scenario import Scenario

EXAMPLES = int(os.environ.get("TAILBOUND_FUZZ_EXAMPLES", "150"))

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Schema:
    """What a document kind requires, as patterns over dotted paths (``tenants[*].slo_s``)."""

    suffix: str
    load: Callable[[Path], Any]
    base: dict[str, Any]
    required: frozenset[str]
    positive: frozenset[str] = frozenset()  # numbers that must be > 0
    nonnegative: frozenset[str] = frozenset()  # numbers that must be >= 0
    nullable: frozenset[str] = frozenset()  # null is a value here ("none", best effort)
    unique: frozenset[str] = frozenset()  # lists whose entries must differ
    numbers_as_names: frozenset[str] = frozenset()  # a number is read as a name here
    open: frozenset[str] = frozenset()  # anything goes below (free-form metadata)
    keyed: frozenset[str] = frozenset()  # objects with keys of the user's choosing
    extra: dict[str, Any] = field(default_factory=dict)


def pattern(path: Path_) -> str:
    out = ""
    for key in path:
        out += "[*]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


def walk(doc: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Every path of the document, the root first."""
    yield path
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from walk(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from walk(value, (*path, i))


def get(doc: Any, path: Path_) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


#: One value of each JSON type, for a wrong-type mutation.
OTHER_TYPES = {"null": None, "bool": True, "number": 7, "str": "x", "list": [], "dict": {}}


@dataclass(frozen=True)
class Mutation:
    """``op`` at ``path`` (``value`` for ``set``); ``invalid`` says the schema forbids it."""

    op: str  # "set", "delete", "unknown", "duplicate"
    path: Path_
    value: Any = None
    invalid: bool = False

    def apply(self, doc: Any) -> None:
        parent = get(doc, self.path[:-1]) if self.path else None
        if self.op == "set":
            parent[self.path[-1]] = copy.deepcopy(self.value)
        elif self.op == "delete":
            del parent[self.path[-1]]
        elif self.op == "unknown":
            get(doc, self.path)["zz_unknown"] = 1
        elif self.op == "duplicate":
            entries = get(doc, self.path)
            entries.append(copy.deepcopy(entries[0]))


def candidates(schema: Schema, doc: Any) -> list[Mutation]:
    """Every single mutation of ``doc`` (deterministic order), marked by the schema."""
    out = []
    for path in walk(doc):
        p = pattern(path)
        if any(p == o or p.startswith(o + ".") or p.startswith(o + "[") for o in schema.open):
            continue
        value = get(doc, path)
        if isinstance(value, dict):
            out.append(Mutation("unknown", path, invalid=p not in schema.keyed))
        if isinstance(value, list) and value:
            out.append(Mutation("duplicate", path, invalid=p in schema.unique))
        if not path:
            continue
        if isinstance(path[-1], str):
            # an absent key reads as null: dropping a null is no change
            out.append(Mutation("delete", path, invalid=p in schema.required and value is not None))
        here = kind(value)
        for other, replacement in OTHER_TYPES.items():
            if other == here or (other == "list" and here == "dict"):
                continue
            allowed = (
                (other == "null" and p in schema.nullable)
                or (other == "number" and here == "str" and p in schema.numbers_as_names)
                or here == "null"  # what a null stands for is not known here
            )
            out.append(Mutation("set", path, replacement, invalid=not allowed))
        for special in (math.nan, math.inf, -math.inf):
            out.append(Mutation("set", path, special, invalid=True))
        if here == "number":
            out.append(
                Mutation("set", path, 0, invalid=p in schema.positive)
                if not isinstance(value, int) or value != 0
                else Mutation("set", path, 1)
            )
            out.append(Mutation("set", path, -1, invalid=p in schema.positive | schema.nonnegative))
    return out


_FOLDER = tempfile.TemporaryDirectory(prefix="tailbound-docs-")  # removed at exit
_written = itertools.count()


def write(doc: Any, suffix: str) -> Path:
    """``doc`` as a file of its own (NaN and Infinity as JavaScript writes them)."""
    path = Path(_FOLDER.name) / f"doc{next(_written)}{suffix}"
    path.write_text(json.dumps(doc))
    return path


def assert_names_file_and_place(error: TailboundError, path: Path) -> None:
    message = str(error)
    assert len(message.splitlines()) == 1, message
    assert message.startswith(str(path)), message
    named = (isinstance(error, ConfigError) and error.field) or re.search(r"\bline \d+", message)
    assert named, f"names no field or line: {message}"


# ------------------------------------------------------------------------------ the schemas
TENANTS = Schema(
    ".json",
    load_tenants,
    base={
        "link_bandwidth_bytes_per_s": 1.25e8,
        "ssd_profile": "ssd.json",
        "tenants": [
            {
                "name": "A",
                "slo_s": 0.05,
                "percentile": 0.99,
                "trace": "a.txt",
                "client_host": "c0",
                "client_vm": "0",
                "server_host": "s0",
                "device": "ssd0",
                "group": "g",
                "class": "gold",
                "throughput_iops": 150,  # a throughput SLO (issue 26)
            },
            {"name": "B", "slo_s": 0.2, "trace": "b.txt", "throughput_bytes_per_s": 1e6},
            # a graduated SLO (issue 25): latencies and fractions strictly increasing
            {"name": "G", "slo_grades": [[0.005, 0.9], [0.05, 0.95], [0.5, 1]], "trace": "g.txt"},
        ],
    },
    required=frozenset(
        {"tenants", "tenants[*].name", "tenants[*].slo_s", "tenants[*].slo_grades"}
        | {"tenants[*].trace"}
    ),
    positive=frozenset(
        {"link_bandwidth_bytes_per_s", "tenants[*].slo_s", "tenants[*].percentile"}
        | {"tenants[*].slo_grades[*][*]"}
        | {"tenants[*].throughput_iops", "tenants[*].throughput_bytes_per_s"}
    ),
    # a repeated grade is not increasing; a repeated number makes a pair a triple
    unique=frozenset({"tenants", "tenants[*].slo_grades", "tenants[*].slo_grades[*]"}),
)

CLUSTER = Schema(
    ".json",
    load_cluster,
    base={
        "link_bandwidth_bytes_per_s": 1.25e8,
        "server_hosts": [
            {"name": "s0", "devices": ["ssd0", "ssd1"]},
            {"name": "s1", "devices": ["ssd0"]},
        ],
        "client_hosts": [{"name": "c0", "vms": ["0", "1"]}],
    },
    required=frozenset(
        {
            "link_bandwidth_bytes_per_s",
            "server_hosts",
            "server_hosts[*].name",
            "server_hosts[*].devices",
            "client_hosts[*].name",
        }
    ),
    positive=frozenset({"link_bandwidth_bytes_per_s"}),
    unique=frozenset(
        {"server_hosts", "client_hosts", "server_hosts[*].devices", "client_hosts[*].vms"}
    ),
    numbers_as_names=frozenset({"client_hosts[*].vms[*]"}),
)

SCENARIO = Schema(
    ".json",
    Scenario.load,
    base={
        "duration_s": 10.0,
        "network": {
            "mtu_bytes": 1500,
            "bandwidth_bytes_per_s": 1.25e8,
            "propagation_s": 1e-5,
            "messages": {"overhead_bytes": 100, "small_factor": 1.0, "large_factor": 1.0},
        },
        "hosts": [{"name": "c"}, {"name": "s", "bandwidth_bytes_per_s": 1e9}],
        "devices": [
            {"name": "mem", "host": "s", "kind": "memory", "read_mpl": 2, "base_latency_s": 1e-4}
        ],
        "workloads": [
            {
                "name": "A",
                "client": "c",
                "device": "mem",
                "slo": {"latency_s": 0.01, "percentile": 0.99},
                "issue": {"closed": {"outstanding": 4}},
                "trace": {
                    "synthetic": {
                        "kind": "poisson",
                        "rate": 100,
                        "duration_s": 2,
                        "seed": 1,
                        "size_bytes": 4096,
                        "read_fraction": 0.5,
                    }
                },
            },
            {
                "name": "B",
                "client": "s",
                "server": "c",
                "trace": {"synthetic": {"kind": "sequential", "requests": 10}},
            },
        ],
    },
    required=frozenset(
        {
            "workloads",
            "hosts[*].name",
            "devices[*].name",
            "devices[*].host",
            "workloads[*].name",
            "workloads[*].client",
            "workloads[*].trace",
            "workloads[*].slo.latency_s",
            "workloads[*].slo.percentile",
            "workloads[*].issue.closed",
            "workloads[*].issue.closed.outstanding",
            "workloads[*].trace.synthetic.kind",
            "workloads[*].trace.synthetic.rate",
            "workloads[*].trace.synthetic.duration_s",
            "workloads[*].trace.synthetic.requests",
        }
    ),
    positive=frozenset(
        {
            "duration_s",
            "network.mtu_bytes",
            "network.bandwidth_bytes_per_s",
            "hosts[*].bandwidth_bytes_per_s",
            "devices[*].read_mpl",
            "workloads[*].slo.latency_s",
            "workloads[*].slo.percentile",
            "workloads[*].issue.closed.outstanding",
            "workloads[*].trace.synthetic.rate",
            "workloads[*].trace.synthetic.duration_s",
            "workloads[*].trace.synthetic.size_bytes",
            "workloads[*].trace.synthetic.requests",
        }
    ),
    nonnegative=frozenset(
        {
            "network.propagation_s",
            "network.messages.overhead_bytes",
            "network.messages.small_factor",
            "network.messages.large_factor",
            "devices[*].base_latency_s",
            "workloads[*].trace.synthetic.seed",
            "workloads[*].trace.synthetic.read_fraction",
        }
    ),
    unique=frozenset({"hosts", "devices", "workloads"}),
)


def _bound(latency: float | None, stages: list[str]) -> dict[str, Any]:
    return {
        "analysis": "snc-meister",
        "percentile": 0.999,
        "stages": {s: 0.01 for s in stages},
        "alone_s": latency,
        "joint_s": None,
    }


def _limit(network: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"rate": 0.2, "bucket": 0.001}
    if network:
        out |= {"capacity_bytes_per_s": 1.25e8, "rate_bytes_per_s": 2.5e7, "bucket_bytes": 1.25e5}
    return out


PLAN = Schema(
    ".json",
    Plan.load,
    base={
        "format": "tailbound-plan",
        "version": 2,
        "policy": "snc-meister",
        "servers_used": 1,
        "safety_margin": 1.0,
        "priority_levels": 8,
        "disciplines": {
            "net_in": {"kind": "priority", "mode": "shaping"},
            "storage": {"kind": "fifo", "mode": "shaping"},
            "net_out": {
                "kind": "dwrr",
                "mode": "shaping",
                "class_weight": {"gold": 2.0},
                "quantum_s": 0.001,
            },
        },
        "dispatch": {
            "read_mpl": 2,
            "write_mpl": None,
            "low_priority_mpl": 1,
            "low_priority_work_s": 0.001,
        },
        "stages": ["net_in", "storage", "net_out"],
        "tenants": [
            {
                "name": "A",
                "slo_s": 0.05,
                "percentile": 0.99,
                "server": "s0",
                "device": "ssd0",
                "client_host": "c0",
                "client_vm": "0",
                "priority": {"net_in": 0, "storage": 1, "net_out": None},
                "stages": {
                    "net_in": {**_limit(True), "extra": [_limit(True)]},
                    "storage": _limit(False),
                },
                "latency_bound_s": 0.03,
                "bound": _bound(0.02, ["net_in", "storage"]),
                "weight": {"storage": 2.0},
                "deadline_s": {"net_out": 0.05},
                "service_class": {"net_out": "gold"},
            },
            {
                "name": "B",
                "slo_s": None,
                "percentile": None,
                "server": "s0",
                "device": None,
                "client_host": None,
                "client_vm": None,
                "priority": {"net_in": 2, "net_out": 2},
                "stages": {},
                "latency_bound_s": None,
                "bound": _bound(None, []),
            },
        ],
        "rejected": [
            {
                "name": "C",
                "reason": "SLO",
                "violated": ["C"],
                "latency_bound_s": 0.4,
                "bound": _bound(0.4, ["storage"]),
            }
        ],
        "meta": {"seed": 1, "note": ["anything"]},
    },
    required=frozenset(
        {
            "format",
            "version",
            "policy",
            "servers_used",
            "safety_margin",
            "priority_levels",
            "tenants",
            "rejected",
            "tenants[*].name",
            "tenants[*].server",
            "tenants[*].priority",
            "tenants[*].stages",
            "tenants[*].bound.analysis",
            "tenants[*].bound.percentile",
            "tenants[*].stages.net_in.rate",
            "tenants[*].stages.net_in.bucket",
            "tenants[*].stages.net_in.extra[*].rate",
            "tenants[*].stages.net_in.extra[*].bucket",
            "tenants[*].stages.storage.rate",
            "tenants[*].stages.storage.bucket",
            "rejected[*].name",
            "rejected[*].reason",
            "rejected[*].bound.analysis",
            "rejected[*].bound.percentile",
            # an SLO is both numbers or neither (best effort)
            "tenants[*].slo_s",
            "tenants[*].percentile",
            # every stage of the tenant's path has a priority (null: best effort)
            "tenants[*].priority.net_in",
            "tenants[*].priority.storage",
            "tenants[*].priority.net_out",
        }
    ),
    positive=frozenset(
        {
            "safety_margin",
            "priority_levels",
            "tenants[*].slo_s",
            "tenants[*].percentile",
            "tenants[*].bound.percentile",
            "rejected[*].bound.percentile",
            "tenants[*].weight.storage",
            "tenants[*].deadline_s.net_out",
            "disciplines.net_out.class_weight.gold",
            "disciplines.net_out.quantum_s",
            "tenants[*].stages.net_in.capacity_bytes_per_s",
            "tenants[*].stages.net_in.extra[*].capacity_bytes_per_s",
        }
    ),
    nonnegative=frozenset(
        {
            "tenants[*].priority.net_in",
            "tenants[*].priority.storage",
            "tenants[*].priority.net_out",
            "tenants[*].latency_bound_s",
            "rejected[*].latency_bound_s",
            "servers_used",
            "dispatch.read_mpl",
            "dispatch.low_priority_mpl",
            "dispatch.low_priority_work_s",
        }
        | {
            f"{who}.bound.{key}"
            for who in ("tenants[*]", "rejected[*]")
            for key in ("alone_s", "joint_s", "stages.net_in", "stages.storage")
        }
        | {
            f"tenants[*].stages.{stage}{extra}.{key}"
            for stage in ("net_in", "storage")
            for extra in ("", ".extra[*]")
            for key in ("rate", "bucket", "rate_bytes_per_s", "bucket_bytes")
        }
    ),
    nullable=frozenset(
        {
            "tenants[*].priority.net_in",
            "tenants[*].priority.storage",
            "tenants[*].priority.net_out",
            "tenants[*].device",
            "tenants[*].client_host",
            "tenants[*].client_vm",
            "tenants[*].latency_bound_s",
            "tenants[*].bound",
            "tenants[*].stages.net_in",
            "tenants[*].stages.storage",
            "rejected[*].latency_bound_s",
            "rejected[*].bound",
            "meta",
            "dispatch.read_mpl",
            "dispatch.write_mpl",
            "dispatch.low_priority_mpl",
            "dispatch.low_priority_work_s",
        }
        | {
            f"{who}.bound.{key}"
            for who in ("tenants[*]", "rejected[*]")
            for key in ("alone_s", "joint_s", "stages.net_in", "stages.storage")
        }
    ),
    unique=frozenset({"tenants", "rejected"}),
    open=frozenset({"meta"}),
    keyed=frozenset({"disciplines.net_out.class_weight"}),  # by class name
)


def _plan_with_inputs(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` as a version 3 plan recording its inputs (:mod:`tailbound.plan_inputs`)."""
    doc = copy.deepcopy(base)
    doc["version"] = 3
    doc["inputs"] = {
        "link_bandwidth_bytes_per_s": 1.25e8,
        "profile": {"type": "storageSSD", "bandwidthTable": [{"requestSize": 512}]},
    }
    for i, t in enumerate(doc["tenants"]):
        t["trace"] = {"path": f"traces/{i}.txt", "sha256": "0" * 64, "format": "wc"}
    # a graduated SLO and Nested QoS classes (issue 25): the first grade is slo_s and percentile
    doc["tenants"][0]["slo_grades"] = [[0.05, 0.99], [0.5, 1]]
    doc["tenants"][0]["nested"] = {"storage": [[0.001, 0.1, 0.05], [0.002, 0.2, 0.5]]}
    # a throughput SLO and PSLO's controller at the storage stage (issue 26)
    doc["tenants"][0]["throughput_iops"] = 150.0
    doc["control"] = {"storage": {"kind": "pslo", "policy": "LS+T", **PSLO_PARAMETERS}}
    return doc


#: Every parameter of PSLO's controller, as a plan writes them (``plan.StageControl``).
PSLO_PARAMETERS = {
    "interval_completions": 1000,
    "threshold": 2.0,
    "window_s": 0.02,
    "enable_s": 0.1,
    "sigma": 0.1,
    "eta": 0.95,
    "raise_at": 5.0,
    "max_depth": 64,
}


#: A version 3 plan: the inputs are read strictly, the embedded profile when it is used.
PLAN3 = dataclasses.replace(
    PLAN,
    base=_plan_with_inputs(PLAN.base),
    required=PLAN.required
    | {"inputs", "inputs.link_bandwidth_bytes_per_s", "tenants[*].trace"}
    | {"tenants[*].trace.path", "tenants[*].trace.sha256"}
    | {"control.storage.kind", "control.storage.policy"},
    positive=PLAN.positive
    | {"inputs.link_bandwidth_bytes_per_s", "tenants[*].slo_grades[*][*]"}
    | {"tenants[*].nested.storage[*][*]", "tenants[*].throughput_iops"}
    | {f"control.storage.{k}" for k in PSLO_PARAMETERS if k != "enable_s"},
    nonnegative=PLAN.nonnegative | {"control.storage.enable_s"},
    # a repeated grade or class is not increasing; a repeated number lengthens a pair or triple
    unique=PLAN.unique
    | {"tenants[*].slo_grades", "tenants[*].slo_grades[*]"}
    | {"tenants[*].nested.storage", "tenants[*].nested.storage[*]"},
    nullable=PLAN.nullable | {"inputs.profile", "tenants[*].trace.format"},
    open=PLAN.open | {"inputs.profile"},
)

SCHEMAS = {
    "tenants": TENANTS,
    "cluster": CLUSTER,
    "scenario": SCENARIO,
    "plan": PLAN,
    "plan3": PLAN3,
}
MUTATIONS = {name: candidates(s, s.base) for name, s in SCHEMAS.items()}


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_base_documents_load(name: str) -> None:
    schema = SCHEMAS[name]
    schema.load(write(schema.base, schema.suffix))


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_schema_has_invalid_mutations_of_each_class(name: str) -> None:
    """The generator is not vacuous: each class of mutation the issue lists occurs."""
    found = {(m.op, kind(m.value) if m.op == "set" else None) for m in MUTATIONS[name] if m.invalid}
    classes = {op for op, _ in found} | {k for _, k in found if k}
    assert {"set", "unknown", "delete", "null", "number", "str"} <= classes, found
    numbers = [
        m.value
        for m in MUTATIONS[name]
        if m.invalid and m.op == "set" and isinstance(m.value, float | int)
    ]
    assert any(isinstance(v, float) and math.isnan(v) for v in numbers)
    if SCHEMAS[name].positive:
        assert 0 in numbers and -1 in numbers


@pytest.mark.parametrize("name", SCHEMAS)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_an_invalid_document_names_file_and_field(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    mutation = data.draw(st.sampled_from([m for m in MUTATIONS[name] if m.invalid]))
    doc = copy.deepcopy(schema.base)
    mutation.apply(doc)
    path = write(doc, schema.suffix)
    with pytest.raises(ConfigError) as caught:
        schema.load(path)
    assert_names_file_and_place(caught.value, path)


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_single_invalid_mutation_names_file_and_field(name: str) -> None:
    """All of them, not a sample: each mutation the schema forbids, alone."""
    schema = SCHEMAS[name]
    for mutation in MUTATIONS[name]:
        if mutation.invalid:
            doc = copy.deepcopy(schema.base)
            mutation.apply(doc)
            path = write(doc, schema.suffix)
            with pytest.raises(ConfigError) as caught:
                schema.load(path)
            assert_names_file_and_place(caught.value, path)


#: Values a stacked mutation may write anywhere: odd numbers, text, nesting.
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text("abkz", max_size=3), st.integers(0, 3), max_size=2),
)


@pytest.mark.parametrize("name", SCHEMAS)
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_any_mutated_document_loads_or_is_an_error_naming_the_file(
    name: str, data: st.DataObject
) -> None:
    schema = SCHEMAS[name]
    doc = copy.deepcopy(schema.base)
    for _ in range(data.draw(st.integers(1, 4))):
        paths = [p for p in walk(doc) if p]
        if not paths:
            break
        target = data.draw(st.sampled_from(paths))
        op = data.draw(st.sampled_from(["set", "delete", "unknown", "duplicate", "odd"]))
        value = get(doc, target)
        if op == "odd":
            Mutation("set", target, data.draw(ODD)).apply(doc)
        elif op == "unknown" and isinstance(value, dict):
            Mutation("unknown", target).apply(doc)
        elif op == "duplicate" and isinstance(value, list) and value:
            Mutation("duplicate", target).apply(doc)
        elif op == "delete" and isinstance(target[-1], str):
            Mutation("delete", target).apply(doc)
        else:
            Mutation("set", target, data.draw(st.sampled_from(list(OTHER_TYPES.values())))).apply(
                doc
            )
    path = write(doc, schema.suffix)
    try:
        schema.load(path)
    except TailboundError as e:
        assert str(path) in str(e), e
        assert len(str(e).splitlines()) == 1, e


names = st.text("abcdefgh0123", min_size=1, max_size=6)
positive = st.floats(1e-6, 1e6)
percentiles = st.floats(0.0, 1.0, exclude_min=True)


@settings(max_examples=EXAMPLES)
@given(
    tenants=st.lists(
        st.fixed_dictionaries(
            {"name": names, "slo_s": positive, "trace": names},
            optional={"percentile": percentiles, "client_host": names, "group": names},
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t["name"],
    ),
    bandwidth=positive,
)
def test_generated_valid_tenants_load(tenants: list[dict[str, Any]], bandwidth: float) -> None:
    loaded = load_tenants(
        write({"tenants": tenants, "link_bandwidth_bytes_per_s": bandwidth}, ".json")
    )
    assert [t.name for t in loaded.tenants] == [t["name"] for t in tenants]
    assert [t.slo_s for t in loaded.tenants] == [t["slo_s"] for t in tenants]


@settings(max_examples=EXAMPLES)
@given(
    servers=st.lists(names, min_size=1, max_size=4, unique=True),
    clients=st.lists(names.map(lambda n: "c" + n), max_size=3, unique=True),
    devices=st.lists(names, min_size=1, max_size=3, unique=True),
    vms=st.lists(names, max_size=3, unique=True),
    bandwidth=positive,
)
def test_generated_valid_clusters_load(
    servers: list[str], clients: list[str], devices: list[str], vms: list[str], bandwidth: float
) -> None:
    servers = [s for s in servers if s not in clients]
    doc = {
        "link_bandwidth_bytes_per_s": bandwidth,
        "server_hosts": [{"name": s, "devices": devices} for s in servers],
        "client_hosts": [{"name": c, "vms": vms} for c in clients],
    }
    if not servers:
        return
    cluster = load_cluster(write(doc, ".json"))
    assert [s.name for s in cluster.servers] == servers
    assert [c.vms for c in cluster.client_hosts] == [tuple(vms)] * len(clients)


@settings(max_examples=max(10, EXAMPLES // 5))
@given(
    slo=st.tuples(positive, percentiles),
    rate=st.floats(1.0, 100.0),
    mtu=st.floats(64.0, 9000.0),
    workloads=st.integers(1, 3),
)
def test_generated_valid_scenarios_load(
    slo: tuple[float, float], rate: float, mtu: float, workloads: int
) -> None:
    doc = copy.deepcopy(SCENARIO.base)
    doc["network"]["mtu_bytes"] = mtu
    first = doc["workloads"][0]
    first["slo"] = {"latency_s": slo[0], "percentile": slo[1]}
    first["trace"]["synthetic"]["rate"] = rate
    doc["workloads"] += [{**first, "name": f"W{i}"} for i in range(workloads - 1)]
    scenario = Scenario.load(write(doc, ".json"))
    assert len(scenario.workloads) == workloads + 1
    assert scenario.workloads[0].slo is not None
    assert scenario.workloads[0].slo.latency_s == slo[0]


@settings(max_examples=EXAMPLES)
@given(
    slos=st.lists(st.tuples(positive, percentiles), min_size=1, max_size=4),
    levels=st.integers(1, 16),
    rate=st.floats(0.0, 1.0),
)
def test_generated_valid_plans_load(
    slos: list[tuple[float, float]], levels: int, rate: float
) -> None:
    doc = copy.deepcopy(PLAN.base)
    doc["priority_levels"] = levels
    template = doc["tenants"][0]
    template["priority"] = {"net_in": 0, "storage": levels - 1, "net_out": None}
    template["stages"]["storage"]["rate"] = rate
    doc["tenants"] = [
        {**template, "name": f"T{i}", "slo_s": s, "percentile": p} for i, (s, p) in enumerate(slos)
    ]
    plan = Plan.load(write(doc, ".json"))
    assert [t.slo_s for t in plan.tenants] == [s for s, _ in slos]
    assert Plan.from_json(plan.to_json()).to_json() == plan.to_json()
