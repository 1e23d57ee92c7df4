"""``tailbound characterize``: r-b curves and burstiness statistics of trace files.

For every trace and stage it prints a table row (requests, duration, mean rate, peak-to-mean
ratio at 1 s, C² of inter-arrival times, bucket sizes at a few rates), writes the r-b curve to
``DIR/<trace-stem>.<stage>.rb.csv`` (header ``rate,bucket_s``: rates as utilisations of the stage,
buckets in seconds of work, sorted by rate) and, with ``--plot``, plots the trace's curves to
``DIR/<trace-stem>.rb.png`` (plots are for people and cost ~0.9 s each: drawn only when asked).

Rates: the WorkloadCompactor grid by default (1.0 down to the mean rate in steps of 0.001);
``--rates N``: N rates evenly spaced from the mean rate to 1.0 (both included); ``--exact``: the
exact curve (every breakpoint), ended at ``--max-rate`` (default 1.0: the exact curve's peak rate
can be far above what a stage can grant; holding ``b(1.0)`` beyond is safe).
``--safety-margin X`` scales each curve by X (work × X) and ``--prune K`` then keeps at most K
segments, never below the curve.

A folder of traces, ``--list FILE``, ``--jobs N`` or a Dask scheduler (``--scheduler``,
``$DASK_SCHEDULER_ADDRESS``) make a *fleet run* (:mod:`tailbound.cli.characterize_fleet`): the
traces are characterised in parallel, each trace's curves and a manifest ``<stem>.rb.json`` are
written as it finishes, and a rerun skips the traces whose content hash and options match their
manifest (docs/scale-out.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.cli.characterize_curves import (
    curve_of,
    plot_curves,
    print_table,
    row_of,
)
from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.options import add_executor, add_quiet, progress_disabled
from tailbound.errors import TraceFormatError
from tailbound.stages import Stage

if TYPE_CHECKING:
    pass


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _positive_or_inf(text: str) -> float:
    if text.strip().lower() in ("inf", "infinity"):
        return float("inf")
    return _positive_float(text)


#: The legend of the table ``characterize`` prints (in ``--help``).
COLUMNS = (
    ("duration_s", "the trace's span, first to last request"),
    ("mean_rate", "its mean work as a fraction of the stage's capacity"),
    ("peak/mean@1s", "its busiest second's work over the mean"),
    ("C2", "squared coefficient of variation of the inter-arrival times"),
    ("points", "points of the r-b curve written"),
    ("b@R_ms", "bucket at rate R, in ms of the stage's work (- when R is below the mean)"),
)


def add_parser(subparsers: Any) -> None:
    """Register the ``characterize`` verb."""
    parser = subparsers.add_parser(
        "characterize",
        help="r-b curves and burstiness statistics of traces",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
        epilog=epilog(None, COLUMNS),
    )
    parser.add_argument(
        "traces",
        nargs="*",
        metavar="TRACE",
        type=Path,
        help="trace files, or folders of trace files (a folder makes a fleet run, below)",
    )
    parser.add_argument(
        "--list",
        type=Path,
        metavar="FILE",
        help="also the traces named in FILE, one path a line (a fleet run)",
    )
    parser.add_argument(
        "--stage",
        action="append",
        choices=[s.value for s in Stage],
        help="stage to characterise; repeat for several "
        "(default: net_in and net_out, and storage when --profile is given)",
    )
    parser.add_argument("--profile", type=Path, metavar="FILE", help="SSD profile JSON")
    parser.add_argument(
        "--link-bandwidth",
        type=_positive_float,
        default=125_000_000.0,
        metavar="BYTES_PER_S",
        help="network link bandwidth (default 125000000, 1 Gb/s)",
    )
    rates = parser.add_mutually_exclusive_group()
    rates.add_argument(
        "--rates",
        type=_positive_int,
        metavar="N",
        help="N rates evenly spaced from the mean rate to 1.0 (default: the WorkloadCompactor "
        "grid, 1.0 down to the mean in steps of 0.001)",
    )
    rates.add_argument("--exact", action="store_true", help="the exact curve, every breakpoint")
    parser.add_argument(
        "--max-rate",
        type=_positive_or_inf,
        default=1.0,
        metavar="R",
        help="end exact curves at rate R, holding b(R) above it (default 1.0, the whole stage; "
        "'inf' keeps every breakpoint up to the peak rate)",
    )
    parser.add_argument("--prune", type=_positive_int, metavar="K", help="keep at most K segments")
    parser.add_argument(
        "--safety-margin",
        type=_positive_float,
        default=1.0,
        metavar="X",
        help="scale the curves by X (WorkloadCompactor used 1.1; default 1)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("rb-curves"), metavar="DIR", help="output folder"
    )
    parser.add_argument(
        "--format", default=None, help="trace format (default: detected from the file)"
    )
    parser.add_argument(
        "--threads", type=_positive_int, default=1, help="threads for rbGen (default 1)"
    )
    parser.add_argument(
        "--plot",
        action="store_true",
        help="also draw each trace's curves as <trace>.rb.png (~0.9 s per trace; off by default)",
    )
    add_executor(parser, "traces")
    add_quiet(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Characterise every trace; returns the exit code.

    Every trace is read and characterised before anything is written, so bad input (an
    unreadable trace, two traces of one file stem, a trace of 0 s) leaves no file behind.
    """
    from tqdm import tqdm

    from tailbound.characterize import burstiness
    from tailbound.cli.characterize_fleet import is_fleet, run_fleet, trace_paths
    from tailbound.errors import ConfigError
    from tailbound.traces.readers import read_trace

    if not args.traces and args.list is None:
        raise ConfigError(None, "give trace files, folders of them, or --list FILE", field="TRACE")
    paths = trace_paths(args)
    stems: dict[str, Path] = {}
    for path in paths:
        if path.stem in stems:
            raise ConfigError(
                path,
                f"has the file stem {path.stem!r} of {stems[path.stem]}: both would write "
                f"{path.stem}.<stage>.rb.csv; rename one",
            )
        stems[path.stem] = path
    if args.out.exists() and not args.out.is_dir():
        raise ConfigError(args.out, "--out must be a folder, and this is a file")
    models = _models(args)
    if is_fleet(args):
        return run_fleet(args, paths, models)
    rows = []
    results = []
    for path in tqdm(
        paths,
        desc="characterize",
        unit="trace",
        disable=progress_disabled(args),
        file=sys.stderr,
    ):
        trace = read_trace(path, args.format)
        curves = {}
        for stage, model in models.items():
            try:
                curves[stage] = curve_of(trace, model, args)
            except TraceFormatError as e:
                raise TraceFormatError(path, e.message, line=e.line, field=e.field) from None
            rows.append(row_of(trace, stage, curves[stage], burstiness(trace, model)))
        results.append((path.stem, trace.name, curves))
    for stem, name, curves in results:
        for stage, curve in curves.items():
            curve.to_csv(args.out / f"{stem}.{stage.value}.rb.csv")
        if args.plot:
            plot_curves(curves, name, args.out / f"{stem}.rb.png")
    print_table(rows)
    plots = f" and {len(paths)} plots" if args.plot else ""
    print(f"wrote {len(rows)} curves{plots} to {args.out}")
    return Exit.OK


def _models(args: argparse.Namespace) -> dict[Stage, object]:
    from tailbound.profiles import SsdProfile, stage_model

    profile = SsdProfile.load(args.profile) if args.profile is not None else None
    if args.stage:
        stages = [Stage(s) for s in dict.fromkeys(args.stage)]
    else:
        stages = [Stage.NET_IN, Stage.NET_OUT] + ([Stage.STORAGE] if profile else [])
    return {
        stage: stage_model(stage, link_bandwidth_bytes_per_s=args.link_bandwidth, profile=profile)
        for stage in stages
    }
