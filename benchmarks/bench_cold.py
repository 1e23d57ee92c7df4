"""Cold start: ``tailbound bound`` and ``tailbound characterize`` timed as users run them.

Each measurement is a new process, start to exit (``subprocess``, wall clock), the median of
``--runs`` runs (default 7). ``bound`` is timed with an empty MMPP fit cache (a new ``--cache``
folder per run) and with the cache the previous runs filled. Tenants files are written to a
temporary folder: 16 and 62 wc62 tenants (traces 0–15 and 0–61, four tenants per host as
clients, servers on the next hosts, 1 Gb/s, SLOs 10/20/50/100 ms, no dependency groups), and the
shipped ``examples/snc-wc62.json`` (16 tenants, two dependency groups of four) with the default
search and with ``--arrival-model reference``. The reference pipeline's times are the issue's
(SNC-ConfigGen + SNC-Calculator measured end to end on this machine type by an earlier session:
0.43 s for 16 tenants, 4.7 s for 62, 137 s for the dependency scenario); they were not re-run
here (``bench_reference`` runs the reference itself side by side, given a build of it).
``characterize --exact`` on the 62 wc62 traces: storage stage, and all three stages, no
plots. The package's bytecode is compiled first (``compileall``, as ``pip install`` does): with
``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__`` every run would compile tailbound's
modules from source (~0.03 s on a quiet machine), which no installed copy does. Run:
``.venv/bin/python -m benchmarks.bench_cold [--runs N]``; ``--quick``: one run of ``bound`` on the
16 tenants and of ``characterize --exact`` on 4 traces (a few seconds; what the test suite runs).

``--baseline DIR`` also compares, in the same run, ``bound`` on 16 tenants (empty fit cache) with
a previous build: ``DIR`` is the ``python`` folder of another commit's tree with its compiled
extension in place (``git archive <commit> | tar -x -C tree``, ``cargo build --release -p
tailbound-py --target-dir t`` there, ``t/release/lib_core.so`` copied to
``tree/python/tailbound/_core.cpython-*.so``), put first on ``PYTHONPATH``. The rounds
interleave the previous build, this one, ``python -c pass`` and ``python -c "import numpy"``,
so a load that comes and goes weighs on all four alike; its table gives medians and minima.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tailbound.experiments.wc_common import find_wc62
from tailbound.tables import markdown_table

REPO = Path(__file__).resolve().parents[1]
TAILBOUND = [sys.executable, "-m", "tailbound.cli.main"]
REFERENCE_S = {"16 tenants": 0.43, "62 tenants": 4.7, "snc-wc62.json (groups)": 137.0}
SLOS = (0.01, 0.02, 0.05, 0.1)


def tenants_file(folder: Path, n: int) -> Path:
    data = find_wc62().parent
    hosts = max(4, n // 4)
    rows = []
    for i in range(n):
        client = i % hosts
        server = (client + 1 + (i // hosts) % (hosts - 1)) % hosts
        rows.append(
            {
                "name": f"T{i}",
                "slo_s": SLOS[i % 4],
                "percentile": 0.999,
                "trace": str(data / "wc62" / "traces" / f"trace{i % 62:04d}.txt"),
                "client_host": f"h{client}",
                "server_host": f"h{server}",
            }
        )
    path = folder / f"tenants-{n}.json"
    path.write_text(json.dumps({"link_bandwidth_bytes_per_s": 125e6, "tenants": rows}))
    return path


def timed(args: list[str], pythonpath: str | None = None, command: list[str] = TAILBOUND) -> float:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    start = time.perf_counter()
    done = subprocess.run(
        [*command, *args], stdout=subprocess.DEVNULL, cwd=REPO, env=env, check=False
    )
    elapsed = time.perf_counter() - start
    # 0: every tenant meets its SLO, 1: some does not (a result, e.g. T13 of the 16-tenant set);
    # anything else is a failure of the run
    if done.returncode not in (0, 1):
        raise subprocess.CalledProcessError(done.returncode, done.args)
    return elapsed


def median_of(runs: int, make_args) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    times = [timed(make_args(i)) for i in range(runs)]
    return statistics.median(times), min(times), max(times)


def compare(baseline: Path, runs: int) -> None:
    """``bound`` on 16 tenants (empty fit cache) with the build in ``baseline`` and with this
    one, interleaved with ``python -c pass`` and ``python -c "import numpy"``, ``runs`` rounds."""
    compileall.compile_dir(str(baseline / "tailbound"), quiet=1)
    names = ("previous build", "this build", "python -c pass", 'python -c "import numpy"')
    times: dict[str, list[float]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bound = ["bound", "--tenants", str(tenants_file(folder, 16))]
        python = [sys.executable, "-c"]
        for i in range(runs):
            times[names[0]].append(timed([*bound, "--cache", f"{tmp}/p{i}"], str(baseline)))
            times[names[1]].append(timed([*bound, "--cache", f"{tmp}/t{i}"]))
            times[names[2]].append(timed(["pass"], command=python))
            times[names[3]].append(timed(["import numpy"], command=python))
    rows = [
        [name, runs, f"{statistics.median(t):.3f}", f"{min(t):.3f}"] for name, t in times.items()
    ]
    previous, this = (statistics.median(times[n]) for n in names[:2])
    print(markdown_table(["16 tenants, empty fit cache", "rounds", "median s", "min s"], rows))
    print(f"\nprevious / this build (medians): {previous / this:.2f}\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument(
        "--baseline", type=Path, help="python folder of a previous build to compare bound with"
    )
    ap.add_argument("--baseline-only", action="store_true", help="only the comparison rounds")
    ap.add_argument("--quick", action="store_true", help="--runs 1, 16 tenants, 4 traces")
    args = ap.parse_args(argv or [])  # `make bench` calls main() with no arguments
    if args.quick:
        args.runs = 1
    compileall.compile_dir(str(REPO / "python" / "tailbound"), quiet=1)
    if args.baseline is not None:
        compare(args.baseline, args.runs)
        if args.baseline_only:
            return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cases = [
            ("16 tenants", [str(tenants_file(folder, 16))], []),
            ("62 tenants", [str(tenants_file(folder, 62))], []),
            ("snc-wc62.json (groups)", [str(REPO / "examples" / "snc-wc62.json")], []),
            (
                "snc-wc62.json (groups)",
                [str(REPO / "examples" / "snc-wc62.json")],
                ["--arrival-model", "reference"],
            ),
        ]
        if args.quick:
            cases = cases[:1]
        for case, (name, tenants, extra) in enumerate(cases):
            runs = args.runs if not extra else 1
            base = ["bound", "--tenants", *tenants, *extra]
            cold = median_of(runs, lambda i, b=base, c=case: [*b, "--cache", f"{tmp}/c{c}-{i}"])
            warm_dir = f"{tmp}/warm{case}"
            timed([*base, "--cache", warm_dir])
            warm = median_of(runs, lambda i, b=base, d=warm_dir: [*b, "--cache", d])
            ref = REFERENCE_S[name]
            rows.append(
                [
                    f"bound {name} {' '.join(extra) or '(default)'}",
                    runs,
                    f"{cold[0]:.3f} ({cold[1]:.3f}–{cold[2]:.3f})",
                    f"{warm[0]:.3f} ({warm[1]:.3f}–{warm[2]:.3f})",
                    f"{ref:g}",
                    f"{ref / cold[0]:.1f}",
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
        traces = sorted(str(p) for p in (find_wc62() / "traces").glob("trace*.txt"))
        if args.quick:
            traces = traces[:4]
        profile = str(find_wc62() / "profile_ssd.json")
        for label, stages in (("storage", ["--stage", "storage"]), ("3 stages", [])):
            run = ["characterize", *traces, "--profile", profile, "--exact", *stages]
            t = median_of(args.runs, lambda i, r=run: [*r, "--out", f"{tmp}/rb-{i}"])
            rows.append(
                [
                    f"characterize --exact, {len(traces)} traces, {label}",
                    args.runs,
                    f"{t[0]:.3f} ({t[1]:.3f}–{t[2]:.3f})",
                    "",
                    "",
                    "",
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
    print(
        markdown_table(
            [
                "command",
                "runs",
                "empty fit cache s, median (min–max)",
                "filled fit cache s, median (min–max)",
                "reference pipeline s (issue)",
                "reference / ours (empty cache)",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
