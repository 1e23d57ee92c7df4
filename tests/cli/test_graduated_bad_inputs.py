"""Bad Nested QoS input through the command line (issue 25's evidence): grades whose fractions
lie outside (0, 1] or do not increase (or whose latencies do not), classes that are not nested
(``σ``, ``ρ`` or ``δ`` decreasing outward), a graduated SLO given to a policy or analysis that
plans for one latency and percentile, and classes on a device whose scheduler would ignore
them — each exit 2 with one line naming the file, the tenant's field and what is wrong, and
nothing written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.cli.test_bad_inputs import run_bad

from tailbound.model import Slo
from tailbound.plan import Bound, Discipline, DispatchRule, NestedClass, Plan, TenantPlan
from tailbound.profiles.tokens import SsdProfile
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces import Trace, write_parquet

PROFILE = SsdProfile(
    sizes=np.array([4096.0]),
    read_bandwidth=np.array([8e7]),
    write_bandwidth=np.array([4e7]),
    read_mpl=1,
    write_mpl=1,
)
GOOD = [[0.005, 0.9], [0.05, 0.99]]
CLASSES = [[0.001, 0.1, 0.005], [0.002, 0.2, 0.05]]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A profile and two traces of 4 KiB reads beside the tenants files the tests write."""
    (tmp_path / "profile.json").write_text(json.dumps(PROFILE.to_json()))
    for name in ("A", "B"):
        trace = Trace.from_arrays(time=np.arange(50) * 0.01, op=[0] * 50, size=[4096] * 50)
        write_parquet(trace, tmp_path / f"{name}.parquet")
    return tmp_path


def _tenants(tmp: Path, grades_b: Any, name: str = "tenants.json") -> Path:
    entries = [
        {"name": n, "trace": f"{n}.parquet", "server_host": "s0", "device": "ssd0"}
        | ({"slo_s": 0.01, "percentile": 0.99} if n == "A" else {"slo_grades": grades_b})
        for n in ("A", "B")
    ]
    path = tmp / name
    path.write_text(json.dumps({"tenants": entries, "ssd_profile": "profile.json"}))
    return path


def _written(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir())


@pytest.mark.parametrize(
    ("grades", "field", "words"),
    [
        ([[0.005, 0.0], [0.05, 0.99]], "slo_grades[0]", "fraction must be in (0, 1]"),
        ([[0.005, 0.9], [0.05, 1.5]], "slo_grades[1]", "fraction must be in (0, 1]"),
        ([[0.005, -0.1]], "slo_grades[0]", "fraction must be in (0, 1]"),
        ([[0.005, 0.9], [0.05, 0.9]], "slo_grades[1]", "fractions must increase"),
        ([[0.005, 0.99], [0.05, 0.9]], "slo_grades[1]", "fractions must increase"),
        ([[0.05, 0.9], [0.005, 0.99]], "slo_grades[1]", "latencies must increase"),
    ],
)
def test_bad_grades_are_refused_by_admit(
    files: Path, grades: Any, field: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = _tenants(files, grades)
    before = _written(files)
    out = files / "plan.json"
    args = ["admit", "--tenants", str(tenants), "--policy", "nested-qos", "--out", str(out)]
    run_bad(args, capsys, f"{tenants}, field tenants[1].{field}", words)
    assert _written(files) == before


def _plan_doc(tmp: Path, edit: Any = None) -> Path:
    """The plan ``tailbound admit --policy nested-qos`` writes for the good tenants file, with
    ``edit`` applied to tenant B's document."""
    tenants = _tenants(tmp, GOOD, "good.json")
    path = tmp / "plan.json"
    from tailbound.cli.main import main

    assert (
        main(["admit", "--tenants", str(tenants), "--policy", "nested-qos", "--out", str(path)])
        == 0
    )
    doc = json.loads(path.read_text())
    assert doc["tenants"][1]["name"] == "B" and "nested" in doc["tenants"][1]
    if edit is not None:
        edit(doc["tenants"][1])
    path.write_text(json.dumps(doc))
    return path


NOT_NESTED = [
    ([[0.002, 0.1, 0.005], [0.001, 0.2, 0.05]], "class 2 has sigma_s 0.001 < 0.002 of class 1"),
    ([[0.001, 0.2, 0.005], [0.002, 0.1, 0.05]], "class 2 has rho 0.1 < 0.2 of class 1"),
    ([[0.001, 0.1, 0.05], [0.002, 0.2, 0.005]], "class 2 has delta_s 0.005 < 0.05 of class 1"),
]


@pytest.mark.parametrize(("classes", "words"), NOT_NESTED)
@pytest.mark.parametrize("verb", ["verify", "gate", "export"])
def test_classes_not_nested_are_refused_by_every_reader_of_the_plan(
    files: Path, classes: Any, words: str, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan_doc(files, lambda t: t.__setitem__("nested", {"storage": classes}))
    capsys.readouterr()
    before = _written(files)
    args = {
        "verify": ["verify", "--plan", str(plan), "--out", str(files / "out")],
        "gate": [
            *("gate", "--plan", str(plan), "--backend", str(files / "gate")),
            *("--write-config", str(files / "gate.json")),
        ],
        "export": ["export", "qemu", str(plan), "--out", str(files / "qemu.txt")],
    }[verb]
    run_bad(args, capsys, f"{plan}, field tenants[1].nested.storage: classes must be nested", words)
    assert _written(files) == before


@pytest.mark.parametrize(
    "args",
    [
        ["admit", "--policy", "dnc"],
        ["admit", "--policy", "snc-meister"],
        ["bound", "--analysis", "silo"],
        ["bound"],
        [
            *("place", "--policy", "workloadcompactor"),
            *("--cluster", "cluster.json", "--profile", "profile.json"),
        ],
    ],
    ids=["admit-dnc", "admit-snc-meister", "bound-silo", "bound-default", "place"],
)
def test_a_graduated_slo_is_refused_by_a_single_pair_policy(
    files: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = _tenants(files, GOOD)
    before = _written(files)
    argv = [*args, "--tenants", str(tenants), "--out", str(files / "out.json")]
    argv = [a if not a.endswith(".json") or "/" in a else str(files / a) for a in argv]
    run_bad(
        argv,
        capsys,
        f"{tenants}, field tenants[1].slo_grades: tenant B has a graduated SLO",
        "cannot honour",
        "use tailbound admit --policy nested-qos",
    )
    assert _written(files) == before


def test_prioritize_refuses_a_plan_with_a_graduated_slo(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan_doc(files)
    capsys.readouterr()
    args = ["prioritize", "--plan", str(plan), "--out", str(files / "out.json")]
    run_bad(
        args,
        capsys,
        f"{plan}, field tenants[1].slo_grades: tenant B has a graduated SLO",
        "prioritymeister cannot honour",
    )
    assert not (files / "out.json").exists()


def _classes_on(discipline: str) -> Plan:
    t = TenantPlan(
        "B",
        Slo.graduated([(0.005, 0.9), (0.05, 0.99)]),
        "s0",
        "ssd0",
        dict.fromkeys(STORAGE_PATH, 0),
        {},
        Bound(0.005, "test", 0.9),
        nested={Stage.STORAGE: tuple(NestedClass(*c) for c in CLASSES)},
    )
    plain = dataclasses.replace(t, name="A", slo=Slo(0.01, 0.99), nested={})
    storage = {
        **dict.fromkeys(STORAGE_PATH, Discipline("fifo")),
        Stage.STORAGE: Discipline(discipline),
    }
    return Plan("test", 1, [plain, t], disciplines=storage, dispatch=DispatchRule(read_mpl=1))


@pytest.mark.parametrize("discipline", ["edf", "priority", "pclock", "fifo"])
def test_the_gateway_refuses_classes_its_scheduler_would_ignore(
    tmp_path: Path, discipline: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plan whose tenant gives classes on a device scheduled otherwise than ``nested`` would
    run without them: ``tailbound gate`` refuses it (``--fifo``, the unenforced baseline, runs
    it, and so does the plan scheduled ``nested``)."""
    from tailbound.cli.main import main

    (tmp_path / "profile.json").write_text(json.dumps(PROFILE.to_json()))
    plan = tmp_path / "plan.json"
    _classes_on(discipline).save(plan)
    base = ["gate", "--plan", str(plan), "--profile", str(tmp_path / "profile.json")]
    base += ["--backend", str(tmp_path / "gate")]
    config = tmp_path / "gate.json"
    run_bad(
        [*base, "--write-config", str(config)],
        capsys,
        f"{plan}, field tenants[1].nested.storage: tenant B has Nested QoS classes but device "
        f"s0.ssd0 is scheduled '{discipline}', which ignores them",
    )
    assert not config.exists()
    assert main([*base, "--fifo", "--write-config", str(config)]) == 0
    _classes_on("nested").save(plan)
    assert main([*base, "--write-config", str(config)]) == 0
    assert json.loads(config.read_text())["scheduler"] == {
        "kind": "nested",
        "classes": [[], CLASSES],
    }
