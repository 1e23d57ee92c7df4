"""The bad-input corpus (``tests/cli/bad_inputs``): every case exits 2 with one line on stderr
naming the file and the entry, line or field, no traceback, nothing written, within the limits
(issue 15)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tailbound.cli.main import main
from tailbound.plan import Plan

CORPUS = Path(__file__).parent / "bad_inputs"


def run_bad(args: list[str], capsys: pytest.CaptureFixture[str], *must_name: str) -> None:
    start = time.perf_counter()
    code = main(args)
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert code == 2, (args, captured.out, err)
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "Traceback" not in captured.out
    for text in must_name:
        assert text in err, (text, err)
    assert seconds < 30, f"{args}: {seconds:.1f} s"


SIMULATE = [
    ("mtu_tiny.toml", "field network.mtu_bytes"),
    ("duration_nan.toml", "field duration_s"),
    ("duration_inf.toml", "field duration_s"),
    ("misspelt_key.toml", "field workloads[0].slo.percentil"),
    ("synthetic_rate_huge.toml", "field workloads[0].trace.synthetic.rate"),
    ("request_of_a_terabyte.toml", "workload 'A', request 0"),
    ("request_of_40_gigabytes.toml", "workload 'A', request 0"),
    ("scenario.yaml", "a .toml or a .json file"),
    ("infinity.json", "Infinity at line 1"),
]


@pytest.mark.parametrize(("name", "names"), SIMULATE)
def test_bad_scenario_is_one_line_exit_2(
    name: str, names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = shutil.copy(CORPUS / "simulate" / name, tmp_path / name)
    run_bad(["simulate", str(scenario)], capsys, str(scenario), names)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no plot written


@pytest.mark.parametrize(
    ("option", "value"),
    [("--until", "-1"), ("--until", "nan"), ("--window-s", "0"), ("--window-s", "inf")],
)
def test_bad_simulate_option_is_a_usage_error(
    option: str, value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = shutil.copy(CORPUS / "simulate" / "valid.toml", tmp_path / "valid.toml")
    run_bad(["simulate", str(scenario), option, value], capsys, f"argument {option}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["valid.toml"]


def test_valid_corpus_scenario_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The base of the bad scenarios is valid: each bad case differs from it in one field."""
    scenario = shutil.copy(CORPUS / "simulate" / "valid.toml", tmp_path / "valid.toml")
    assert main(["simulate", str(scenario), "--no-plot"]) == 0


CHARACTERIZE = [
    ("negative_time.ascii", ["--format", "msnfs"], "line 2, field time"),
    ("huge_time.ascii", ["--format", "msnfs"], "line 2, field time"),
    ("zero_duration.txt", [], "field duration_s"),
    ("azure_after_2262.csv", ["--format", "azure-llm"], "line 3, field TIMESTAMP"),
]


@pytest.mark.parametrize(("name", "options", "names"), CHARACTERIZE)
def test_bad_trace_is_one_line_exit_2_and_writes_nothing(
    name: str,
    options: list[str],
    names: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    good = tmp_path / "good.txt"
    good.write_text("0,0x1000,DiskRead\n500000000,0x2000,DiskWrite\n1000000000,0x1000,DiskRead\n")
    bad = shutil.copy(CORPUS / "characterize" / name, tmp_path / name)
    out = tmp_path / "out"
    # the good trace first: its curves must not be written either
    args = ["characterize", str(good), str(bad), *options, "--out", str(out), "--quiet"]
    if options:  # a format applies to every trace: give the bad one alone
        args = ["characterize", str(bad), *options, "--out", str(out), "--quiet"]
    run_bad(args, capsys, str(bad), names)
    assert not out.exists()


@pytest.mark.parametrize("mode", [[], ["--exact"], ["--rates", "5"]])
def test_characterize_refuses_a_stage_too_slow_for_the_trace(
    mode: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1 byte/s link leaves no rate between the trace's mean and the whole stage: no curve."""
    trace = tmp_path / "good.txt"
    trace.write_text(GOOD_TRACE)
    out = tmp_path / "out"
    args = ["characterize", str(trace), "--link-bandwidth", "1", *mode, "--out", str(out)]
    run_bad(args, capsys, str(trace), "mean rate is 9816 of net_in's capacity")
    assert not out.exists()
    # asked for explicitly, the exact curve above the stage's capacity is still drawn
    args = ["characterize", str(trace), "--link-bandwidth", "1", "--out", str(out)]
    assert main([*args, "--exact", "--max-rate", "inf", "--quiet"]) == 0
    assert (out / "good.net_in.rb.csv").exists()


def test_duplicate_stems_are_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.txt").write_text("0,0x1000,DiskRead\n1000000000,0x1000,DiskRead\n")
    out = tmp_path / "out"
    args = ["characterize", str(tmp_path / "a/t.txt"), str(tmp_path / "b/t.txt"), "--out", str(out)]
    run_bad(args, capsys, str(tmp_path / "b/t.txt"), "file stem 't'")
    assert not out.exists()


def test_characterize_out_onto_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text("0,0x1000,DiskRead\n1000000000,0x1000,DiskRead\n")
    out = tmp_path / "out"
    out.write_text("not a folder")
    run_bad(["characterize", str(trace), "--out", str(out)], capsys, str(out), "folder")
    assert out.read_text() == "not a folder"


TENANTS = [
    ('{"tenants": [{"name": "A", "slo_s": "fast", "trace": "t.txt"}]}', "tenants[0].slo_s"),
    ('{"tenants": [{"name": "A", "slo_s": null, "trace": "t.txt"}]}', "tenants[0].slo_s"),
    ('{"tenants": [{"name": "A", "slo_s": 1e400, "trace": "t.txt"}]}', "tenants[0].slo_s"),
    (
        '{"tenants": [{"name": "A", "slo_s": 0.1, "percentil": 0.9, "trace": "t.txt"}]}',
        "tenants[0].percentil",
    ),
]


@pytest.mark.parametrize("verb", ["bound", "admit"])
@pytest.mark.parametrize(("document", "names"), TENANTS)
def test_bad_tenants_file_is_one_line_exit_2(
    verb: str, document: str, names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = tmp_path / "tenants.json"
    tenants.write_text(document)
    out = tmp_path / "out" / "plan.json"
    run_bad([verb, "--tenants", str(tenants), "--out", str(out)], capsys, str(tenants), names)
    assert not out.parent.exists()


def _plan(**tenant: object) -> dict[str, object]:
    """A valid plan of two network tenants; ``tenant`` changes the second."""
    base = {
        "server": "s0",
        "device": None,
        "slo_s": 0.05,
        "percentile": 0.99,
        "priority": {"net_in": 0, "net_out": 0},
        "stages": {},
        "latency_bound_s": None,
        "bound": None,
    }
    return {
        "format": "tailbound-plan",
        "version": 2,
        "policy": "snc-meister",
        "servers_used": 1,
        "safety_margin": 1.0,
        "priority_levels": 8,
        "tenants": [{**base, "name": "A"}, {**base, "name": "B", **tenant}],
        "rejected": [],
    }


PLANS = [
    ({"slo_s": -1}, "tenants[1].slo_s"),
    ({"percentile": 1.5}, "tenants[1].percentile"),
    ({"name": "A"}, "tenants[1].name"),
    ({"percentil": 0.9}, "tenants[1].percentil"),
    ({"priority": {"net_in": 0, "net_out": 9}}, "tenants[1].priority.net_out"),
]


@pytest.mark.parametrize(("change", "names"), PLANS)
def test_prioritize_refuses_a_bad_plan(
    change: dict[str, object], names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    good = tmp_path / "good.json"
    good.write_text(json.dumps(_plan()))
    Plan.load(good)  # the base is valid: the change is what is refused
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_plan(**change)))
    out = tmp_path / "out" / "plan-pm.json"
    args = ["prioritize", "--plan", str(plan), "--tenants", str(tmp_path / "t.json")]
    run_bad(
        [*args, "--profile", str(tmp_path / "p.json"), "--out", str(out)], capsys, str(plan), names
    )
    assert not out.parent.exists()


def test_cluster_with_client_hosts_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "cluster.json"
    cluster.write_text(
        '{"link_bandwidth_bytes_per_s": 1.25e8, "client_hosts": 5,'
        ' "server_hosts": [{"name": "s0", "devices": ["ssd0"]}]}'
    )
    tenants = tmp_path / "tenants.json"
    tenants.write_text('{"tenants": [{"name": "A", "slo_s": 0.1, "trace": "t.txt"}]}')
    out = tmp_path / "out" / "plan.json"
    args = ["place", "--tenants", str(tenants), "--cluster", str(cluster), "--out", str(out)]
    args += ["--profile", str(tmp_path / "p.json")]  # read after the cluster
    run_bad(args, capsys, str(cluster), "field client_hosts")
    assert not out.parent.exists()


GOOD_TRACE = "0,0x1000,DiskRead\n500000000,0x2000,DiskWrite\n1000000000,0x1000,DiskRead\n"
PRIORITIZE_TRACES = [
    ("equal_times.txt", "0,0x1000,DiskRead\n0,0x2000,DiskWrite\n", [], "'B'", "duration_s"),
    # every tenant is too much for a 1 byte/s link: the first one is named
    ("good.txt", GOOD_TRACE, ["--link-bandwidth", "1"], "'A'", "at net_in averages 9816"),
    (
        "zero_sizes.txt",
        GOOD_TRACE.replace("0x1000", "0x0").replace("0x2000", "0x0"),
        [],
        "'B'",
        "size",
    ),
]


@pytest.mark.parametrize(("name", "text", "options", "tenant", "names"), PRIORITIZE_TRACES)
def test_prioritize_refuses_a_trace_no_rate_limit_describes(
    name: str,
    text: str,
    options: list[str],
    tenant: str,
    names: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    (tmp_path / "good.txt").write_text(GOOD_TRACE)
    trace = tmp_path / name
    trace.write_text(text)
    storage = {"device": "ssd0", "priority": {"net_in": 0, "storage": 0, "net_out": 0}}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_plan(**storage)))
    tenants = tmp_path / "tenants.json"
    docs = [{"name": n, "slo_s": 0.05, "trace": t} for n, t in (("A", "good.txt"), ("B", name))]
    tenants.write_text(json.dumps({"tenants": docs}))
    out = tmp_path / "out" / "plan-pm.json"
    profile = Path(__file__).resolve().parents[2] / "examples" / "ssd_profile.json"
    args = ["prioritize", "--plan", str(plan), "--tenants", str(tenants), *options]
    args += ["--profile", str(profile), "--out", str(out), "--quiet"]
    run_bad(args, capsys, str(trace), f"tenant {tenant}", names)
    assert not out.parent.exists()


#: The cases that once ran out of memory or time: each in a process of its own, measured.
RESOURCE_CASES = [
    "mtu_tiny.toml",
    "synthetic_rate_huge.toml",
    "request_of_a_terabyte.toml",
    "request_of_40_gigabytes.toml",
    "duration_nan.toml",
]
GIB = 1 << 30


@pytest.mark.parametrize("name", RESOURCE_CASES)
def test_resource_cases_end_within_30_s_and_2_gib(name: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import threading

    scenario = shutil.copy(CORPUS / "simulate" / name, tmp_path / name)
    code = "import sys; from tailbound.cli.main import main; sys.exit(main(sys.argv[1:]))"
    err = tmp_path / "stderr.txt"
    start = time.perf_counter()
    with err.open("w") as stderr:
        child = subprocess.Popen(
            [sys.executable, "-c", code, "simulate", str(scenario), "--no-plot"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        watchdog = threading.Timer(60, child.kill)  # a hang fails below, not forever
        watchdog.start()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak memory
        watchdog.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4
    seconds = time.perf_counter() - start
    assert child.returncode == 2, err.read_text()
    assert len(err.read_text().strip().splitlines()) == 1, err.read_text()
    assert seconds < 30, f"{name}: {seconds:.1f} s"
    peak = usage.ru_maxrss * 1024  # KiB on Linux
    assert 0 < peak < 2 * GIB, f"{name}: {peak / GIB:.2f} GiB"
