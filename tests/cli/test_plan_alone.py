"""A Plan stands alone (plan format version 3, issue 23): ``verify``, ``prioritize`` and
``enforce replay`` given ``--plan`` only, from any working directory, on the wc62 traces (read
where they are, three tenants) and on generated traces; stale, missing and unrecorded inputs
refused with exit status 2 and nothing written; ``--tenants``/``--profile`` as overrides."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tailbound.cli.main import main
from tailbound.plan import Plan

from .test_place import place_args, write_tenants


@pytest.fixture
def placed(tmp_path: Path, wc62_dir: Path) -> Path:
    """A plan of three wc62 tenants by ``tailbound place``, in its own folder."""
    tenants = write_tenants(tmp_path, wc62_dir, [2, 4, 13])
    plan = tmp_path / "plans" / "plan.json"
    plan.parent.mkdir()
    assert main(place_args(tenants, wc62_dir, "--out", str(plan), "--quiet")) == 0
    return plan


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory that is neither the plan's nor the data's."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_place_records_the_inputs(placed: Path, wc62_dir: Path) -> None:
    plan = Plan.load(placed)
    assert plan.inputs is not None and plan.version == 3
    assert plan.inputs.traces["C2"].path == wc62_dir / "traces" / "trace0002.txt"
    assert plan.inputs.traces["C2"].format == "wc"
    assert plan.inputs.link_bytes_per_s == 125e6
    assert plan.inputs.profile == json.loads((wc62_dir / "profile_ssd.json").read_text())


def test_verify_and_prioritize_need_only_the_plan(
    placed: Path, wc62_dir: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rel = Path("..") / "plans" / "plan.json"
    assert main(["verify", "--plan", str(rel), "--out", "v"]) == 0
    assert (elsewhere / "v" / "verify.csv").read_text().count("\n") == 4  # header + 3 tenants
    alone = capsys.readouterr().out
    code = main(["prioritize", "--plan", str(rel), "--k", "2", "--out", "pm.json", "--quiet"])
    assert code in (0, 1)
    pm = Plan.load(elsewhere / "pm.json")
    assert pm.inputs == Plan.load(placed).inputs  # the prioritized plan records them too
    assert pm.meta["k"] == 2
    assert main(["verify", "--plan", "pm.json"]) in (0, 1)
    capsys.readouterr()
    # the same replay as with the tenants file, profile and bandwidth given, as before version 3
    given = ["--tenants", str(placed.parent.parent / "tenants.json"), "--link-bandwidth", "125e6"]
    given += ["--profile", str(wc62_dir / "profile_ssd.json")]
    assert main(["verify", "--plan", str(rel), *given]) == 0
    assert capsys.readouterr().out.split("\n\n")[0] == alone.split("\n\n")[0]


def test_a_changed_trace_is_refused_and_nothing_written(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "run" / "traces"
    for i, name in enumerate(("A", "B")):
        _native(traces / f"{name}.txt", 200 + 50 * i)
    tenants = _tenants(tmp_path / "run" / "tenants.json", traces, ("A", "B"))
    plan = tmp_path / "run" / "plan.json"
    assert main(["admit", "--tenants", str(tenants), "--policy", "dnc", "--out", str(plan)]) == 0
    capsys.readouterr()
    _native(traces / "B.txt", 250, step_ns=7_000_000)
    assert main(["verify", "--plan", str(plan), "--out", "v"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"tailbound verify: error: {plan}, field tenants[1].trace.sha256: tenant")
    assert "changed since planning" in err and len(err.splitlines()) == 1
    assert not (elsewhere / "v").exists()
    assert main(["prioritize", "--plan", str(plan), "--out", "pm.json"]) == 2
    assert "tenants[1].trace.sha256" in capsys.readouterr().err
    assert not (elsewhere / "pm.json").exists()
    # an override of the traces replaces the stale record (joined by name)
    assert main(["verify", "--plan", str(plan), "--tenants", str(tenants)]) in (0, 1)
    (traces / "A.txt").unlink()
    assert main(["verify", "--plan", str(plan)]) == 2
    assert "field tenants[0].trace.path: tenant 'A': no trace file" in capsys.readouterr().err


def test_a_plan_moved_with_its_traces_still_verifies(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    for name in ("A", "B"):
        _native(run / "traces" / f"{name}.txt", 300)
    tenants = _tenants(run / "tenants.json", run / "traces", ("A", "B"))
    assert (
        main(["admit", "--tenants", str(tenants), "--policy", "dnc", "--out", str(run / "p.json")])
        == 0
    )
    doc = json.loads((run / "p.json").read_text())
    assert [t["trace"]["path"] for t in doc["tenants"]] == ["traces/A.txt", "traces/B.txt"]
    shutil.move(run, tmp_path / "copy")
    capsys.readouterr()
    assert main(["verify", "--plan", str(tmp_path / "copy" / "p.json")]) == 0
    assert "2 tenants: 0 SLOs missed" in capsys.readouterr().out


def test_an_old_plan_needs_its_tenants_and_says_so(
    placed: Path, wc62_dir: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(placed.read_text())
    doc["version"] = 2
    del doc["inputs"]
    for t in doc["tenants"]:
        del t["trace"]
    old = elsewhere / "old.json"
    old.write_text(json.dumps(doc))
    assert main(["verify", "--plan", "old.json", "--out", "v"]) == 2
    err = capsys.readouterr().err
    assert (
        "field inputs: this plan (version 2) records no inputs: pass --tenants and --profile" in err
    )
    assert not (elsewhere / "v").exists()
    tenants = write_tenants(elsewhere, wc62_dir, [2, 4, 13])
    assert main(["verify", "--plan", "old.json", "--tenants", str(tenants)]) == 2
    assert "records no profile: give --profile" in capsys.readouterr().err
    profile = str(wc62_dir / "profile_ssd.json")
    given = ["--tenants", str(tenants), "--profile", profile]
    assert main(["verify", "--plan", "old.json", *given]) == 0
    assert main(["prioritize", "--plan", "old.json", "--tenants", str(tenants)]) == 2
    assert "no device profile: give --profile" in capsys.readouterr().err
    assert main(["prioritize", "--plan", "old.json", *given, "--out", "pm.json", "--quiet"]) in (
        0,
        1,
    )
    # the plan prioritize writes from an old plan records the inputs it was given
    pm = Plan.load(elsewhere / "pm.json")
    assert (
        pm.inputs is not None
        and pm.inputs.traces["C4"].path == wc62_dir / "traces" / "trace0004.txt"
    )


def test_enforce_replay_takes_the_traces_from_the_plan(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before any traffic: without ports the hosts file is what is missing (the traces were
    found), and a changed trace is refused."""
    traces = tmp_path / "run" / "traces"
    for name in ("A", "B"):
        _native(traces / f"{name}.txt", 100)
    tenants = _tenants(tmp_path / "run" / "tenants.json", traces, ("A", "B"))
    plan = tmp_path / "run" / "plan.json"
    assert main(["admit", "--tenants", str(tenants), "--policy", "dnc", "--out", str(plan)]) == 0
    hosts = elsewhere / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"c": "127.0.0.1", "s": "127.0.0.1"}}))
    capsys.readouterr()
    replay = ["enforce", "replay", "--plan", str(plan), "--hosts", str(hosts), "--host", "c"]
    assert main(replay) == 2
    assert "ports.A" in capsys.readouterr().err
    _native(traces / "A.txt", 101)
    assert main(replay) == 2
    assert "field tenants[0].trace.sha256" in capsys.readouterr().err


def test_enforce_replay_live_from_the_plan_alone(tmp_path: Path, elsewhere: Path) -> None:
    from tailbound.enforce import replay

    try:
        replay.binary()
    except replay.ReplayError as e:  # pragma: no cover - make install builds it
        pytest.skip(f"no replayer: {e}")
    traces = tmp_path / "run" / "traces"
    for name, n in (("A", 100), ("B", 30)):
        _native(traces / f"{name}.txt", n)
    tenants = _tenants(tmp_path / "run" / "tenants.json", traces, ("A", "B"), link=12_500_000)
    plan = tmp_path / "run" / "plan.json"
    assert main(["admit", "--tenants", str(tenants), "--policy", "dnc", "--out", str(plan)]) == 0
    with socket.socket() as s1, socket.socket() as s2:  # two free ports
        s1.bind(("127.0.0.1", 0))
        s2.bind(("127.0.0.1", 0))
        ports = {"A": s1.getsockname()[1], "B": s2.getsockname()[1]}
    hosts = elsewhere / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"c": "127.0.0.1", "s": "127.0.0.1"}, "ports": ports}))
    tb = [sys.executable, "-m", "tailbound.cli.main", "enforce", "replay", "--plan", str(plan)]
    serve = subprocess.Popen(
        [*tb, "--hosts", str(hosts), "--serve", "--host", "s", "--duration", "20"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=elsewhere,
    )
    try:
        assert serve.stdout is not None and serve.stdout.readline().startswith("serving A, B")
        p = subprocess.run(
            [*tb, "--hosts", str(hosts), "--host", "c", "--drain", "2"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=elsewhere,
        )
    finally:
        serve.kill()
        serve.communicate(timeout=10)
    assert p.returncode in (0, 1), p.stderr
    assert "2 tenants replayed live" in p.stdout and "0 requests unanswered" in p.stdout


def test_the_demo_plans_replay_alone_as_the_demo_did(
    tmp_path: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two routes to one result: the demo's own replay of the second halves, and ``verify``
    given the demo's plan alone with the demo's replay options."""
    assert main(["demo", "--workloads", "4", "--duration", "120", "--out", "demo"]) == 0
    capsys.readouterr()
    plan = Plan.load(elsewhere / "demo" / "plan-workloadcompactor.json")
    assert plan.inputs is not None and plan.inputs.link_bytes_per_s == 1.25e9
    doc = json.loads((elsewhere / "demo" / "plan-workloadcompactor.json").read_text())
    assert doc["tenants"][0]["trace"]["path"].startswith("traces/")
    assert doc["tenants"][0]["trace"]["format"] == "parquet"
    opts = ["--half", "second", "--mode", "demotion", "--mtu", "9000", "--out", "v"]
    assert main(["verify", "--plan", "demo/plan-workloadcompactor.json", *opts]) in (0, 1)
    demo = (elsewhere / "demo" / "verification.csv").read_text().splitlines()
    again = (elsewhere / "v" / "verify.csv").read_text().splitlines()
    column = demo[0].split(",").index("achieved_s")
    assert [r.split(",")[column] for r in demo[1:]] == [r.split(",")[column] for r in again[1:]]


# ------------------------------------------------------------------------------ helpers
def _native(path: Path, n: int, step_ns: int = 10_000_000) -> Path:
    """A native (wc) trace of ``n`` 4 KiB reads every ``step_ns`` nanoseconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{step_ns * (i + 1)},0x1000,DiskRead\n" for i in range(n)))
    return path


def _tenants(
    path: Path, traces: Path, names: tuple[str, ...], *, link: float = 125_000_000
) -> Path:
    """A tenants file of network-only tenants from client ``c`` to server ``s``, traces given
    relative to the file."""
    doc = {
        "link_bandwidth_bytes_per_s": link,
        "tenants": [
            {
                "name": n,
                "slo_s": 1.0,
                "percentile": 0.99,
                "trace": str((traces / f"{n}.txt").relative_to(path.parent)),
                "client_host": "c",
                "server_host": "s",
            }
            for n in names
        ],
    }
    path.write_text(json.dumps(doc))
    return path


def test_gate_and_export_take_the_profile_and_traces_from_the_plan(
    placed: Path, wc62_dir: Path, elsewhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = Plan.load(placed)
    device = f"{plan.tenants[0].server}.{plan.tenants[0].device}"
    gate = ["gate", "--plan", str(placed), "--device", device, "--backend", "b"]
    assert main([*gate, "--write-config", "gate.json"]) == 0
    written = json.loads((elsewhere / "gate.json").read_text())
    profile = ["--profile", str(wc62_dir / "profile_ssd.json")]
    assert main([*gate, *profile, "--write-config", "given.json"]) == 0
    assert json.loads((elsewhere / "given.json").read_text()) == written
    assert main(["export", "nbdkit", str(placed), "--out", "rate.sh"]) in (0, 1)
    assert main(["export", "nbdkit", str(placed), *profile, "--out", "given.sh"]) in (0, 1)
    assert (elsewhere / "rate.sh").read_text() == (elsewhere / "given.sh").read_text()
    fio = ["export", "fio", str(placed), "--device", device, "--half", "second", "--out", "fio"]
    assert main(fio) == 0
    assert (elsewhere / "fio" / "replay.fio").is_file()
    # a plan that records no profile: the verbs say what to pass
    doc = json.loads(placed.read_text())
    doc["version"] = 2
    del doc["inputs"]
    for t in doc["tenants"]:
        del t["trace"]
    (elsewhere / "old.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["gate", "--plan", "old.json", "--backend", "b", "--write-config", "x.json"]) == 2
    err = capsys.readouterr().err
    assert "field inputs.profile: this plan (version 2) records no inputs: pass --profile" in err
    assert main(["export", "fio", "old.json", "--out", "fio2"]) == 2
    assert "pass --tenants" in capsys.readouterr().err
    assert not (elsewhere / "x.json").exists() and not (elsewhere / "fio2").exists()
