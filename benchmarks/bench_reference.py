"""The reference SNC-Meister pipeline and ``tailbound bound``, timed side by side in one run.

The reference is SNC-Meister's own code (github.com/timmyzhu/SNC-Meister): ``SNC-ConfigGen``
reads a topology (tenants, hosts, traces, SLOs, dependencies), fits each flow's MMPP from its trace
and writes a configuration; ``SNC-Calculator`` reads that configuration, assigns priorities by SLO
and writes every flow's and client's latency bound. Its code is never part of this repository,
and neither is a recipe to build it: point ``--reference DIR`` (or ``$TAILBOUND_SNC_REFERENCE``) at
a build you made outside the repository by following the reference's own README (its bundled
Eigen and jsoncpp draw warnings from today's g++, which its ``-Werror`` flag turns into errors).
``DIR`` is the checkout, its ``src/`` or a folder holding the two programs; only
``SNC-ConfigGen`` and ``SNC-Calculator`` are used. Without one the module prints how to provide
it, reports the comparison as skipped and exits with status 0 (an absent baseline is not a
failure; a ``--reference`` that holds no build is: status 2).

What is converted (``topology``; outside the timings): our tenants file becomes the reference's
topology file — per tenant ``name``, ``SLO`` (``slo_s``), ``SLOpercentile`` (``100·percentile``,
whose ``/ 100`` in the reference is our percentile or one ulp off it: ``slo_percentile``),
``clientHost``, ``serverHost`` (``server_host``), ``clientVM``/``serverVM`` (the tenant's index;
unused without ``addrPrefix``), ``dependencies`` (the other tenants of its ``group``) — and each
trace is rewritten for the reference's reader, which knows only the ops ``Get`` and ``Put``
(``DiskRead`` → ``Get``, ``DiskWrite`` → ``Put``, times and sizes unchanged: the same convention
as ours, docs/snc.md). The reference hard-codes 1 Gb/s host links, has no storage stage and no cap
on priority levels, so a tenants file with another link speed, a device or more SLO classes than
our 8 priority levels is refused.

What is timed: each command as a new process, start to exit, wall clock; cells are the median of
``--runs`` runs with the three commands interleaved in each round (the reference pipeline, then
``tailbound bound`` with the default deterministic search, then with ``--arrival-model
reference``) so that the shared machine's drift hits all three. The reference pipeline is
``SNC-ConfigGen`` then ``SNC-Calculator`` (its figure is their sum); ``tailbound bound`` gets a new
empty ``--cache`` folder in every run (its MMPP fits are part of the time, as ConfigGen's are of
the reference's) and writes its plan (``--out``), as the reference writes its output. A command
that runs longer than ``--long`` seconds is not repeated (one run); one that exceeds
``--timeout`` is stopped and reported as "> T"; where the reference pipeline timed out, ``bound
--arrival-model reference`` (our replay of its search) is not run: nothing to compare it with,
and it takes a good part of the reference's time. Scenarios: (a) 16 and 62 wc62 tenants, no groups
(``bench_cold.tenants_file``); (b) ``examples/snc-wc62.json`` (16 tenants, two dependency groups
of four, the issue's scenario); (c) ``bench_snc_groups.scenario`` at 16, 64 and 256 tenants (25%
in groups of four).

Cross-check (from the last run of each command that finished): every tenant's request-flow,
response-flow and total bound of the reference against ``tailbound bound --arrival-model
reference`` (largest relative difference). The reference sets a flow's ε from the number of the
client's flows added *so far* (``SNC.cpp``, ``SNC::initFlow``: the initialisation slip of
docs/snc.md), so its request flow gets the whole ``1 − p`` and its response flow ``(1 − p)/2``
where we (the thesis) give each ``(1 − p)/2``; ε enters only the flow's own final latency bound,
so the response flows must agree and the request flows (and totals) must not. With ``--corrected
DIR`` (or ``$TAILBOUND_SNC_REFERENCE_CORRECTED``), a second build of the reference whose
``SNC::initFlow`` re-sets every flow of the client to ``ε / (flows so far)`` as each flow is added
(so all get ``ε / 2``), its ``SNC-Calculator`` is run once more on the same configuration (ConfigGen
does not compute ε) and compared the same way (only where the stock reference finished: it costs
as much again), and the default search's bounds are compared with it too (ratio ours /
reference; ≤ 1 means never looser). What is left after the correction is floating point (~1e-13,
up to ~1e-11 for a flow): the reference computes ``ρ = log sp(diag(MGF) P) / θ`` in doubles near
1 with Eigen's general eigen-solver, which puts ~1e-10 relative error in a 10-state source's
``ρ``; ours (the Perron root of ``diag(MGF) P − I`` directly, docs/snc.md) is within ~1e-11 of
the exact value (checked with mpmath on the example's sources, benchmarks/README.md).

Run: ``.venv/bin/python -m benchmarks.bench_reference --reference /path/to/SNC-Meister
[--corrected /path/to/corrected] [--runs 5] [--timeout 300] [--long 20] [--cases ...]``, or
``--quick`` (``--cases 16 --runs 1 --timeout 60``: a few seconds with a build). All cases
together take about 25 minutes on the 2-core machine (the reference needs 150–190 s for the
example, as much again with ``--corrected``, and reaches the timeout on the three bench_snc_groups
sets); ``--cases 16 62 example`` about 8 minutes, and ``--timeout 120`` for the larger groups sets
(where the reference does not finish anyway) saves another 9.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.bench_cold import REPO, TAILBOUND, tenants_file
from benchmarks.bench_snc_groups import scenario
from tailbound.errors import ConfigError, TraceFormatError
from tailbound.jsonio import read_json, write_json_atomic
from tailbound.model import Tenant, TenantSet, load_tenants
from tailbound.snc.tenants import PRIORITY_LEVELS
from tailbound.tables import markdown_table

ENV = "TAILBOUND_SNC_REFERENCE"
ENV_CORRECTED = "TAILBOUND_SNC_REFERENCE_CORRECTED"
#: SNC-ConfigGen's hard-coded host link speed (``NETWORK_BANDWIDTH``, bytes per second).
REFERENCE_LINK_BYTES_PER_S = 125_000_000.0
#: The trace ops the reference's reader understands, from the ones our traces use.
OPS = {"DiskRead": "Get", "DiskWrite": "Put", "Get": "Get", "Put": "Put"}
PROGRAMS = ("SNC-ConfigGen", "SNC-Calculator")
CASES = ("16", "62", "example", "groups16", "groups64", "groups256")


@dataclass(frozen=True)
class Reference:
    """The two programs of a reference build."""

    configgen: Path
    calculator: Path


def find_reference(folder: str | Path) -> Reference:
    """The programs of the build at ``folder`` (the checkout, its ``src/``, or a folder holding
    both); :class:`ConfigError` saying what is missing otherwise."""
    root = Path(folder).expanduser()
    for base in (root / "src", root):
        paths = [base / p / p for p in PROGRAMS]
        if all(p.is_file() and os.access(p, os.X_OK) for p in paths):
            return Reference(*paths)
    flat = [root / p for p in PROGRAMS]
    if all(p.is_file() and os.access(p, os.X_OK) for p in flat):
        return Reference(*flat)
    raise ConfigError(
        None,
        f"no reference build at {root}: expected the executables SNC-ConfigGen and "
        "SNC-Calculator in src/<name>/<name>, <name>/<name> or directly in that folder",
    )


def slo_percentile(percentile: float) -> float:
    """The reference's ``SLOpercentile`` (0–100) for our ``percentile`` (0–1): ``100·p``. The
    reference's ``1 − SLOpercentile / 100`` is then our ``ε = 1 − p`` exactly for most
    percentiles, and one ulp of ``p`` off for some (``99.9 / 100`` is 0.9990000000000001: no
    double divides back to 0.999, its neighbours' steps being larger than 0.999's ulp; nudging
    ``100·p`` by ulps never came closer on 200,000 random ``p``), so the reference's ``ε`` may
    differ from ours by ~1e-13 relative (0.999: 9.99999999999889e-4 against 1.0000000000000009e-3).

    >>> slo_percentile(0.999), slo_percentile(0.5)
    (99.9, 50.0)
    """
    return percentile * 100


def topology(tset: TenantSet, traces: Mapping[Path, Path], output: Path) -> dict[str, Any]:
    """The reference's topology document (SNC-ConfigGen's input) for ``tset``: ``traces`` maps
    each tenant's trace to its copy in the reference's format, ``output`` is where SNC-Calculator
    writes its result (``outputConfig``). :class:`ConfigError` naming the field for what the
    reference cannot express."""
    where = tset.path
    if tset.link_bytes_per_s != REFERENCE_LINK_BYTES_PER_S:
        raise ConfigError(
            where,
            f"the reference hard-codes {REFERENCE_LINK_BYTES_PER_S:.0f} B/s host links, not "
            f"{tset.link_bytes_per_s:g}",
            field="link_bandwidth_bytes_per_s",
        )
    if len({t.slo_s for t in tset.tenants}) > PRIORITY_LEVELS:
        raise ConfigError(
            where,
            f"more than {PRIORITY_LEVELS} SLO classes: the reference gives each its own priority, "
            f"we cap them at {PRIORITY_LEVELS} levels, so the bounds would not be comparable",
            field="tenants",
        )
    groups: dict[str, list[str]] = {}
    for t in tset.tenants:
        if t.group is not None:
            groups.setdefault(t.group, []).append(t.name)
    clients = []
    for i, t in enumerate(tset.tenants):
        for key, value in (("client_host", t.client_host), ("server_host", t.server)):
            if value is None:
                raise ConfigError(where, "the reference needs it", field=f"tenants[{i}].{key}")
        if t.device is not None:
            raise ConfigError(
                where, "the reference has no storage stage", field=f"tenants[{i}].device"
            )
        client: dict[str, Any] = {
            "name": t.name,
            "SLO": t.slo_s,
            "SLOpercentile": slo_percentile(t.percentile),
            "trace": str(traces[t.trace]),
            "clientHost": t.client_host,
            "clientVM": str(i),
            "serverHost": t.server,
            "serverVM": str(i),
        }
        if t.group is not None:
            client["dependencies"] = [n for n in groups[t.group] if n != t.name]
        clients.append(client)
    return {"outputConfig": str(output), "clients": clients}


_LINE = re.compile(rb"^(\d+),(0[xX][0-9a-fA-F]+|[0-9a-fA-F]+),(\w+)\r?$")


def reference_trace(source: Path, dest: Path) -> None:
    """Write ``source`` (CSV ``arrival_ns,0xHEXSIZE,op``) to ``dest`` with the ops the reference
    reads (``Get``/``Put``); :class:`TraceFormatError` naming the line for anything else."""
    out = []
    with open(source, "rb") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip(b"\n")
            if not line.strip():
                continue
            m = _LINE.match(line)
            op = OPS.get(m.group(3).decode()) if m else None
            if m is None or op is None:
                raise TraceFormatError(
                    source,
                    "expected arrival_ns,0xHEXSIZE,DiskRead|DiskWrite|Get|Put (the reference "
                    "reads only this CSV form)",
                    line=number,
                )
            out.append(b"%s,%s,%s\n" % (m.group(1), m.group(2), op.encode()))
    dest.write_bytes(b"".join(out))


@dataclass(frozen=True)
class FlowBounds:
    """One tenant's bounds (s): request flow, response flow, total."""

    request: float
    response: float
    total: float


def reference_bounds(path: Path) -> dict[str, FlowBounds]:
    """The bounds SNC-Calculator wrote to ``path`` (its output configuration): per client its
    ``latency`` and its two flows' (``F<i>In`` the request, ``F<i>Out`` the response)."""
    doc = read_json(path, what="the reference's output")
    result = {}
    for i, c in enumerate(doc["clients"]):
        flows = {f["name"]: f["latency"] for f in c["flows"]}
        request = [v for k, v in flows.items() if k.endswith("In")]
        response = [v for k, v in flows.items() if k.endswith("Out")]
        if len(request) != 1 or len(response) != 1:
            raise ConfigError(path, "expected one In and one Out flow", field=f"clients[{i}]")
        result[c["name"]] = FlowBounds(request[0], response[0], c["latency"])
    return result


def our_bounds(plan_path: Path) -> dict[str, FlowBounds]:
    """The bounds ``tailbound bound --out`` wrote (stages ``net_in``, ``net_out``, total)."""
    from tailbound.plan import Plan

    result = {}
    for t in Plan.load(plan_path).tenants:
        stages = {str(k): v for k, v in t.bound.stages.items()}
        result[t.name] = FlowBounds(stages["net_in"], stages["net_out"], t.latency_bound_s)
    return result


def largest_difference(
    ours: Mapping[str, FlowBounds], theirs: Mapping[str, FlowBounds]
) -> FlowBounds:
    """The largest relative difference ``|ours − theirs| / theirs`` over the tenants, for
    request flows, response flows and totals (tenant names must match)."""
    if sorted(ours) != sorted(theirs):
        raise ValueError(f"tenants differ: {sorted(set(ours) ^ set(theirs))}")

    def worst(get: Callable[[FlowBounds], float]) -> float:
        return max(abs(get(ours[n]) - get(theirs[n])) / abs(get(theirs[n])) for n in theirs)

    return FlowBounds(
        worst(lambda b: b.request), worst(lambda b: b.response), worst(lambda b: b.total)
    )


def tenants_doc(tenants: Sequence[Tenant], link_bytes_per_s: float) -> dict[str, Any]:
    """A tenants file for ``tenants`` (name, SLO, trace, hosts, group)."""
    rows = []
    for t in tenants:
        row: dict[str, Any] = {
            "name": t.name,
            "slo_s": t.slo_s,
            "percentile": t.percentile,
            "trace": str(t.trace),
            "client_host": t.client_host,
            "server_host": t.server,
        }
        if t.group is not None:
            row["group"] = t.group
        rows.append(row)
    return {"link_bandwidth_bytes_per_s": link_bytes_per_s, "tenants": rows}


def scenario_file(case: str, folder: Path) -> Path:
    """Our tenants file for one of :data:`CASES`."""
    if case in ("16", "62"):
        return tenants_file(folder, int(case))
    if case == "example":
        return REPO / "examples" / "snc-wc62.json"
    n = int(case.removeprefix("groups"))
    path = folder / f"groups-{n}.json"
    write_json_atomic(path, tenants_doc(scenario(n, max(4, n // 4)), REFERENCE_LINK_BYTES_PER_S))
    return path


@dataclass
class Timing:
    """The runs of one command on one case: seconds, or ``None`` for a run stopped at the
    timeout."""

    runs: list[float | None] = field(default_factory=list)

    def done(self, runs: int, long_s: float) -> bool:
        last = self.runs[-1] if self.runs else 0.0
        return len(self.runs) >= runs or last is None or last > long_s

    def median(self) -> float | None:
        finished = [r for r in self.runs if r is not None]
        return statistics.median(finished) if finished and None not in self.runs else None

    def cell(self, timeout: float) -> str:
        if not self.runs:
            return "not run"
        m = self.median()
        if m is None:
            return f"> {timeout:g}"
        if len(self.runs) == 1:
            return f"{m:.3f}"
        finished = [r for r in self.runs if r is not None]
        return f"{m:.3f} ({min(finished):.3f}–{max(finished):.3f})"


def run_timed(cmd: list[str], timeout: float, cwd: Path) -> tuple[float | None, str]:
    """Seconds ``cmd`` took (new process, start to exit) and its stderr; ``None`` if it was
    stopped at ``timeout``. A failure (status other than 0 or 1) raises."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None, ""
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{cmd} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, done.stderr.decode()


def run_reference(
    ref: Reference, topo: Path, config: Path, output: Path, timeout: float
) -> tuple[float | None, float | None]:
    """Time SNC-ConfigGen then SNC-Calculator: (total s, ConfigGen s), ``None`` past the
    timeout. The programs exit 0 even when they fail, so their output files are checked."""
    for p in (config, output):
        p.unlink(missing_ok=True)
    gen, err = run_timed(
        [str(ref.configgen), "-t", str(topo), "-c", str(config)], timeout, topo.parent
    )
    if gen is None:
        return None, None
    if not config.is_file() or err.strip():
        raise RuntimeError(f"SNC-ConfigGen wrote no configuration: {err[-2000:]}")
    calc, err = run_timed([str(ref.calculator), "-c", str(config)], timeout - gen, topo.parent)
    if calc is None:
        return None, gen
    if not output.is_file() or err.strip():
        raise RuntimeError(f"SNC-Calculator wrote no output: {err[-2000:]}")
    return gen + calc, gen


def diff_cells(
    ours: Mapping[str, FlowBounds] | None, theirs: Mapping[str, FlowBounds] | None
) -> list[str]:
    """Request, response and total cells of the largest relative differences ("-" without
    both sets of bounds)."""
    if not ours or not theirs:
        return ["-", "-", "-"]
    d = largest_difference(ours, theirs)
    return [f"{d.request:.1e}", f"{d.response:.1e}", f"{d.total:.1e}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--reference", default=os.environ.get(ENV), help=f"reference build (${ENV})")
    ap.add_argument(
        "--corrected",
        default=os.environ.get(ENV_CORRECTED),
        help=f"a reference build with the ε slip corrected, for the cross-check (${ENV_CORRECTED})",
    )
    ap.add_argument("--runs", type=int, default=5, help="runs per command (median), default 5")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run, default 300")
    ap.add_argument(
        "--long", type=float, default=20.0, help="a run longer than this is not repeated (20 s)"
    )
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    ap.add_argument("--quick", action="store_true", help="--cases 16 --runs 1 --timeout 60")
    args = ap.parse_args(argv or [])  # `make bench` calls main() with no arguments
    if args.quick:
        args.cases, args.runs, args.timeout = ["16"], 1, 60.0
    if not args.reference:
        print(
            "bench_reference skipped: no reference build given. Build SNC-Meister's "
            "SNC-ConfigGen and SNC-Calculator (github.com/timmyzhu/SNC-Meister; its README) "
            f"outside this repository and pass --reference DIR or set ${ENV} (see the module's "
            "docstring).",
            file=sys.stderr,
        )
        return 0
    try:
        ref = find_reference(args.reference)
        corrected = find_reference(args.corrected) if args.corrected else None
    except ConfigError as e:
        print(f"bench_reference: {e}", file=sys.stderr)
        return 2
    compileall.compile_dir(str(REPO / "python" / "tailbound"), quiet=1)
    started = datetime.now(UTC)
    loads: list[float] = []
    rows, checks = [], []
    with tempfile.TemporaryDirectory(prefix="bench-reference-") as tmp:
        folder = Path(tmp)
        converted: dict[Path, Path] = {}
        for case in args.cases:
            tenants = scenario_file(case, folder)
            tset = load_tenants(tenants)
            for t in tset.tenants:
                if t.trace not in converted:
                    dest = folder / "traces" / f"{len(converted):04d}-{t.trace.name}"
                    dest.parent.mkdir(exist_ok=True)
                    reference_trace(t.trace, dest)
                    converted[t.trace] = dest
            work = folder / case
            work.mkdir()
            output = work / "reference-output.json"
            topo = work / "topology.json"
            write_json_atomic(topo, topology(tset, converted, output))
            config = work / "config.json"
            timings = {k: Timing() for k in ("reference", "default", "reference-search")}
            configgen: list[float] = []
            kept: dict[str, dict[str, FlowBounds]] = {}
            case_loads = []
            for r in range(args.runs):
                case_loads.append(os.getloadavg()[0])
                t_ref = timings["reference"]
                if not t_ref.done(args.runs, args.long):
                    total, gen = run_reference(ref, topo, config, output, args.timeout)
                    t_ref.runs.append(total)
                    if gen is not None:
                        configgen.append(gen)
                    if total is not None:
                        kept["reference"] = reference_bounds(output)
                for key, extra in (
                    ("default", []),
                    ("reference-search", ["--arrival-model", "reference"]),
                ):
                    timing = timings[key]
                    # our replay of the reference's search is skipped where the reference itself
                    # timed out: nothing to compare its bounds with, and it would time out too
                    if timing.done(args.runs, args.long) or (
                        key == "reference-search" and None in t_ref.runs
                    ):
                        continue
                    plan = work / f"plan-{key}.json"
                    cmd = [*TAILBOUND, "bound", "--tenants", str(tenants), *extra]
                    cmd += ["--cache", str(work / f"cache-{key}-{r}"), "--out", str(plan)]
                    elapsed, _ = run_timed(cmd, args.timeout, REPO)
                    timing.runs.append(elapsed)
                    if elapsed is not None:
                        kept[key] = our_bounds(plan)
                print(case, {k: v.runs for k, v in timings.items()}, file=sys.stderr, flush=True)
            loads += case_loads
            ref_s = timings["reference"].median()
            cells = []
            for key in ("default", "reference-search"):
                ours = timings[key].median()
                cells.append(timings[key].cell(args.timeout))
                if ref_s is not None and ours is not None:
                    cells.append(f"{ref_s / ours:.1f}")
                elif ref_s is None and ours is not None:
                    cells.append(f"> {args.timeout / ours:.1f}")
                else:
                    cells.append("-")
            rows.append(
                [
                    case_label(case),
                    len(tset.tenants),
                    max(len(timings[k].runs) for k in timings),
                    timings["reference"].cell(args.timeout),
                    f"{statistics.median(configgen):.3f}" if configgen else "-",
                    *cells,
                    f"{min(case_loads):.1f}–{max(case_loads):.1f}",
                ]
            )
            checks.append(cross_check(case, kept, corrected, config, output, args.timeout))
    print(
        f"\n{started:%Y-%m-%d %H:%M}–{datetime.now(UTC):%H:%M} UTC, load average (1 min) "
        f"{min(loads):.1f}–{max(loads):.1f}, {os.cpu_count()} cores\n"
    )
    print(
        markdown_table(
            [
                "scenario",
                "tenants",
                "runs",
                "reference pipeline s",
                "of which ConfigGen s",
                "tailbound bound s",
                "reference / ours",
                "bound --arrival-model reference s",
                "reference / ours",
                "load",
            ],
            rows,
        )
    )
    print()
    print(
        markdown_table(
            [
                "scenario",
                "reference vs ours (--arrival-model reference): request flows",
                "response flows",
                "totals",
                "corrected reference vs ours: request",
                "response",
                "totals",
                "default search / corrected reference, min / max",
            ],
            checks,
        )
    )
    return 0


def case_label(case: str) -> str:
    if case in ("16", "62"):
        return f"{case} wc62 tenants, no groups"
    if case == "example":
        return "examples/snc-wc62.json (2 groups of 4)"
    return f"bench_snc_groups {case.removeprefix('groups')} (25% in groups)"


def cross_check(
    case: str,
    kept: Mapping[str, Mapping[str, FlowBounds]],
    corrected: Reference | None,
    config: Path,
    output: Path,
    timeout: float,
) -> list[str]:
    """One row of the cross-check table (largest relative differences)."""
    ours = kept.get("reference-search")
    stock = kept.get("reference")
    row = [case_label(case)]
    row += diff_cells(ours, stock)
    fixed = None
    # only where the stock reference finished: it costs as much again
    if corrected is not None and stock is not None and config.is_file():
        mine = config.with_name("config-corrected.json")
        doc = read_json(config, what="the reference's configuration")
        doc["outputConfig"] = str(output.with_name("corrected-output.json"))
        write_json_atomic(mine, doc)
        elapsed, _ = run_timed([str(corrected.calculator), "-c", str(mine)], timeout, config.parent)
        if elapsed is not None:
            fixed = reference_bounds(Path(doc["outputConfig"]))
    row += diff_cells(ours, fixed)
    default = kept.get("default")
    if default and fixed:
        ratios = [default[n].total / fixed[n].total for n in fixed]
        row.append(f"{min(ratios):.6f} / {max(ratios):.10f}")
    else:
        row.append("-")
    return row


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
