"""``tailbound simulate SCENARIO``: replay a scenario's workloads through the simulator, print a
per-workload table (SLO, achieved percentile, met) and write a tail-latency plot."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from tailbound.cli.exitcodes import epilog, outcome
from tailbound.cli.options import add_quiet, number, progress, progress_disabled

#: The legend of the table ``simulate`` prints (in ``--help``).
COLUMNS = (
    ("SLO", "the workload's latency target at its percentile (- without one)"),
    ("achieved", "its latency at the SLO's percentile over the whole run"),
    ("met", "achieved is not above the SLO"),
    ("worst W s window", "the worst such percentile over sliding windows of --window-s"),
    ("p50, p99.9, max", "latency percentiles over the whole run"),
    ("requests", "requests finished"),
)


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="replay a scenario (topology, workloads, schedulers) and check its SLOs",
        description=__doc__,
        epilog=epilog("a workload missed its SLO", COLUMNS),
    )
    parser.add_argument("scenario", type=Path, help="scenario file (.toml or .json)")
    parser.add_argument(
        "--plot", type=Path, default=None, help="tail-latency plot (default: SCENARIO stem + .png)"
    )
    parser.add_argument("--no-plot", action="store_true", help="do not write the plot")
    parser.add_argument(
        "--window-s",
        type=number(low=0.0, low_open=True),
        default=180.0,
        metavar="SECONDS",
        help="sliding window of the worst-window column, in seconds (default 180)",
    )
    parser.add_argument(
        "--until",
        type=number(low=0.0),
        default=None,
        metavar="SECONDS",
        help="stop at this simulated time, in seconds (default: the scenario's duration_s)",
    )
    add_quiet(parser)
    parser.set_defaults(run=run)


#: Steps of a progress bar over simulated time (each a ``run(until)`` of the simulator).
PROGRESS_STEPS = 100


def run_simulation(sim: Any, scenario: Any, until: float, args: argparse.Namespace) -> None:
    """Run ``sim`` to ``until`` (seconds; may be infinite), with a bar over simulated time on
    stderr unless :func:`progress_disabled`. The bar runs to ``until``, or when that is infinite
    to the last arrival of any workload; the simulator is run in steps up to it, then to
    ``until``: stopping at a time and going on processes the same events as one run."""
    arrivals = [float(w.trace.time[-1]) for w in scenario.workloads if len(w.trace.time)]
    end = until if math.isfinite(until) else max(arrivals, default=0.0)
    if progress_disabled(args) or not end > 0:
        sim.run(until)
        return
    with progress(args, total=end, desc="simulated", unit="s", bar_format=_BAR) as bar:
        for step in range(1, PROGRESS_STEPS + 1):
            now = end * step / PROGRESS_STEPS if step < PROGRESS_STEPS else end
            sim.run(now)
            bar.n = now  # set, not summed: the bar ends at its total exactly
            bar.refresh()
        sim.run(until)


_BAR = "{desc}: {percentage:3.0f}%|{bar}| {n:.3g}/{total:.3g} s [{elapsed}<{remaining}]"


def run(args: argparse.Namespace) -> int:
    import time

    from tailbound.sim import Scenario
    from tailbound.sim.plot import plot_tail

    scenario = Scenario.load(args.scenario)
    sim = scenario.simulator()
    start = time.perf_counter()
    run_simulation(
        sim, scenario, args.until if args.until is not None else scenario.duration_s, args
    )
    wall = time.perf_counter() - start
    results = sim.results()
    print(results.table(args.window_s))
    print(f"\n{results.events} events in {wall:.3f} s ({results.events / max(wall, 1e-9):,.0f}/s)")
    if not args.no_plot:
        out = args.plot or args.scenario.with_suffix(".png")
        print(f"plot: {plot_tail(results, out)}")
    return outcome(w.slo_met is not False for w in results.workloads)
