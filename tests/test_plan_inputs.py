"""A Plan's record of its inputs (:mod:`tailbound.plan_inputs`, plan format version 3): round
trips, relative and absolute trace paths, hashing once, reading errors naming the field, and
what a consumer is given (overrides, stale and missing traces, plans recording none)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tailbound.errors import ConfigError
from tailbound.model import Slo
from tailbound.plan import Bound, Plan, TenantPlan
from tailbound.plan_inputs import (
    PlanInputs,
    TraceRef,
    _sha256,
    file_sha256,
    resolve_inputs,
)
from tailbound.stages import STORAGE_PATH

PROFILE = {
    "type": "storageSSD",
    "bandwidthTable": [
        {"requestSize": 512, "readBandwidth": 5e6, "writeBandwidth": 1e6},
        {"requestSize": 65536, "readBandwidth": 2e8, "writeBandwidth": 1e8},
    ],
}


def _trace(path: Path, n: int, step_ns: int = 10_000_000) -> Path:
    """A native (wc) trace of ``n`` 4 KiB reads every ``step_ns``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{step_ns * (i + 1)},0x1000,DiskRead\n" for i in range(n)))
    return path


def _tenant(name: str) -> TenantPlan:
    return TenantPlan(
        name=name,
        slo=Slo(0.1, 0.99),
        server="s0",
        device="ssd0",
        priority=dict.fromkeys(STORAGE_PATH, 0),
        limits={},
        bound=Bound(0.05, "test", 0.99),
    )


def _plan(traces: dict[str, Path], *, link: float = 125e6) -> Plan:
    plan = Plan("test", 1, [_tenant(n) for n in traces])
    inputs = PlanInputs.record(traces, link_bytes_per_s=link, profile=PROFILE)
    return dataclasses.replace(plan, inputs=inputs)


def _tenants_file(path: Path, traces: dict[str, Path]) -> Path:
    doc = {"tenants": [{"name": n, "slo_s": 0.1, "trace": str(p)} for n, p in traces.items()]}
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------------------ round trip
def test_plan_inputs_round_trip_through_a_file(tmp_path: Path) -> None:
    traces = {"A": _trace(tmp_path / "traces" / "a.txt", 5), "B": _trace(tmp_path / "b.txt", 3)}
    plan = _plan(traces, link=1.25e9)
    path = tmp_path / "plan.json"
    plan.save(path)
    back = Plan.load(path)
    assert back == plan and back.version == 3
    assert back.inputs is not None
    assert back.inputs.traces["A"] == TraceRef(
        traces["A"], hashlib.sha256(traces["A"].read_bytes()).hexdigest(), "wc"
    )
    assert back.inputs.link_bytes_per_s == 1.25e9
    assert back.inputs.profile == PROFILE
    doc = json.loads(path.read_text())
    assert doc["version"] == 3 and doc["inputs"]["profile"] == PROFILE
    assert doc["tenants"][0]["trace"]["path"] == "traces/a.txt"  # inside the plan's folder


def test_trace_paths_are_relative_inside_the_plans_folder_and_absolute_outside(
    tmp_path: Path,
) -> None:
    inside = _trace(tmp_path / "plans" / "data" / "a.txt", 2)
    outside = _trace(tmp_path / "shared" / "b.txt", 2)
    _plan({"A": inside, "B": outside}).save(tmp_path / "plans" / "plan.json")
    doc = json.loads((tmp_path / "plans" / "plan.json").read_text())
    assert [t["trace"]["path"] for t in doc["tenants"]] == ["data/a.txt", str(outside)]
    # without a file (an in-memory document), every path is absolute
    assert _plan({"A": inside}).to_json()["tenants"][0]["trace"]["path"] == str(inside)


def test_a_plan_moved_with_its_traces_still_resolves_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plan({"A": _trace(tmp_path / "run" / "traces" / "a.txt", 4)}).save(tmp_path / "run" / "p.json")
    shutil.move(tmp_path / "run", tmp_path / "moved")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    plan = Plan.load(tmp_path / "moved" / "p.json")
    got = resolve_inputs(plan, tmp_path / "moved" / "p.json", ["A"])
    assert got.traces["A"].path == tmp_path / "moved" / "traces" / "a.txt"
    assert got.link_bytes_per_s == 125e6 and got.profile == PROFILE
    assert got.device_profile().read_mpl == 48


def test_a_plan_without_inputs_writes_null_and_no_traces() -> None:
    doc = Plan("test", 1, [_tenant("A")]).to_json()
    assert doc["inputs"] is None and "trace" not in doc["tenants"][0]
    assert Plan.from_json(doc).inputs is None


def test_inputs_must_name_every_tenant(tmp_path: Path) -> None:
    plan = _plan({"A": _trace(tmp_path / "a.txt", 2)})
    plan = dataclasses.replace(plan, tenants=[*plan.tenants, _tenant("B")])
    with pytest.raises(ValueError, match="no trace of 'B'"):
        plan.to_json()


# ------------------------------------------------------------------------------ hashing
def test_a_file_is_hashed_once_per_process_until_it_changes(tmp_path: Path) -> None:
    path = _trace(tmp_path / "a.txt", 3)
    os.utime(path, ns=(10**18, 10**18))  # written long ago
    before = _sha256.cache_info()
    first = file_sha256(path)
    assert file_sha256(path) == first == hashlib.sha256(path.read_bytes()).hexdigest()
    after = _sha256.cache_info()
    assert after.misses == before.misses + 1 and after.hits == before.hits + 1
    _trace(path, 3, step_ns=20_000_000)  # rewritten: the same size, a new modification time
    os.utime(path, ns=(10**18 + 1, 10**18 + 1))
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() != first


def test_a_file_just_written_is_never_taken_from_the_cache(tmp_path: Path) -> None:
    """Within one tick of the file clock a rewrite may keep the modification time: a file
    modified less than 2 s ago is hashed afresh every time."""
    path = _trace(tmp_path / "a.txt", 3)
    stamp = path.stat().st_mtime_ns
    first = file_sha256(path)
    _trace(path, 3, step_ns=20_000_000)
    os.utime(path, ns=(stamp, stamp))  # the worst case: the same size and time
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() != first


# ------------------------------------------------------------------------------ reading errors
def _doc(tmp_path: Path) -> dict:
    return _plan({"A": _trace(tmp_path / "a.txt", 2)}).to_json()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d["tenants"][0]["trace"].update(sha256="abc"), "tenants[0].trace.sha256", "hex"),
        (lambda d: d["tenants"][0]["trace"].update(pth="x"), "tenants[0].trace.pth", "unknown"),
        (lambda d: d["tenants"][0]["trace"].update(path=""), "tenants[0].trace.path", "string"),
        (lambda d: d["tenants"][0]["trace"].update(format=3), "tenants[0].trace.format", "string"),
        (lambda d: d["tenants"][0].pop("trace"), "tenants[0].trace", "records inputs"),
        (lambda d: d.update(inputs=None), "tenants[0].trace", "without the plan's inputs"),
        (lambda d: d.update(inputs=[]), "inputs", "object or null"),
        (lambda d: d["inputs"].update(link_bandwidth_bytes_per_s=0), "inputs.link_band", "posit"),
        (lambda d: d["inputs"].update(profile="p.json"), "inputs.profile", "object or null"),
        (lambda d: d["inputs"].update(profil=None), "inputs.profil", "unknown key"),
        (lambda d: d.update(version=2), "inputs", "unknown key"),
        (lambda d: (d.update(version=2), d.pop("inputs")), "tenants[0].trace", "unknown key"),
    ],
)
def test_a_malformed_inputs_record_names_its_field(
    tmp_path: Path, change, field: str, message: str
) -> None:
    doc = _doc(tmp_path)
    change(doc)
    with pytest.raises(ConfigError, match=message) as e:
        Plan.from_json(doc, path="p.json")
    assert e.value.field is not None and e.value.field.startswith(field)
    assert e.value.path == "p.json"


def test_version_2_plans_are_read_without_inputs(tmp_path: Path) -> None:
    doc = _doc(tmp_path)
    doc.update(version=2)
    del doc["inputs"]
    del doc["tenants"][0]["trace"]
    plan = Plan.from_json(doc)
    assert plan.inputs is None and plan.version == 2


# ------------------------------------------------------------------------------ consuming
def test_a_changed_trace_is_refused_naming_the_plan_and_field(tmp_path: Path) -> None:
    traces = {"A": _trace(tmp_path / "a.txt", 2), "B": _trace(tmp_path / "b.txt", 2)}
    _plan(traces).save(tmp_path / "plan.json")
    _trace(traces["B"], 2, step_ns=20_000_000)  # same size, other bytes
    plan = Plan.load(tmp_path / "plan.json")
    assert resolve_inputs(plan, tmp_path / "plan.json", ["A"]).traces["A"].path == traces["A"]
    with pytest.raises(ConfigError, match="changed since planning") as e:
        resolve_inputs(plan, tmp_path / "plan.json", ["A", "B"])
    assert e.value.field == "tenants[1].trace.sha256"
    assert e.value.path == str(tmp_path / "plan.json")
    assert len(str(e.value).splitlines()) == 1


def test_a_missing_trace_is_refused_naming_the_plan_and_field(tmp_path: Path) -> None:
    _plan({"A": _trace(tmp_path / "a.txt", 2)}).save(tmp_path / "plan.json")
    (tmp_path / "a.txt").unlink()
    plan = Plan.load(tmp_path / "plan.json")
    with pytest.raises(ConfigError, match="no trace file") as e:
        resolve_inputs(plan, tmp_path / "plan.json", ["A"])
    assert e.value.field == "tenants[0].trace.path"


@pytest.mark.parametrize(("version", "says"), [(2, "this plan (version 2) records no"), (3, "")])
def test_a_plan_recording_no_inputs_asks_for_tenants(
    tmp_path: Path, version: int, says: str
) -> None:
    doc = Plan("test", 1, [_tenant("A")]).to_json()
    doc["version"] = version
    if version == 2:
        del doc["inputs"]
    plan = Plan.from_json(doc)
    with pytest.raises(ConfigError, match="pass --tenants and --profile") as e:
        resolve_inputs(plan, "p.json", ["A"])
    assert says in str(e.value) and e.value.field == "inputs"
    # the tenants file joins by name, as before version 3
    trace = _trace(tmp_path / "a.txt", 2)
    tenants = _tenants_file(tmp_path / "tenants.json", {"A": trace, "Z": trace})
    got = resolve_inputs(plan, "p.json", ["A"], tenants=tenants)
    assert got.traces["A"].path == trace and got.link_bytes_per_s is None and got.profile is None
    with pytest.raises(ConfigError, match="no device profile") as e:
        got.device_profile()


def test_overrides_win_over_what_the_plan_records(tmp_path: Path) -> None:
    recorded = _trace(tmp_path / "a.txt", 2)
    _plan({"A": recorded}).save(tmp_path / "plan.json")
    _trace(recorded, 7)  # changed: refused alone, but an override replaces it
    other = _trace(tmp_path / "other.txt", 3)
    tenants = _tenants_file(tmp_path / "tenants.json", {"A": other})
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({**PROFILE, "readMPL": 4}))
    plan = Plan.load(tmp_path / "plan.json")
    got = resolve_inputs(
        plan, tmp_path / "plan.json", ["A"], tenants=tenants, profile=profile, link_bytes_per_s=1e6
    )
    assert got.traces["A"].path == other and got.link_bytes_per_s == 1e6
    assert got.device_profile().read_mpl == 4 and got.profile_source == str(profile)
    # what a plan made from them records: the overrides
    assert got.inputs == PlanInputs.record(
        {"A": other}, link_bytes_per_s=1e6, profile={**PROFILE, "readMPL": 4}
    )
    missing = _tenants_file(tmp_path / "t2.json", {"Z": other})
    with pytest.raises(ConfigError, match=r"no tenant for planned tenants \['A'\]"):
        resolve_inputs(plan, tmp_path / "plan.json", ["A"], tenants=missing)


def test_a_malformed_embedded_profile_is_named_with_the_plan(tmp_path: Path) -> None:
    plan = _plan({"A": _trace(tmp_path / "a.txt", 2)})
    assert plan.inputs is not None
    bad = dataclasses.replace(plan.inputs, profile={"type": "storageSSD", "bandwidthTable": []})
    dataclasses.replace(plan, inputs=bad).save(tmp_path / "plan.json")
    got = resolve_inputs(Plan.load(tmp_path / "plan.json"), tmp_path / "plan.json", ["A"])
    with pytest.raises(ConfigError, match="bandwidthTable") as e:
        got.device_profile()
    assert str(e.value).startswith(f"{tmp_path / 'plan.json'} inputs.profile")
