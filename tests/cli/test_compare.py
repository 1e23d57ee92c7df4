"""``tailbound compare`` end to end on a few wc62 tenants: a row per placement policy and server
model and per admission policy, each plan saved and replayed, the CSV and the plot written; rows
with the reason where a policy cannot run; bad input exits 2 naming the file or option."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tailbound import compare
from tailbound.cli.main import main
from tailbound.plan import Plan
from tailbound.policies.registry import names

#: wc62 tenants (index, SLO s) every placement and admission policy can run on.
CHOSEN = ((0, 0.2), (4, 0.1), (5, 0.95))


def tenants_file(folder: Path, wc62: Path, *, hosts: bool = True, **extra: object) -> Path:
    """Three wc62 tenants, with client and server hosts when ``hosts``; ``extra`` fields for
    the first tenant (``slo_grades`` replacing its ``slo_s`` and ``percentile``)."""
    tenants = []
    for k, (i, slo) in enumerate(CHOSEN):
        t: dict[str, object] = {
            "name": f"C{i}",
            "slo_s": slo,
            "percentile": 0.999,
            "trace": str(wc62 / "traces" / f"trace{i:04d}.txt"),
        }
        if hosts:
            t |= {"client_host": f"client{k % 2}", "server_host": f"server{k % 2}"}
        tenants.append(t)
    if "slo_grades" in extra:  # instead of slo_s and percentile
        del tenants[0]["slo_s"], tenants[0]["percentile"]
    tenants[0] |= extra
    path = folder / "tenants.json"
    path.write_text(json.dumps({"link_bandwidth_bytes_per_s": 125e6, "tenants": tenants}))
    return path


def args(tenants: Path, wc62: Path, out: Path, *extra: str) -> list[str]:
    return [
        "compare",
        "--tenants",
        str(tenants),
        "--cluster",
        str(wc62 / "cluster.json"),
        "--profile",
        str(wc62 / "profile_ssd.json"),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def everything(
    tmp_path_factory: pytest.TempPathFactory, wc62_dir: Path
) -> Iterator[tuple[int, str, Path]]:
    """Every policy on three tenants with hosts (``--grow``): exit code, stdout, out folder."""
    folder = tmp_path_factory.mktemp("compare")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TAILBOUND_CACHE", str(folder / "fit-cache"))
        import contextlib
        import io

        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            code = main(args(tenants_file(folder, wc62_dir), wc62_dir, folder / "out", "--grow"))
        yield code, stdout.getvalue(), folder / "out"


def table_rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


def test_compare_runs_every_policy_under_both_models(everything: tuple[int, str, Path]) -> None:
    code, stdout, _ = everything
    assert code == 0
    header, *rows = table_rows(stdout)
    assert header == [c[0] for c in compare.COLUMNS]
    expected = [
        (p.replace("average-rate:K", "average-rate:2"), m)
        for p in names("placement")
        for m in ("sound", "reference")
    ] + [(p, "-") for p in names("admission") if p != "aequitas"]  # RPC tenants: not compared
    assert [(r[0], r[1]) for r in rows] == expected
    by = {(r[0], r[1]): dict(zip(header, r, strict=True)) for r in rows}
    # WorkloadCompactor places all three under either model and its sound bounds hold
    for model in ("sound", "reference"):
        assert by["workloadcompactor", model]["placed"] == "3 of 3"
    sound = by["workloadcompactor", "sound"]
    assert sound["bounds exceeded"] == "0" and float(sound["worst"]) <= 1.0
    assert by["snc-meister", "-"]["placed"].endswith("of 3")
    # no graduated or throughput SLOs here: those policies are rows with the reason
    assert "missing" in by["pslo", "-"]["note"]
    assert "missing" in by["nested-qos", "-"]["note"]


def test_compare_writes_the_csv_the_plot_and_verifiable_plans(
    everything: tuple[int, str, Path],
) -> None:
    code, _, out = everything
    assert code == 0
    with open(out / "compare.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == [c[1] for c in compare.COLUMNS] + ["tenants", "verify_s", "plan"]
    assert len(rows) == 2 * len(names("placement")) + len(names("admission")) - 1  # aequitas
    assert (out / "compare.png").stat().st_size > 10_000
    wc = next(r for r in rows if (r["policy"], r["server_model"]) == ("workloadcompactor", "sound"))
    plan = Plan.load(wc["plan"])
    assert plan.meta["server_model"] == "sound" and len(plan.tenants) == int(wc["placed"])
    assert plan.servers_used == int(wc["servers"])
    # the replay's per-tenant CSV is verify's, and its worst ratio is the row's
    with open(out / "verify" / "place-workloadcompactor-sound.csv", newline="") as f:
        checks = list(csv.DictReader(f))
    assert {"bound_held", "met"} <= set(checks[0])
    worst = max(float(c["at_bound_s"]) / float(c["bound_s"]) for c in checks)
    assert worst == pytest.approx(float(wc["worst_ratio"]))
    assert sum(c["bound_held"] == "False" for c in checks) == int(wc["bounds_exceeded"])


def test_compare_without_hosts_gives_admission_rows_the_reason(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    tenants = tenants_file(tmp_path, wc62_dir, hosts=False)
    code = main(args(tenants, wc62_dir, tmp_path / "out", "--policies", "knee,dnc"))
    assert code == 0
    header, *rows = table_rows(capsys.readouterr().out)
    assert [(r[0], r[1]) for r in rows] == [("knee", "sound"), ("knee", "reference"), ("dnc", "-")]
    dnc = dict(zip(header, rows[2], strict=True))
    assert dnc["placed"] == "-" and "no hosts" in dnc["note"]
    assert "tenants[0].client_host" in dnc["note"]


def test_compare_graduated_slo_is_a_row_not_a_crash(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    tenants = tenants_file(tmp_path, wc62_dir, hosts=False, slo_grades=[[0.2, 0.999], [0.5, 1.0]])
    code = main(args(tenants, wc62_dir, tmp_path / "out", "--policies", "workloadcompactor"))
    assert code == 0
    header, *rows = table_rows(capsys.readouterr().out)
    assert len(rows) == 2
    for row in rows:
        assert "tenants[0].slo_grades" in dict(zip(header, row, strict=True))["note"]


def test_compare_a_failing_policy_is_a_row_with_the_reason(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(name: str, kind: str, *a: object, **k: object) -> object:
        raise RuntimeError(f"{name} broke")

    monkeypatch.setattr(compare, "build", broken)
    tenants = tenants_file(tmp_path, wc62_dir)
    code = main(args(tenants, wc62_dir, tmp_path / "out", "--policies", "knee"))
    assert code == 0
    header, *rows = table_rows(capsys.readouterr().out)
    notes = [dict(zip(header, r, strict=True))["note"] for r in rows]
    assert all(n.startswith("failed: RuntimeError: knee broke") for n in notes)
    with open(tmp_path / "out" / "compare.csv", newline="") as f:
        assert [r["placed"] for r in csv.DictReader(f)] == ["", ""]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policies", "fastest"], "field --policies: unknown policy 'fastest'"),
        (["--policies", "edf"], "field --policies: 'edf' is a scheduling policy"),
        (["--policies", "average-rate:0"], "average-rate:K needs a number K > 0"),
        (["--mtu", "nan"], "argument --mtu: expected a finite number > 0"),
    ],
)
def test_compare_bad_options_exit_2_naming_the_option(
    tmp_path: Path,
    wc62_dir: Path,
    capsys: pytest.CaptureFixture,
    extra: list[str],
    message: str,
) -> None:
    tenants = tenants_file(tmp_path, wc62_dir)
    code = main(args(tenants, wc62_dir, tmp_path / "out", *extra))
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_compare_bad_tenants_file_exits_2_naming_file_and_field(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    bad = tmp_path / "tenants.json"
    bad.write_text('{"tenants": [{"name": "A", "slo_s": -1, "trace": "a.txt"}]}')
    code = main(args(bad, wc62_dir, tmp_path / "out"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and str(bad) in err and "tenants[0].slo_s" in err
    assert not (tmp_path / "out").exists()


def test_compare_missing_trace_exits_2_naming_it(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    tenants = tenants_file(tmp_path, wc62_dir)
    doc = json.loads(tenants.read_text())
    doc["tenants"][1]["trace"] = str(tmp_path / "gone.txt")
    tenants.write_text(json.dumps(doc))
    code = main(args(tenants, wc62_dir, tmp_path / "out", "--policies", "dnc"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and "gone.txt" in err and len(err.splitlines()) == 1
    assert str(tenants) in err and "tenants[1].trace" in err


def test_compare_jobs_gives_the_serial_rows(tmp_path: Path, wc62_dir: Path) -> None:
    tenants = tenants_file(tmp_path, wc62_dir)
    rows = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        extra = ("--policies", "knee,dnc", "--jobs", jobs)
        assert main(args(tenants, wc62_dir, out, *extra)) == 0
        with open(out / "compare.csv", newline="") as f:
            rows.append(
                [
                    {
                        k: r[k]
                        for k in (
                            "policy",
                            "server_model",
                            "placed",
                            "servers",
                            "bounds_exceeded",
                            "worst_ratio",
                        )
                    }
                    for r in csv.DictReader(f)
                ]
            )
    assert rows[0] == rows[1]
    assert [r["policy"] for r in rows[0]] == ["knee", "knee", "dnc"]


@pytest.mark.parametrize(
    ("which", "content", "field"),
    [
        ("--profile", '{"read": 3}', "field bandwidthTable"),
        ("--cluster", '{"servers": 3}', "field servers: unknown key"),
    ],
)
def test_compare_bad_cluster_or_profile_exits_2_naming_file_and_field(
    tmp_path: Path,
    wc62_dir: Path,
    capsys: pytest.CaptureFixture,
    which: str,
    content: str,
    field: str,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    argv = args(tenants_file(tmp_path, wc62_dir), wc62_dir, tmp_path / "out")
    argv[argv.index(which) + 1] = str(bad)
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and f"{bad}, {field}" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_compare_one_server_model_and_a_name_given_twice(
    tmp_path: Path, wc62_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    tenants = tenants_file(tmp_path, wc62_dir, hosts=False)
    extra = ("--policies", "knee,knee,average-rate:1.5", "--server-model", "reference")
    assert main(args(tenants, wc62_dir, tmp_path / "out", *extra)) == 0
    _, *rows = table_rows(capsys.readouterr().out)
    assert [r[:2] for r in rows] == [["knee", "reference"], ["average-rate:1.5", "reference"]]
    assert (tmp_path / "out" / "plans" / "place-average-rate_1.5-reference.json").is_file()


def test_left_out_says_how_many_and_the_first_reason_whole() -> None:
    from tailbound.plan import Rejection

    reason = "alone on an empty server its bound is 53.1 ms against its SLO of 50 ms " * 3
    plan = Plan("knee", 0, [], [Rejection("A", reason), Rejection("B", "fits on no server")])
    assert compare.left_out(plan) == f"2 left out; A: {reason}"
    assert compare.left_out(Plan("knee", 0, [])) == ""
    outcome = compare.Outcome(compare.Case("placement", "knee", "sound"), 2, reason=reason)
    note = table_rows(compare.table(compare.Comparison([outcome])))[1][-1]
    assert len(note) == 120 and note.endswith("…")
