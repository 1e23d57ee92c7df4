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
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tailbound.cli.exitcodes import Exit, epilog
from tailbound.cli.options import add_quiet, progress_disabled
from tailbound.errors import TraceFormatError
from tailbound.plotting import save_figure
from tailbound.stages import Stage

if TYPE_CHECKING:
    from tailbound.characterize import BurstinessSummary, RbCurve
    from tailbound.traces import Trace

#: Rates at which the table shows the bucket size.
TABLE_RATES = (0.2, 0.5, 1.0)


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
    parser.add_argument("traces", nargs="+", metavar="TRACE", type=Path, help="trace files")
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
    add_quiet(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Characterise every trace; returns the exit code.

    Every trace is read and characterised before anything is written, so bad input (an
    unreadable trace, two traces of one file stem, a trace of 0 s) leaves no file behind.
    """
    from tqdm import tqdm

    from tailbound.characterize import burstiness
    from tailbound.errors import ConfigError
    from tailbound.traces.readers import read_trace

    stems: dict[str, Path] = {}
    for path in args.traces:
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
    rows = []
    results = []
    for path in tqdm(
        args.traces,
        desc="characterize",
        unit="trace",
        disable=progress_disabled(args),
        file=sys.stderr,
    ):
        trace = read_trace(path, args.format)
        curves = {}
        for stage, model in models.items():
            try:
                curves[stage] = _curve(trace, model, args)
            except TraceFormatError as e:
                raise TraceFormatError(path, e.message, line=e.line, field=e.field) from None
            rows.append(_row(trace, stage, curves[stage], burstiness(trace, model)))
        results.append((path.stem, trace.name, curves))
    for stem, name, curves in results:
        for stage, curve in curves.items():
            curve.to_csv(args.out / f"{stem}.{stage.value}.rb.csv")
        if args.plot:
            _plot(curves, name, args.out / f"{stem}.rb.png")
    _print_table(rows)
    plots = f" and {len(args.traces)} plots" if args.plot else ""
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


def _curve(trace: Trace, model: object, args: argparse.Namespace) -> RbCurve:
    import numpy as np

    from tailbound.characterize import mean_rate, prune, rb_curve

    mean = mean_rate(model.tokens(trace), trace.duration)  # type: ignore[attr-defined]
    top = args.max_rate if args.exact else 1.0  # the grids end at the whole stage
    if mean >= top:
        # The curve asked for spans the rates from the mean to --max-rate: none is left when the
        # trace alone needs the whole stage (a slow --link-bandwidth or profile, or a trace that
        # is one burst), so refuse rather than write a one-point curve no rate limit can meet.
        stage = getattr(model, "stage", None)
        name = stage.value if isinstance(stage, Stage) else "the stage"
        raise TraceFormatError(
            None,
            f"its mean rate is {mean:.4g} of {name}'s capacity, not below {top:g}: the stage "
            "cannot carry this trace (check --link-bandwidth or --profile; --exact --max-rate inf "
            "draws the curve anyway)",
        )
    if args.exact:
        curve = rb_curve(trace, model, exact=True, threads=args.threads)
        if args.max_rate > curve.rates[0]:
            curve = curve.clipped(args.max_rate)
    elif args.rates is not None:
        grid = np.unique(np.linspace(mean, 1.0, args.rates)) if mean < 1.0 else np.array([mean])
        curve = rb_curve(trace, model, grid, threads=args.threads)
    else:
        curve = rb_curve(trace, model, threads=args.threads)
    if args.safety_margin != 1.0:
        curve = curve.scaled(args.safety_margin)
    if args.prune is not None:
        curve = prune(curve, args.prune)
    return curve


def _row(trace: Trace, stage: Stage, curve: RbCurve, stats: BurstinessSummary) -> list[str]:
    buckets = curve.bucket_at(list(TABLE_RATES)).tolist()
    return [
        trace.name,
        stage.value,
        str(len(trace)),
        f"{trace.duration:.1f}",
        f"{curve.mean_rate:.4g}",
        f"{stats.peak_to_mean_at(1.0):.1f}",
        f"{stats.interarrival_c2:.2f}",
        str(len(curve)),
        *("-" if b == float("inf") else f"{1e3 * b:.3g}" for b in buckets),
    ]


def _print_table(rows: list[list[str]]) -> None:
    header = [
        "trace",
        "stage",
        "requests",
        "duration_s",
        "mean_rate",
        "peak/mean@1s",
        "C2",
        "points",
        *(f"b@{r}_ms" for r in TABLE_RATES),
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    for line in [header, *rows]:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
    sys.stdout.flush()


def _plot(curves: dict[Stage, RbCurve], name: str, path: Path) -> None:
    """The curves of one trace, bucket (ms of work, log scale) against rate; written atomically."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 4), layout="constrained")
    axes = figure.add_subplot()
    for stage, curve in curves.items():
        positive = curve.buckets > 0
        axes.plot(
            curve.rates[positive],
            1e3 * curve.buckets[positive],
            marker="." if len(curve) < 50 else None,
            label=f"{stage.value} ({len(curve)} points)",
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("rate r (utilisation of the stage)")
    axes.set_ylabel("bucket b (ms of work)")
    axes.set_title(f"r-b curves of {name}")
    axes.legend()
    save_figure(figure, path, format="png", dpi=100)
