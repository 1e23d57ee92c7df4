"""Every benchmark's quick mode runs to the end (issue 29, "Benchmarks rot").

Nothing else runs the benchmarks, so a refactoring could break one silently (``bench_sim`` and
``bench_snc`` had crashed for days). Each ``benchmarks/bench_*.py`` — found from the folder, so
a new one cannot be forgotten — is run as ``python -m benchmarks.bench_<name> --quick`` in its
own process, as a user would, and must exit 0 with a Markdown table or a reported skip (a
baseline or tool that is absent: the reference builds, nbdkit and fio, the gateway binary). A
module without ``--quick`` fails. Each quick mode takes seconds (benchmarks/README.md, "Quick
modes", has the measured times): the whole set ~80 s on a quiet 2-core machine, ~135 s at a
load average of 13–15.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from benchmarks import run

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p.stem for p in (ROOT / "benchmarks").glob("bench_*.py"))
#: The shared data beside the project (``tests/conftest.py``'s rule): several quick modes read
#: wc62 from there, and are skipped where it is absent.
DATA_FOUND = any((p / "shared" / "data").is_dir() for p in ROOT.parents)
#: Far above any quick mode's time (≤ ~25 s on the loaded 2-core machine): a hang, not a slow run.
TIMEOUT_S = 300


def test_the_benchmarks_are_found_and_run_py_runs_the_same_set() -> None:
    assert "bench_sim" in BENCHMARKS and "bench_snc" in BENCHMARKS
    assert run.modules() == BENCHMARKS


@pytest.mark.parametrize("name", BENCHMARKS)
def test_quick_mode_exits_zero_with_a_table_or_a_reported_skip(name: str, tmp_path: Path) -> None:
    source = (ROOT / "benchmarks" / f"{name}.py").read_text()
    assert '"--quick"' in source, (
        f"benchmarks/{name}.py has no --quick mode: every benchmark needs one "
        "(small inputs, seconds; benchmarks/README.md)"
    )
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--quick"],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # what a benchmark leaves behind goes too
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    out = done.stdout + done.stderr
    if done.returncode != 0 and not DATA_FOUND and "shared/data" in out:
        pytest.skip(f"{name} needs ../shared/data, not found beside {ROOT}")
    assert done.returncode == 0, (
        f"python -m benchmarks.{name} --quick exited {done.returncode}:\n"
        f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    table = any(line.startswith("|---") for line in done.stdout.splitlines())
    assert table or "skipped" in out, f"{name} --quick printed no table and no skip:\n{out}"


def test_run_reports_a_failing_module_runs_the_others_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[tuple[str, list[str]]] = []

    def fake(name: str) -> types.SimpleNamespace:
        def main(argv: list[str]) -> int | None:
            calls.append((name, argv))
            if name.endswith("bad"):
                raise RuntimeError("broken benchmark")
            return 2 if name.endswith("two") else None

        return types.SimpleNamespace(main=main)

    names = ["bench_bad", "bench_good", "bench_two"]
    monkeypatch.setattr(run, "modules", lambda: names)
    monkeypatch.setattr(run.importlib, "import_module", fake)
    assert run.main(["--quick"]) == 1
    assert calls == [(f"benchmarks.{n}", ["--quick"]) for n in names]
    err = capsys.readouterr().err
    assert "broken benchmark" in err and "failed: bench_bad (raised), bench_two (2)" in err
    calls.clear()
    assert run.main(["good"]) == 0  # a filter, not an argument of the modules
    assert calls == [("benchmarks.bench_good", [])]
