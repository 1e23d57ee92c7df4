"""The ``bound`` and ``admit`` verbs end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tailbound.characterize import rb_curve
from tailbound.cli.main import main
from tailbound.model import load_tenants
from tailbound.plan import TENANT_LEVELS, Plan
from tailbound.policies.admission_policies import SncRule
from tailbound.profiles.tokens import stage_model
from tailbound.stages import Stage
from tailbound.traces import read_trace
from tailbound.verify import replay_plan


@pytest.fixture
def tenants_file(tmp_path: Path, data_dir: Path) -> Path:
    data = data_dir
    traces = tmp_path / "traces"
    traces.mkdir()
    tenants = []
    for i, slo in enumerate([0.02, 0.05, 0.0005]):
        (traces / f"t{i}.txt").symlink_to(data / "wc62" / "traces" / f"trace{i:04d}.txt")
        tenants.append(
            {
                "name": f"T{i}",
                "slo_s": slo,
                "trace": f"traces/t{i}.txt",
                "client_host": "c0",
                "server_host": f"s{i % 2}",
            }
        )
    path = tmp_path / "tenants.json"
    path.write_text(json.dumps({"tenants": tenants}))
    return path


def test_bound_writes_a_plan(tenants_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "bounds.json"
    # T2's 0.5 ms SLO is below its bound: the plan is written and the exit status says so
    assert main(["bound", "--tenants", str(tenants_file), "--out", str(out)]) == 1
    plan = Plan.load(out)
    assert plan.policy == "snc-meister" and not plan.rejected
    assert [t.name for t in plan.tenants] == ["T0", "T1", "T2"]
    for t in plan.tenants:
        assert t.device is None and t.stages == (Stage.NET_IN, Stage.NET_OUT)
        assert t.bound.analysis == "snc-meister" and t.bound.percentile == t.percentile == 0.999
        parts = t.bound.stages
        assert t.latency_bound_s == pytest.approx(parts[Stage.NET_IN] + parts[Stage.NET_OUT])
        assert not t.limits  # SNC-Meister enforces priorities only
    assert [t.priority[Stage.NET_IN] for t in plan.tenants] == [1, 2, 0]
    assert plan.tenants[2].latency_bound_s > plan.tenants[2].slo_s  # T2 misses (0.5 ms SLO)
    captured = capsys.readouterr()
    assert "T2" in captured.out
    assert captured.err == ""  # stderr is not a terminal: no progress


def test_bound_and_admit_show_progress_on_a_terminal(  # type: ignore[no-untyped-def]
    tenants_file: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main(["bound", "--tenants", str(tenants_file), "--out", str(tmp_path / "b.json")])
    # one fit per trace and direction: 3 network tenants, request and response
    assert "MMPP fits: 6" in capsys.readouterr().err
    main(["admit", "--tenants", str(tenants_file), "--out", str(tmp_path / "a.json")])
    err = capsys.readouterr().err
    assert "admission: 100%" in err and "3/3" in err
    args = ["admit", "--tenants", str(tenants_file), "--quiet", "--out", str(tmp_path / "q.json")]
    main(args)
    assert capsys.readouterr().err == ""


def test_admit_writes_a_plan_of_admitted_and_rejected(tenants_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    assert main(["admit", "--tenants", str(tenants_file), "--out", str(out)]) == 0
    plan = Plan.load(out)
    assert [t.name for t in plan.tenants] == ["T0", "T1"]
    (rejected,) = plan.rejected
    assert rejected.name == "T2" and rejected.violated == ("T2",)
    assert rejected.bound is not None and rejected.bound.latency_s > 0.0005
    # by default every prediction is at least the tenant's measured latency alone
    for t in plan.tenants:
        assert t.bound.alone_s is not None and 0 < t.bound.alone_s <= t.latency_bound_s
        assert t.latency_bound_s <= t.slo_s
    plain = tmp_path / "plain.json"
    args = ["admit", "--tenants", str(tenants_file), "--no-alone-floor", "--out", str(plain)]
    assert main(args) == 0
    model = Plan.load(plain)
    assert all(t.bound.alone_s is None for t in model.tenants)
    assert model.meta["rule"] == "SNC bound only (thesis)"
    assert plan.meta["rule"] == SncRule().text()
    floor_only = tmp_path / "floor.json"
    args = ["admit", "--tenants", str(tenants_file), "--no-model-error", "--out", str(floor_only)]
    assert main(args) == 0
    floored = Plan.load(floor_only)
    for t, f, m in zip(plan.tenants, floored.tenants, model.tenants, strict=True):
        assert f.latency_bound_s == pytest.approx(max(m.latency_bound_s, t.bound.alone_s))
        # the model error only adds: what the analysis under-predicts the tenant alone
        assert t.latency_bound_s >= f.latency_bound_s * (1 - 1e-12)


def test_admit_polices_each_tenants_load_by_default(
    tenants_file: Path, tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "policed.json"
    assert main(["admit", "--tenants", str(tenants_file), "--out", str(out)]) == 0
    assert "work beyond the decision trace's load demoted" in capsys.readouterr().out
    plan = Plan.load(out)
    assert {d.mode for d in plan.disciplines.values()} == {"demotion"}
    # one bucket per direction, the trace's load: its long-run rate and the backlog it builds at
    # that rate (the trace's r-b curve there), so the trace itself is never demoted
    tset = load_tenants(tenants_file)
    for t in plan.tenants:
        trace = read_trace(next(x.trace for x in tset.tenants if x.name == t.name))
        for stage in (Stage.NET_IN, Stage.NET_OUT):
            model = stage_model(stage, link_bandwidth_bytes_per_s=tset.link_bytes_per_s)
            curve = rb_curve(trace, model)
            assert t.extra_limits.get(stage, ()) == ()
            assert t.limits[stage].rate == pytest.approx(curve.mean_rate, rel=1e-9)
            # (the plan's buckets round-trip through bytes: equal to 1e-9, never smaller)
            need = float(curve.bucket_at(curve.mean_rate))
            assert need * (1 - 1e-12) <= t.limits[stage].bucket_s <= need * (1 + 1e-9)
    unpoliced = tmp_path / "unpoliced.json"
    assert (
        main(["admit", "--tenants", str(tenants_file), "--no-police", "--out", str(unpoliced)]) == 0
    )
    assert "demoted" not in capsys.readouterr().out
    plain = Plan.load(unpoliced)
    assert all(not t.limits for t in plain.tenants)
    # policing changes what is enforced, not what is decided
    assert [(t.name, t.latency_bound_s) for t in plain.tenants] == [
        (t.name, t.latency_bound_s) for t in plan.tenants
    ]


def test_an_admission_plan_is_verified_from_its_file(tenants_file: Path, tmp_path: Path) -> None:
    """The hand-off: what `admit` decided is replayed from the file alone, and the replay of the
    decision's own traces stays within the admitted tenants' SLOs here."""
    out = tmp_path / "plan.json"
    assert main(["admit", "--tenants", str(tenants_file), "--out", str(out)]) == 0
    plan = Plan.load(out)
    tset = load_tenants(tenants_file)
    traces = {t.name: read_trace(t.trace).slice_time(0.0, 60.0) for t in tset.tenants}
    v = replay_plan(
        plan,
        {t.name: traces[t.name] for t in plan.tenants},
        link_bandwidth_bytes_per_s=tset.link_bytes_per_s,
        propagation_s=5e-6,
    )
    assert [c.name for c in v.checks] == ["T0", "T1"]
    assert all(c.requests == len(traces[c.name]) for c in v.checks)
    assert all(c.achieved_s > 0 for c in v.checks)


def test_admit_with_joint_floor(tenants_file: Path, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # progress shown
    out = tmp_path / "plan.json"
    args = ["admit", "--tenants", str(tenants_file), "--joint-floor", "--out", str(out)]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "together ms" in captured.out
    # one tick per arrival, whether the screen, the bound or the joint replay decided it
    assert "admission: 100%" in captured.err and "3/3" in captured.err
    plan = Plan.load(out)
    assert [t.name for t in plan.tenants] == ["T0", "T1"]
    for t in plan.tenants:  # admitted: measured together with every admitted tenant
        b = t.bound
        assert b.alone_s is not None and b.joint_s is not None
        assert b.alone_s <= b.joint_s <= t.latency_bound_s <= t.slo_s
    rejected = plan.rejected[0].bound
    assert rejected is not None and rejected.joint_s is None  # rejected by the bound: no replay


def test_bound_with_alone_floor(tenants_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bounds.json"
    args = ["bound", "--tenants", str(tenants_file), "--alone-floor", "--out", str(out)]
    assert main(args) == 1  # T2 misses its 0.5 ms SLO
    for t in Plan.load(out).tenants:
        model = t.bound.stages[Stage.NET_IN] + t.bound.stages[Stage.NET_OUT]
        assert t.bound.alone_s is not None
        assert t.latency_bound_s == pytest.approx(max(model, t.bound.alone_s))


def test_bad_tenants_file_is_one_line_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "t.json"
    p.write_text('{"tenants": [{"name": "a"}]}')
    assert main(["bound", "--tenants", str(p)]) == 2
    err = capsys.readouterr().err
    assert "tenants[0].slo_s" in err
    assert "Traceback" not in err


def test_tenants_without_hosts_are_one_line_errors(data_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["admit", "--tenants", str(data_dir / "wc62" / "tenants.json")]) == 2
    err = capsys.readouterr().err
    assert "tenants[0].client_host" in err and "needs it" in err and "Traceback" not in err


@pytest.mark.parametrize("policy", ["dnc", "silo", "qjump"])
def test_admit_with_dnc_baselines(tenants_file: Path, tmp_path: Path, policy: str) -> None:
    out = tmp_path / "plan.json"
    assert (
        main(["admit", "--tenants", str(tenants_file), "--policy", policy, "--out", str(out)]) == 0
    )
    plan = Plan.load(out)
    assert plan.policy == policy
    # 0.5 ms is below what a 100th-percentile bound of these bursty traces can give
    assert [r.name for r in plan.rejected] == ["T2"]
    assert [t.name for t in plan.tenants] == ["T0", "T1"]
    for t in plan.tenants:
        assert t.bound.percentile == 1.0 and t.latency_bound_s <= t.slo_s
        assert t.buckets(Stage.NET_IN) and t.buckets(Stage.NET_OUT)  # the baselines rate-limit
    mode = "demotion" if policy == "dnc" else "shaping"
    assert plan.discipline(Stage.NET_IN).mode == mode


def test_bound_with_dnc_analysis(tenants_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "bounds.json"
    args = ["bound", "--tenants", str(tenants_file), "--analysis", "dnc", "--out", str(out)]
    assert main(args) == 1  # T2 misses its 0.5 ms SLO
    plan = Plan.load(out)
    assert [t.priority[Stage.NET_IN] for t in plan.tenants] == [1, 2, 0]
    for t in plan.tenants:
        parts = t.bound.stages
        assert t.latency_bound_s == pytest.approx(parts[Stage.NET_IN] + parts[Stage.NET_OUT])
        assert t.latency_bound_s > 0


def test_the_verbs_offer_the_registered_admission_policies() -> None:
    from tailbound.policies.registry import names

    assert names("admission") == (
        *("snc-meister", "snc-hop-by-hop", "snc-convolution"),
        *("dnc", "silo", "qjump"),
        "nested-qos",
        "pslo",
        "aequitas",
    )
    assert names("admission", "snc") == ("snc-meister", "snc-hop-by-hop", "snc-convolution")


def test_admits_default_plan_is_enforceable_on_every_host(tmp_path: Path) -> None:
    """The hand-off: the README's example tenants (four SLO classes, split levels, policing) give
    a plan `tailbound enforce net` accepts on each of its hosts — no tenant on HTB's last
    priority, which is best effort's and the demoted traffic's (plan.TENANT_LEVELS)."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    plan_file = tmp_path / "plan.json"
    assert (
        main(["admit", "--tenants", str(examples / "snc-small.json"), "--out", str(plan_file)]) == 0
    )
    plan = Plan.load(plan_file)
    used = {level for t in plan.tenants for level in t.priority.values()}
    assert max(used) == TENANT_LEVELS - 1  # the split reaches the last tenant level, not beyond
    hosts = json.loads((examples / "hosts-snc-small.json").read_text())["hosts"]
    for host in hosts:
        args = ["enforce", "net", "--plan", str(plan_file), "--host", host, "--dry-run"]
        args += ["--hosts", str(examples / "hosts-snc-small.json"), "--device", "eth0"]
        assert main([*args, "--link-rate", "125000000"]) == 0, host
