"""Replaying plans: WorkloadCompactor's worst-case bounds hold in the simulator, and SLOs promised
on one half of a trace are checked on the other."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tailbound.demo import DEMO_SSD, demo_cluster
from tailbound.model import Slo, Tenant, load_tenants
from tailbound.plan import Bound, Discipline, DispatchRule, NestedClass, Plan, TenantPlan
from tailbound.plan_inputs import with_inputs
from tailbound.policies import registry
from tailbound.policies.placement import place
from tailbound.policies.workload import characterize
from tailbound.policies.workloadcompactor import to_plan
from tailbound.profiles.tokens import SsdProfile
from tailbound.sim.results import percentile
from tailbound.stages import STORAGE_PATH, Stage
from tailbound.traces.fleet import GeneratedTenant, demo_fleet
from tailbound.traces.sizes import FixedSize
from tailbound.traces.synthetic import poisson_trace
from tailbound.traces.tabular import write_parquet
from tailbound.traces.trace import Trace
from tailbound.verify import replay_plan


def plan_fleet(
    fleet: list[GeneratedTenant], traces: dict[str, Trace], link: float, margin: float
) -> Plan:
    characterised = [
        characterize(
            Tenant(w.name, w.slo, Path(w.name)),
            traces[w.name],
            profile=DEMO_SSD,
            link_bandwidth_bytes_per_s=link,
            safety_margin=margin,
        )
        for w in fleet
    ]
    cluster = demo_cluster(len(fleet))
    result = place(characterised, cluster, registry.build("workloadcompactor", "placement"))
    return to_plan(result, cluster, policy="workloadcompactor", safety_margin=margin)


@pytest.mark.parametrize(("seed", "link"), [(0, 1.25e9), (1, 125e6), (2, 125e6)])
def test_replay_never_exceeds_workloadcompactor_bounds(seed: int, link: float) -> None:
    # Planned from the very traces replayed, the DNC bound is a worst case: no request may exceed
    # it (shaper delay + queueing at the three stages, end to end).
    fleet = demo_fleet(12, seed=seed, duration_s=60)
    traces = {w.name: w.trace for w in fleet}
    plan = plan_fleet(fleet, traces, link, margin=1.0)
    assert plan.servers_used >= 1
    v = replay_plan(
        plan,
        {t.name: traces[t.name] for t in plan.tenants},
        profile=DEMO_SSD.to_json(),
        link_bandwidth_bytes_per_s=link,
        mtu_bytes=9000,
    )
    for c in v.checks:
        assert c.requests == len(traces[c.name])
        assert c.max_s <= c.bound_s, (c.name, c.max_s, c.bound_s)
        assert c.bound_s <= c.slo.latency_s


def test_replay_second_half_meets_slos_promised_on_first_half_of_stationary_workloads() -> None:
    # For stationary workloads the first half represents the second, so the plan made from it
    # with the 1.1 safety margin must hold on the replayed second half (paper §5.2). Bursty
    # synthetic fleets can drift between halves; the demo reports such misses.
    rates = [300.0, 900.0, 1500.0, 2500.0, 600.0, 1200.0]
    slos = [0.02, 0.05, 0.05, 0.1, 0.02, 0.2]
    fleet = [
        GeneratedTenant(
            f"p{i}",
            poisson_trace(rate, 120.0, seed=i, sizes=FixedSize(16384), read_fraction=0.7),
            Slo(slo, 0.999),
        )
        for i, (rate, slo) in enumerate(zip(rates, slos, strict=True))
    ]
    plan = plan_fleet(fleet, {w.name: w.trace.first_half() for w in fleet}, 125e6, margin=1.1)
    assert not plan.rejected
    v = replay_plan(
        plan,
        {w.name: w.trace.second_half() for w in fleet},
        profile=DEMO_SSD.to_json(),
        link_bandwidth_bytes_per_s=125e6,
        mtu_bytes=9000,
    )
    assert v.all_met, v.table()
    assert v.violations == []


def test_replay_reports_a_missed_slo() -> None:
    # The same plan replayed at 20× the load: the check must be able to fail.
    fleet = demo_fleet(4, seed=4, duration_s=30)
    plan = plan_fleet(fleet, {w.name: w.trace for w in fleet}, 125e6, margin=1.0)
    v = replay_plan(
        plan,
        {
            t.name: Trace.concat([fleet_trace.scale_time(0.05)] * 20)
            for t in plan.tenants
            for fleet_trace in [next(w.trace for w in fleet if w.name == t.name)]
        },
        profile=DEMO_SSD.to_json(),
        link_bandwidth_bytes_per_s=125e6,
        mode="demotion",
        mtu_bytes=9000,
    )
    assert not v.all_met
    assert v.violations


def test_verify_cli_on_wc62_sound_holds_reference_fails(wc62_dir: Path, tmp_path: Path) -> None:
    """`tailbound place` then `tailbound verify` on the wc62 traces the plan was made from: the
    sound server model's plan holds every SLO and bound (exit 0); the reference system's
    (`--server-model reference`) exceeds bounds at the storage stage (exit 1)."""
    from tailbound.cli.main import main

    common = [
        "--tenants",
        str(wc62_dir / "tenants.json"),
        "--profile",
        str(wc62_dir / "profile_ssd.json"),
    ]
    for model, expected in (("sound", 0), ("reference", 1)):
        plan = tmp_path / f"plan-{model}.json"
        place = ["place", *common, "--cluster", str(wc62_dir / "cluster.json"), "--quiet"]
        code = main([*place, "--fast-first-fit", "--server-model", model, "--out", str(plan)])
        assert code == 0  # both place all 62 on the cluster's 12 servers
        assert len(Plan.load(plan).tenants) == 62
        out = tmp_path / model
        assert main(["verify", "--plan", str(plan), *common, "--out", str(out)]) == expected
        rows = (out / "verify.csv").read_text().splitlines()
        held = [r.split(",")[-1] for r in rows[1:]]
        assert ("False" in held) == (expected == 1)
        assert (out / "verify.png").stat().st_size > 0
    assert main(["verify", "--plan", str(tmp_path / "nope.json"), *common]) == 2


#: A device serving one 4 KiB read at a time in X_4K = 51.2 µs.
GRADED_PROFILE = SsdProfile(
    sizes=np.array([4096.0]),
    read_bandwidth=np.array([8e7]),
    write_bandwidth=np.array([4e7]),
    read_mpl=1,
    write_mpl=1,
)
X_4K = 4096 / 8e7
#: S steady with a graduated SLO, B bursty with one, P a single pair (no classes: best effort).
GRADED_SLOS = {
    "S": Slo.graduated([(0.002, 0.99), (0.02, 1.0)]),
    "B": Slo.graduated([(0.002, 0.5), (0.02, 0.9)]),
    "P": Slo(5.0, 0.5),
}


def _graduated_plan(slos: dict[str, Slo]) -> Plan:
    """S (20% of the device) and B (120% for 2 s) on a ``nested`` device, S's classes covering
    its rate, B's a small envelope; P has no classes."""
    classes = {"S": [(20 * X_4K, 0.3, 0.002)], "B": [(10 * X_4K, 0.1, 0.002)], "P": []}

    def tenant(name: str) -> TenantPlan:
        return TenantPlan(
            name,
            slos[name],
            "s0",
            "ssd0",
            dict.fromkeys(STORAGE_PATH, 0),
            {},
            Bound(math.inf, "test"),
            client_host=f"c-{name}",
            nested=(
                {Stage.STORAGE: tuple(NestedClass(*c) for c in classes[name])}
                if classes[name]
                else {}
            ),
        )

    return Plan(
        "test",
        1,
        [tenant(name) for name in ("S", "B", "P")],
        disciplines={
            **dict.fromkeys(STORAGE_PATH, Discipline("fifo")),
            Stage.STORAGE: Discipline("nested"),
        },
        dispatch=DispatchRule(read_mpl=1, write_mpl=1),
    )


def _graduated_traces() -> dict[str, Trace]:
    def poisson(load: float, seed: int) -> Trace:
        return poisson_trace(load / X_4K, 2.0, seed=seed, sizes=FixedSize(4096), read_fraction=1.0)

    return {"S": poisson(0.2, 1), "B": poisson(1.2, 2), "P": poisson(0.01, 3)}


def test_verify_reports_each_grade_of_a_graduated_slo(tmp_path: Path) -> None:
    """A steady tenant S with a graduated SLO beside a bursty B on a ``nested`` device: S meets
    every grade, B (its excess best effort) misses, and a single-pair tenant P is checked as
    before. Each grade's fraction within its latency agrees with the percentile route: a grade
    is met exactly when the latency at its fraction (inverted CDF) is within its latency."""
    v = replay_plan(
        _graduated_plan(GRADED_SLOS),
        _graduated_traces(),
        profile=GRADED_PROFILE.to_json(),
        link_bandwidth_bytes_per_s=1e11,
    )
    s, b, p = v.checks
    assert [g.met for g in s.grades] == [True, True] and s.met
    assert [g.met for g in b.grades] == [False, False] and not b.met
    assert b.grades[0].within < 0.5 and b.grades[1].within < 0.9
    assert p.grades == () and p.met and p.achieved_s <= 5.0
    assert v.violations == ["B"]
    for c in (s, b):
        latency = v.results[c.name].latency
        for g in c.grades:
            assert g.met == (percentile(latency, g.fraction) <= g.latency_s)
    table = v.table()
    assert "| S | 1 | 2 ms | 99% | 100.00% | yes |" in table
    assert "| B | 2 | 20 ms | 90% |" in table and "| P | 1 |" not in table
    v.grades_to_csv(tmp_path / "grades.csv")
    rows = (tmp_path / "grades.csv").read_text().splitlines()
    assert rows[0] == "tenant,grade,latency_s,fraction,within,met" and len(rows) == 5
    assert rows[-1].startswith("B,2,0.02,0.9,") and rows[-1].endswith(",False")


def test_verify_cli_on_a_graduated_plan_from_a_tenants_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tenants file's ``slo_grades`` reach the plan (through :class:`Tenant`), the plan file
    and ``tailbound verify``, which exits 1 (B misses its grades) and writes
    ``verify-grades.csv``; a tenants file with grades not increasing is exit 2."""
    from tailbound.cli.main import main

    traces = _graduated_traces()
    for name, trace in traces.items():
        write_parquet(trace, tmp_path / f"{name}.parquet")
    (tmp_path / "profile.json").write_text(json.dumps(GRADED_PROFILE.to_json()))
    entries = [
        {"name": "S", "slo_grades": [[0.002, 0.99], [0.02, 1.0]], "trace": "S.parquet"},
        {"name": "B", "slo_grades": [[0.002, 0.5], [0.02, 0.9]], "trace": "B.parquet"},
        {"name": "P", "slo_s": 5.0, "percentile": 0.5, "trace": "P.parquet"},
    ]
    doc = {"tenants": entries, "link_bandwidth_bytes_per_s": 1e11, "ssd_profile": "profile.json"}
    (tmp_path / "tenants.json").write_text(json.dumps(doc))
    tset = load_tenants(tmp_path / "tenants.json")
    assert {t.name: t.slo for t in tset.tenants} == GRADED_SLOS
    plan = with_inputs(
        _graduated_plan({t.name: t.slo for t in tset.tenants}),
        tset,
        profile=tmp_path / "profile.json",
    )
    plan.save(tmp_path / "plan.json")
    assert Plan.load(tmp_path / "plan.json") == plan
    out = tmp_path / "out"
    assert main(["verify", "--plan", str(tmp_path / "plan.json"), "--out", str(out)]) == 1
    rows = (out / "verify-grades.csv").read_text().splitlines()
    assert [r.split(",")[:2] for r in rows[1:]] == [["S", "1"], ["S", "2"], ["B", "1"], ["B", "2"]]
    assert [r.split(",")[-1] for r in rows[1:]] == ["True", "True", "False", "False"]
    entries[1]["slo_grades"] = [[0.002, 0.5], [0.02, 0.5]]
    (tmp_path / "bad.json").write_text(json.dumps({**doc, "tenants": entries}))
    args = [
        "verify",
        "--plan",
        str(tmp_path / "plan.json"),
        "--tenants",
        str(tmp_path / "bad.json"),
    ]
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "bad.json, field tenants[1].slo_grades[1]: fraction 0.5 not above 0.5" in err, err
